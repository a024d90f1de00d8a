// Node's redis package (node-redis 6) against tenure, at its default
// options, with raw commands. Those options speak RESP3: createClient sends
// HELLO 3 on connect, and LOCK.INFO's reply is a map (a JavaScript object
// here). A worker holds a lock, renews it on a timer while it works, writes
// with its fence and releases it; a second worker waits in line on its own
// connection and gets the key with a larger fence. Run by node.sh, which
// starts the server: node lock.mjs PORT.
import { createClient } from 'redis';

import { check, rejects, reqid } from './check.mjs';

const port = Number(process.argv[2]);
const url = `redis://127.0.0.1:${port}`;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const a = createClient({ url });
const b = createClient({ url }); // a waiter blocks its connection: its own client
a.on('error', (err) => console.error('client a:', err));
b.on('error', (err) => console.error('client b:', err));
await a.connect();
await b.connect();
console.log(`node-redis against tenure on port ${port}`);
check('PING', (await a.ping()) === 'PONG');

const rid = reqid();
const [lease, fence, ttl] = await a.sendCommand(['LOCK.HOLD', 'invoices', 'inv-7', rid, 'TTL', '1500']);
check('LOCK.HOLD grants a lease', /^[0-9a-f]{32}$/.test(lease) && fence > 0 && ttl === 1500, [lease, fence, ttl]);
const again = await a.sendCommand(['LOCK.HOLD', 'invoices', 'inv-7', rid]);
check('a retry with the same reqid gets the same lease (LOCK-03)', again[0] === lease && again[1] === fence, again);

// The waiter: WAIT 10 s in line.
const waiting = b.sendCommand(['LOCK.HOLD', 'invoices', 'inv-7', reqid(), 'TTL', '1000', 'WAIT', '10000']);
let settled = false;
waiting.then(() => { settled = true; }, () => { settled = true; });
for (let i = 0; i < 500; i++) {
  const info = await a.sendCommand(['LOCK.INFO', 'invoices', 'inv-7']);
  if (info && info.waiters === 1) break;
  await sleep(10);
}
const info = await a.sendCommand(['LOCK.INFO', 'invoices', 'inv-7']);
check('LOCK.INFO is a map in RESP3: the second worker waits in line',
  info.waiters === 1 && info.fence === fence && info.maxhold === -1, info);
check('CLIENT INFO says the connection speaks RESP3', / resp=3 /.test(await a.sendCommand(['CLIENT', 'INFO'])));

// Renew every ttl/3 on a timer while working for two ttls.
let renewals = 0;
let renewError = null;
const timer = setInterval(async () => {
  try {
    const left = await a.sendCommand(['LOCK.RENEW', lease]);
    if (left > 1000 && left <= 1500) renewals++;
    else renewError = `renewed to ${left} ms`;
  } catch (err) {
    renewError = err.message;
  }
}, 500);
await sleep(3000);
clearInterval(timer);
check('the lease was renewed while the work ran', renewals >= 4 && renewError === null, { renewals, renewError });
check('nobody else got the key meanwhile', !settled);
check('SET ... FENCE with our fence', (await a.sendCommand(['SET', 'invoice:7', 'paid', 'FENCE', String(fence)])) === 'OK');

check('LOCK.RELEASE', (await a.sendCommand(['LOCK.RELEASE', lease])) === 1);
const [lease2, fence2] = await waiting;
check('the waiter is granted at release, with a larger fence (LOCK-02, LOCK-08)', fence2 > fence, [fence, fence2]);
check('LOCK.RENEW after release is LOST released (LOCK-05)',
  (await rejects(a.sendCommand(['LOCK.RENEW', lease]))) === 'LOST released');
check('the new holder writes with its fence',
  (await b.sendCommand(['SET', 'invoice:7', 'refunded', 'FENCE', String(fence2)])) === 'OK');
check('a late write with the old fence is refused (LOCK-12)',
  (await rejects(a.sendCommand(['SET', 'invoice:7', 'late', 'FENCE', String(fence)]))) === 'FENCED a newer fence has written this key');
check('the key keeps the newer write', (await a.get('invoice:7')) === 'refunded');
check('LOCK.RELEASE by the new holder', (await b.sendCommand(['LOCK.RELEASE', lease2])) === 1);
check('LOCK.INFO of the free key is null', (await a.sendCommand(['LOCK.INFO', 'invoices', 'inv-7'])) === null);
check('bad options are errors',
  (await rejects(a.sendCommand(['LOCK.HOLD', 'invoices', 'x', reqid(), 'TTL', '1']))) === 'ERR ttl must be an integer from 1000 to 3600000');

await a.quit();
await b.quit();
console.log('node-redis: all checks passed');
