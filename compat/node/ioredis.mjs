// ioredis 5 against tenure, at its default options (RESP2: ioredis sends no
// HELLO): hold a lock, write with its fence, release it, and see a write
// with the old fence refused once a newer holder wrote. Run by node.sh,
// which starts the server: node ioredis.mjs PORT.
import Redis from 'ioredis';

import { check, rejects, reqid } from './check.mjs';

const port = Number(process.argv[2]);

const c = new Redis({ host: '127.0.0.1', port });
console.log(`ioredis against tenure on port ${port}`);
check('PING', (await c.ping()) === 'PONG');

const [lease, fence, ttl] = await c.call('LOCK.HOLD', 'orders', 'o-1', reqid(), 'TTL', '5000');
check('LOCK.HOLD grants a lease', /^[0-9a-f]{32}$/.test(lease) && fence > 0 && ttl === 5000, [lease, fence, ttl]);
const info = await c.call('LOCK.INFO', 'orders', 'o-1');
check('LOCK.INFO is field, value pairs in RESP2', info[0] === 'fence' && info[1] === fence && info[8] === 'waiters', info);
check('SET ... FENCE with our fence', (await c.call('SET', 'order:1', 'shipped', 'FENCE', String(fence))) === 'OK');
check('LOCK.RELEASE', (await c.call('LOCK.RELEASE', lease)) === 1);
check('LOCK.INFO of the free key is null', (await c.call('LOCK.INFO', 'orders', 'o-1')) === null);

const [lease2, fence2] = await c.call('LOCK.HOLD', 'orders', 'o-1', reqid());
check('the next holder gets a larger fence (LOCK-02)', fence2 > fence, [fence, fence2]);
check('the new holder writes with its fence', (await c.call('SET', 'order:1', 'returned', 'FENCE', String(fence2))) === 'OK');
check('a late write with the old fence is refused (LOCK-12)',
  (await rejects(c.call('SET', 'order:1', 'late', 'FENCE', String(fence)))) === 'FENCED a newer fence has written this key');
check('the key keeps the newer write', (await c.get('order:1')) === 'returned');
check('LOCK.RELEASE by the new holder', (await c.call('LOCK.RELEASE', lease2)) === 1);

await c.quit();
console.log('ioredis: all checks passed');
