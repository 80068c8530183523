// Licensed under the Apache License, Version 2.0 (see LICENSE).
//
// supabase_check.mjs: the stock supabase-js v2 client (package.json pins
// it) against the test server's data plane, at the SDK path layout
// (conf/aura-sdk-routes.conf).  Run by t/sdk/supabase.t, which
// asserts on what this prints: one JSON object per line, {"check": name,
// ...what the SDK returned}, the first one naming the versions.  Nothing
// is judged here: the .t file does that, with the service's execution
// counts and the upstream's log.
//
// Environment: AURA_SDK_URL (the data plane, http://127.0.0.1:port),
// AURA_SDK_ANON, AURA_SDK_SERVICE (keys), AURA_SDK_USER (a user token),
// AURA_SDK_RID (request id prefix: each check sends <prefix>-<check> as
// X-Request-Id), AURA_SDK_CHROMIUM (the browser for the CORS check;
// unset: no browser check), AURA_SDK_TIMEOUT_MS (each wait, default
// 20000: generous for a loaded machine, never a timing assertion).
import { createRequire } from 'node:module';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '@supabase/supabase-js';
import WebSocket from 'ws';

const require = createRequire(import.meta.url);
const env = process.env;
const url = env.AURA_SDK_URL;
const rid = env.AURA_SDK_RID || 'sdk';
const waitMs = Number(env.AURA_SDK_TIMEOUT_MS || 20000);

function print(o) {
    process.stdout.write(JSON.stringify(o) + '\n');
}

function version(pkg) {
    return require(`${pkg}/package.json`).version;
}

// A client as an application on Node 20 makes one: the realtime client
// is made with every client, and Node 20 has no WebSocket of its own,
// so the ws package is its transport.  Plus the request id the test
// counts executions by (global headers: sent on every call).
function client(key, check, extra = {}, headers = {}) {
    return createClient(url, key, {
        ...extra,
        realtime: { transport: WebSocket },
        global: { headers: { 'X-Request-Id': `${rid}-${check}`,
                             ...headers } },
        auth: { persistSession: false, autoRefreshToken: false },
    });
}

// What an SDK call gave: data, or the error and the HTTP status in it.
async function outcome(check, p) {
    try {
        const { data, error } = await p;
        if (error) {
            const res = error.context;
            let body = null;
            if (res && typeof res.text === 'function') {
                body = await res.text().catch(() => null);
            }
            return { check, ok: false, error: String(error.message || error),
                     status: res && res.status, body };
        }
        return { check, ok: true, data };
    }
    catch (e) {
        return { check, ok: false, thrown: String(e && e.stack || e) };
    }
}

async function until(cond, ms) {
    const end = Date.now() + ms;
    while (Date.now() < end) {
        if (cond()) {
            return true;
        }
        await new Promise((r) => setTimeout(r, 50));
    }
    return cond();
}

// Each function call asks the example service for the headers it got.
const echoHeaders = { 'x-example-headers': 'json' };

async function functions() {
    // 1. Anonymous: the SDK sends apikey and "Authorization: Bearer
    //    <anon key>" (no session): issue #30's 401.
    print(await outcome('anon-function',
        client(env.AURA_SDK_ANON, 'anon-function').functions.invoke('hello',
            { body: { n: 1 }, headers: echoHeaders })));
    // 2. A signed-in user: its token through the accessToken option.
    print(await outcome('user-function',
        client(env.AURA_SDK_ANON, 'user-function',
            { accessToken: async () => env.AURA_SDK_USER })
            .functions.invoke('hello', { body: { n: 2 },
                                         headers: echoHeaders })));
    // 3. The service_role key, as a server would use it.
    print(await outcome('service-function',
        client(env.AURA_SDK_SERVICE, 'service-function').functions.invoke(
            'hello', { body: { n: 3 }, headers: echoHeaders })));
}

async function storage() {
    // 4. A download: GET /storage/v1/object/<bucket>/<path>, which the
    //    test upstream answers with 64 bytes of its pattern.
    const r = await outcome('anon-storage',
        client(env.AURA_SDK_ANON, 'anon-storage').storage.from('sdk-bucket')
            .download('download/64'));
    if (r.ok) {
        const bytes = new Uint8Array(await r.data.arrayBuffer());
        r.data = { size: bytes.length,
                   pattern: bytes.every((b, i) => b === ((i * 31 + 7) & 0xff)) };
    }
    print(r);
}

