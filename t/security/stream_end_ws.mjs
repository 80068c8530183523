// Licensed under the Apache License, Version 2.0 (see LICENSE).
//
// t/security/stream_end.t's WebSocket clients (npm's ws, a real client
// written by others): a victim and a survivor on the same route, each
// sending a message every 200 ms and counting the echoes.  One JSON
// line per event on stdout: open (both), close (code and reason as the
// client received them, time in s), then, once the victim is closed,
// "survivor" when the survivor got 3 more echoes after that, or
// "timeout".
//   node stream_end_ws.mjs URL APIKEY VICTIM_TOKEN SURVIVOR_TOKEN
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '../sdk/package.json'));
const WebSocket = require('ws');

const [url, apikey, victimToken, survivorToken] = process.argv.slice(2);
const say = (o) => process.stdout.write(JSON.stringify(o) + '\n');
let victimClosed = false, after = 0, opened = 0;

function client(who, token) {
  const ws = new WebSocket(url, {
    headers: { apikey, Authorization: `Bearer ${token}` },
  });
  let n = 0, timer;
  ws.on('open', () => {
    say({ ev: 'open', who });
    if (++opened === 2) say({ ev: 'ready' });
    timer = setInterval(() => ws.send(`${who}-${n++}`), 200);
  });
  ws.on('message', () => {
    if (who === 'survivor' && victimClosed && ++after === 3) {
      say({ ev: 'survivor', echoes: after });
      clearInterval(timer);
      ws.close(1000);
      setTimeout(() => process.exit(0), 200);
    }
  });
  ws.on('close', (code, reason) => {
    clearInterval(timer);
    say({ ev: 'close', who, code, reason: reason.toString(),
          t: Date.now() / 1000 });
    if (who === 'victim') victimClosed = true;
  });
  ws.on('error', (e) => say({ ev: 'error', who, message: String(e) }));
  return ws;
}

client('victim', victimToken);
client('survivor', survivorToken);
setTimeout(() => { say({ ev: 'timeout' }); process.exit(1); }, 60000);
