// Licensed under the Apache License, Version 2.0 (see LICENSE).
//
// fleet_browser.mjs: the console's fleet page in a real browser, for
// t/console/fleet_browser.t.  Headless Debian Chromium, driven by
// playwright-core (t/sdk/node_modules, installed by build/install-deps),
// loads the page with the operator's Basic credentials on a laptop-sized
// viewport, waits until its script has refreshed the page at least
// once, and prints one JSON object: what the page shows (each card's
// instance, state and breakers; the recent changes), whether the style
// applied, the console errors and CSP violations seen, and where the
// screenshot went.  Nothing is judged here: the .t file does that.
//
// Environment: AURA_FLEET_URL (the page), AURA_FLEET_USER,
// AURA_FLEET_PASSWORD, AURA_FLEET_SHOT (the screenshot's path),
// AURA_FLEET_CHROMIUM, AURA_SDK_DIR (where playwright-core is),
// AURA_FLEET_TIMEOUT_MS (each wait, default 20000: generous, never a
// timing assertion).
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const env = process.env;
const require = createRequire(join(env.AURA_SDK_DIR, 'package.json'));
const { chromium } = require('playwright-core');
const waitMs = Number(env.AURA_FLEET_TIMEOUT_MS || 20000);

function print(o) {
    process.stdout.write(JSON.stringify(o) + '\n');
}

const home = mkdtempSync(join(tmpdir(), 'aura-fleet-chromium-'));
let b;
try {
    b = await chromium.launch({
        executablePath: env.AURA_FLEET_CHROMIUM,
        headless: true,
        timeout: 60000,
        env: { ...env, HOME: home },
        args: ['--no-sandbox', '--disable-gpu', '--disable-quic',
               '--no-first-run', '--disable-background-networking',
               '--disable-component-update', '--disable-sync'],
    });
    const ctx = await b.newContext({
        httpCredentials: { username: env.AURA_FLEET_USER,
                           password: env.AURA_FLEET_PASSWORD,
                           // Sent with the first request: without it
                           // Chromium logs the 401 that asks for them.
                           send: 'always' },
        viewport: { width: 1366, height: 768 },
    });
    // Injected by the browser itself (CDP), not by the page: the CSP
    // does not apply to it, and it sees every violation the page causes.
    await ctx.addInitScript(() => {
        window.__csp = [];
        document.addEventListener('securitypolicyviolation', (e) => {
            window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`);
        });
    });
    const p = await ctx.newPage();
    const errors = [];
    p.on('console', (m) => {
        if (m.type() === 'error') {
            errors.push(m.text());
        }
    });
    p.on('pageerror', (e) => errors.push(String(e)));
    // What answered an error, to say which resource a console error is.
    const failed = [];
    p.on('response', (r) => {
        if (r.status() >= 400) {
            failed.push(`${r.status()} ${r.url()}`);
        }
    });
    const res = await p.goto(env.AURA_FLEET_URL, { timeout: waitMs });
    // The script refreshed the page at least once (it counts).
    await p.waitForSelector('html[data-refreshes]', { timeout: waitMs });
    const shown = await p.evaluate(() => {
        const cards = [...document.querySelectorAll('article.card')].map(
            (c) => ({
                instance: c.getAttribute('data-instance'),
                state: c.getAttribute('data-state'),
                title: c.querySelector('h2').textContent,
                breakers: Object.fromEntries(
                    [...c.querySelectorAll('tr[data-service]')].map(
                        (tr) => [tr.getAttribute('data-service'),
                                 tr.children[1].textContent])),
                width: Math.round(c.getBoundingClientRect().width),
            }));
        const changes = [...document.querySelectorAll('#changes li')].map(
            (li) => li.textContent);
        const grid = getComputedStyle(document.querySelector('.cards'));
        return { cards, changes, grid: grid.display,
                 who: document.querySelector('.who').textContent,
                 nav: [...document.querySelectorAll('header nav a')].map(
                     (a) => a.getAttribute('href')),
                 refreshes: document.documentElement.getAttribute(
                     'data-refreshes'),
                 csp: window.__csp,
                 scrollWidth: document.documentElement.scrollWidth };
    });
    await p.screenshot({ path: env.AURA_FLEET_SHOT, fullPage: true });
    print({ ok: true, status: res.status(), browser: b.version(),
            errors, failed, shot: env.AURA_FLEET_SHOT, ...shown });
}
catch (e) {
    print({ ok: false, thrown: String(e && e.stack || e) });
}
finally {
    if (b) {
        await b.close().catch(() => {});
    }
    rmSync(home, { recursive: true, force: true });
}
