// A holder in a process of its own, for the tests that freeze it or watch
// it exit: node holder.mjs MODE CLIENT PORT LOCK KEY. It says what happens
// on stdout, a line each.
//   freeze: holds KEY with ttl 2s until the lease is lost, then lets hold settle.
//   exit:   holds KEY once for a moment (ttl 30s), closes its client, and
//           exits by itself if nothing keeps it alive.
import { tenure } from '../dist/index.js';
import { clients } from './harness.mjs';

const [mode, kindName, port, lockName, key] = process.argv.slice(2);
const kind = clients[kindName];
const client = await kind.connect(Number(port));
const store = tenure(client);
const say = (...w) => console.log(w.join(' '));

if (mode === 'freeze') {
  const lock = store.lock(lockName, { ttl: '2s' });
  try {
    await lock.hold(key, async (lease) => {
      say('held', lease.fence);
      const reason = await new Promise((r) => lease.signal.addEventListener('abort', () => r(lease.signal.reason)));
      say('aborted', reason.constructor.name, reason.reason);
      return 'done';
    });
    say('resolved');
  } catch (e) {
    say('rejected', e.constructor.name, e.reason);
  }
  kind.quit(client);
} else {
  // With a 30 s ttl every timer of the SDK is 2 s or longer (a HOLD's own
  // reply timeout, renewals, retries every ttl/10): one left ref'd would
  // keep the process for that long.
  const lock = store.lock(lockName, { ttl: '30s' });
  await lock.hold(key, async () => new Promise((r) => setTimeout(r, 1200)));
  kind.quit(client);
  say('settled', Date.now());
  // Nothing of the SDK's may keep the process alive from here.
}
