// Licensed under the Apache License, Version 2.0 (see LICENSE).
//
// controls_browser.mjs: the console's incident controls page in a real
// browser, for t/console/controls_browser.t.  Headless Debian Chromium,
// driven by playwright-core (t/sdk/node_modules), with the operator's
// Basic credentials:
//   1. a page of ANOTHER origin (served here, on a port of its own)
//      tries to set a control through the operator's browser: a fetch
//      with credentials and a form POST;
//   2. the controls page sets a maintenance control with its form;
//   3. its Lift button lifts it.
// It prints one JSON object per step, with what the page showed, the
// console errors and CSP violations seen, and the screenshot's path.
// Nothing is judged here: the .t file does that (against the API).
//
// Environment: AURA_CTL_URL (the controls page), AURA_CTL_USER,
// AURA_CTL_PASSWORD, AURA_CTL_TARGET (the maintenance path),
// AURA_CTL_SHOT, AURA_CTL_CHROMIUM, AURA_SDK_DIR,
// AURA_CTL_TIMEOUT_MS (each wait, default 20000: never a timing
// assertion).
import { createRequire } from 'node:module';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const env = process.env;
const require = createRequire(join(env.AURA_SDK_DIR, 'package.json'));
const { chromium } = require('playwright-core');
const waitMs = Number(env.AURA_CTL_TIMEOUT_MS || 20000);
const api = new URL('api/controls', env.AURA_CTL_URL).href;

function print(o) {
    process.stdout.write(JSON.stringify(o) + '\n');
}

// The attacker's page: another origin (another port), which the
// operator's browser visits while signed in to the console.
function evilPage() {
    const body = JSON.stringify({ kind: 'block', target: 'addr:192.0.2.66',
                                  ttl: '60s', reason: 'csrf' });
    return `<!DOCTYPE html><html><body>
<form id="f" method="POST" action="${api}" enctype="text/plain">
<input name='{"kind":"block","target":"addr:192.0.2.67","ttl":"60s","x":"' value='"}'>
</form>
<script>
window.results = {};
fetch(${JSON.stringify(api)}, { method: 'POST', credentials: 'include',
      mode: 'no-cors', headers: { 'Content-Type': 'text/plain' },
      body: ${JSON.stringify(body)} })
  .then(() => { window.results.fetch = 'sent'; },
        (e) => { window.results.fetch = 'failed ' + e; });
fetch(${JSON.stringify(api)}, { method: 'POST', credentials: 'include',
      headers: { 'Content-Type': 'application/json', 'X-Aura-CSRF': '1' },
      body: ${JSON.stringify(body)} })
  .then((r) => { window.results.cors = 'answered ' + r.status; },
        (e) => { window.results.cors = 'blocked'; });
</script></body></html>`;
}

const home = mkdtempSync(join(tmpdir(), 'aura-ctl-chromium-'));
const evil = createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html' });
    res.end(evilPage());
});
await new Promise((ok) => evil.listen(0, '127.0.0.1', ok));
const evilUrl = `http://127.0.0.1:${evil.address().port}/`;
let b;
try {
    b = await chromium.launch({
        executablePath: env.AURA_CTL_CHROMIUM,
        headless: true,
        timeout: 60000,
        env: { ...env, HOME: home },
        args: ['--no-sandbox', '--disable-gpu', '--disable-quic',
               '--no-first-run', '--disable-background-networking',
               '--disable-component-update', '--disable-sync'],
    });
    // The credentials are sent to any origin that asks (send: always):
    // the worst case, a browser that has them for the console's host.
    const ctx = await b.newContext({
        httpCredentials: { username: env.AURA_CTL_USER,
                           password: env.AURA_CTL_PASSWORD,
                           send: 'always' },
        viewport: { width: 1366, height: 768 },
    });
    await ctx.addInitScript(() => {
        window.__csp = [];
        document.addEventListener('securitypolicyviolation', (e) => {
            window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`);
        });
    });

    // 1. The other origin.
    const ep = await ctx.newPage();
    await ep.goto(evilUrl, { timeout: waitMs });
    await ep.waitForFunction(() => window.results.fetch && window.results.cors,
                             null, { timeout: waitMs });
    const evilResults = await ep.evaluate(() => window.results);
    // And the form, which navigates to the console's API.
    const nav = ep.waitForNavigation({ timeout: waitMs }).catch(() => null);
    await ep.evaluate(() => document.getElementById('f').submit());
    const formRes = await nav;
    print({ step: 'evil', ok: true, ...evilResults,
            form: formRes ? formRes.status() : null });
    await ep.close();

    // 2. The console's own page sets a control with its form.
    const p = await ctx.newPage();
    const errors = [];
    p.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    p.on('pageerror', (e) => errors.push(String(e)));
    const res = await p.goto(env.AURA_CTL_URL, { timeout: waitMs });
    await p.selectOption('select[name=kind]', 'maintenance');
    await p.fill('input[name=target]', env.AURA_CTL_TARGET);
    await p.fill('input[name=value]', '30');
    await p.fill('input[name=ttl]', '5m');
    await p.fill('input[name=reason]', 'set from Chromium');
    await Promise.all([
        p.waitForNavigation({ timeout: waitMs }),
        p.click('form#add button[type=submit]'),
    ]);
    const rows = () => p.evaluate(() =>
        [...document.querySelectorAll('tbody tr')].map((tr) => ({
            cells: [...tr.children].map((td) => td.textContent.trim()),
            lift: tr.querySelector('button[data-lift]')
                  ? tr.querySelector('button[data-lift]')
                      .getAttribute('data-lift') : null,
        })));
    const afterSet = await rows();
    await p.screenshot({ path: env.AURA_CTL_SHOT, fullPage: true });
    const status = await p.evaluate(
        () => document.getElementById('status').textContent);
    print({ step: 'set', ok: true, status: res.status(), rows: afterSet,
            said: status, browser: b.version() });

    // 3. Its Lift button.
    const mine = afterSet.find((r) => r.cells[1] === env.AURA_CTL_TARGET
                                      && r.lift);
    if (mine) {
        await Promise.all([
            p.waitForNavigation({ timeout: waitMs }),
            p.click(`button[data-lift="${mine.lift}"]`),
        ]);
    }
    print({ step: 'lift', ok: !!mine, rows: await rows(), errors,
            csp: await p.evaluate(() => window.__csp),
            shot: env.AURA_CTL_SHOT });
}
catch (e) {
    print({ step: 'thrown', ok: false, thrown: String(e && e.stack || e) });
}
finally {
    if (b) {
        await b.close().catch(() => {});
    }
    evil.close();
    rmSync(home, { recursive: true, force: true });
}