async function rest() {
    // 5. supabase.from(): /rest/v1/<table>, the db route.
    const sb = client(env.AURA_SDK_ANON, 'anon-rest', {}, echoHeaders);
    print(await outcome('anon-rest', sb.from('todos').select('id')));
}

async function realtime() {
    // 6. The realtime socket, over the ws package (Node 20 has no
    //    WebSocket of its own).  The SDK puts the key in the URL.
    const sb = client(env.AURA_SDK_ANON, 'realtime');
    const rt = sb.realtime;
    rt.connect();
    const open = await until(() => rt.isConnected(), waitMs);
    print({ check: 'realtime', ok: open, state: rt.connectionState(),
            endpoint: rt.endpointURL().replace(/apikey=[^&]*/, 'apikey=KEY') });
    await sb.removeAllChannels();
    rt.disconnect();
}

// 7. CORS from a real browser: a page of another origin (this static
//    server, its own port) loads the SDK's browser bundle and calls the
//    function anonymously; the page writes what it got into its DOM.
async function browser() {
    const { chromium } = await import('playwright-core');
    const bundle = readFileSync(
        require.resolve('@supabase/supabase-js/dist/umd/supabase.js'));
    const page = `<!doctype html><meta charset="utf-8"><title>sdk</title>
<pre id="out"></pre>
<script src="/supabase.js"></script>
<script>
(async () => {
  const out = document.getElementById('out');
  try {
    const sb = supabase.createClient(${JSON.stringify(url)},
      ${JSON.stringify(env.AURA_SDK_ANON)},
      { global: { headers: { 'X-Request-Id': ${JSON.stringify(rid + '-browser')} } },
        auth: { persistSession: false, autoRefreshToken: false } });
    const { data, error } = await sb.functions.invoke('hello',
      { body: { from: 'browser' } });
    out.textContent = JSON.stringify({ ok: !error, data,
      error: error ? String(error.message) : null,
      status: error && error.context ? error.context.status : null,
      origin: location.origin });
  } catch (e) {
    out.textContent = JSON.stringify({ ok: false, thrown: String(e) });
  }
  out.setAttribute('data-done', '1');
})();
</script>`;
    const server = createServer((req, res) => {
        if (req.url === '/supabase.js') {
            res.writeHead(200, { 'Content-Type': 'text/javascript' });
            res.end(bundle);
        }
        else {
            res.writeHead(200, { 'Content-Type': 'text/html' });
            res.end(page);
        }
    });
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    const origin = `http://127.0.0.1:${server.address().port}`;
    const home = mkdtempSync(join(tmpdir(), 'aura-sdk-chromium-'));
    let b;
    try {
        b = await chromium.launch({
            executablePath: env.AURA_SDK_CHROMIUM,
            headless: true,
            timeout: 60000,
            env: { ...env, HOME: home },
            args: ['--no-sandbox', '--disable-gpu', '--disable-quic',
                   '--no-first-run', '--disable-background-networking',
                   '--disable-component-update', '--disable-sync'],
        });
        const ctx = await b.newContext();
        const p = await ctx.newPage();
        const seen = [];
        p.on('response', (res) => {
            if (res.url().startsWith(url)) {
                seen.push({ method: res.request().method(),
                            status: res.status(),
                            acao: res.headers()['access-control-allow-origin']
                                  || null });
            }
        });
        await p.goto(`${origin}/`, { timeout: waitMs });
        await p.waitForSelector('#out[data-done]', { timeout: waitMs });
        const got = JSON.parse(await p.textContent('#out'));
        print({ check: 'browser', page_origin: origin, responses: seen,
                browser: b.version(), ...got });
    }
    catch (e) {
        print({ check: 'browser', ok: false, thrown: String(e && e.stack || e) });
    }
    finally {
        if (b) {
            await b.close().catch(() => {});
        }
        server.close();
        rmSync(home, { recursive: true, force: true });
    }
}

print({ check: 'versions', node: process.version,
        'supabase-js': version('@supabase/supabase-js'),
        'realtime-js': version('@supabase/realtime-js'),
        ws: version('ws'), 'playwright-core': version('playwright-core') });
await functions();
await storage();
await rest();
await realtime();
if (env.AURA_SDK_CHROMIUM) {
    await browser();
}
process.exit(0);
