// Semaphores, readers and owners (SPEC §12) over one client kind, against
// the real server: a permit and a reader are leases as any, held, renewed,
// lost and let go by the rules of §8 (LOCK-01, LOCK-08, LOCK-15, LOCK-16).
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { hostname } from 'node:os';
import { after, before, describe, test } from 'node:test';

import { LostError, NotHeldError, OptionError, Reason, StoreError, tenure } from '../dist/index.js';
import { Proxy, Server, clients, keyInfo, lockInfo, sleep, until } from './harness.mjs';

/** LOCK.INFO's fields as strings (owner included), or null. */
async function infoFields(kind, c, lock, key) {
  return fields(await kind.send(c, 'LOCK.INFO', lock, key));
}

/** A flat array of pairs (RESP2) or a map (RESP3) as an object of strings. */
function fields(r) {
  if (r === null) return null;
  const o = {};
  if (Array.isArray(r)) {
    for (let i = 0; i < r.length; i += 2) o[String(r[i])] = String(r[i + 1]);
  } else {
    for (const [k, v] of r instanceof Map ? r : Object.entries(r)) o[String(k)] = String(v);
  }
  return o;
}

/** LOCK.HOLDERS lock key: every live lease, oldest first, as objects of strings. */
async function holders(kind, c, lock, key) {
  return (await kind.send(c, 'LOCK.HOLDERS', lock, key)).map(fields);
}

export function kinds(kindName) {
  const kind = clients[kindName];
  describe(`${kindName}: semaphores, readers, owners`, { concurrency: true }, () => {
    let server;
    let admin;
    const opened = [];
    const connect = async (port = server.port) => {
      const c = await kind.connect(port);
      opened.push(c);
      return c;
    };
    let n = 0;
    const lockName = (what) => `${what}-${++n}`;

    before(async () => {
      server = await Server.start();
      admin = await connect();
    });
    after(async () => {
      for (const c of opened) kind.quit(c);
      await server.stop();
    });

    test('LOCK-01: 10 holds of a LIMIT 3 key run at most 3 at once, and do overlap', async () => {
      const name = lockName('llm');
      const locks = await Promise.all([0, 1].map(async () => tenure(await connect()).lock(name, { limit: 3, ttl: '1s' })));
      let running = 0;
      let most = 0;
      const fences = new Set();
      await Promise.all(Array.from({ length: 10 }, (_, i) => locks[i % 2].hold('openai', async (lease) => {
        running++;
        most = Math.max(most, running);
        assert.ok(!fences.has(lease.fence), `fence ${lease.fence} granted twice`);
        fences.add(lease.fence);
        await sleep(100);
        running--;
      })));
      assert.equal(most, 3, `at most ${most} holders at once, want 3`);
      assert.equal(fences.size, 10);
      assert.equal(await keyInfo(kind, admin, name, 'openai'), null, 'every permit released');
    });

    test('a permit revoked by its fence (LOCK.REVOKE … FENCE) aborts its holder alone; hold fails lost though fn resolved', async () => {
      const name = lockName('revoke-permit');
      const lock = tenure(await connect()).lock(name, { limit: 2, ttl: '2s' });
      let otherFence;
      let endOther;
      const otherEnds = new Promise((r) => { endOther = r; });
      const other = lock.hold('k', async (lease) => {
        otherFence = lease.fence;
        await otherEnds;
        assert.equal(lease.lost, null, 'the other permit was not touched');
        return 'other';
      });
      await until(async () => otherFence !== undefined, 3000, 'the other permit');
      const err = await lock.hold('k', async (lease) => {
        const aborted = once(lease.signal, 'abort');
        assert.equal(await kind.send(admin, 'LOCK.REVOKE', name, 'k', 'FENCE', lease.fence), 1);
        await aborted;
        assert.ok(lease.signal.reason instanceof LostError);
        return 'resolved';
      }).then(() => assert.fail('hold resolved'), (e) => e);
      assert.ok(err instanceof LostError, String(err));
      assert.equal(err.reason, Reason.revoked);
      const info = await infoFields(kind, admin, name, 'k');
      assert.equal(info.holders, '1');
      assert.equal(BigInt(info.fence), otherFence, 'the other permit holds on');
      endOther();
      assert.equal(await other, 'other');
    });

    test('a permit and a reader are released on throw, and renewed through a function that outlives their ttl', async () => {
      const name = lockName('letgo-kinds');
      const sem = tenure(await connect()).lock(name, { limit: 2, ttl: '1s' });
      const rw = tenure(await connect()).lock(name, { ttl: '1s' });
      const boom = new Error('boom');
      for (const [lock, key, opts] of [[sem, 'permit', {}], [rw, 'reader', { shared: true }]]) {
        await assert.rejects(lock.hold(key, () => { throw boom; }, opts), (e) => e === boom);
        assert.equal(await keyInfo(kind, admin, name, key), null, `${key}: released on throw`);
        const fences = new Set();
        await lock.hold(key, async (lease) => {
          for (let i = 0; i < 5; i++) {
            await sleep(400);
            fences.add((await keyInfo(kind, admin, name, key)).fence);
          }
          assert.equal(lease.lost, null);
        }, opts);
        assert.equal(fences.size, 1, `${key}: one lease through 2 s of a 1 s ttl`);
        assert.equal(await keyInfo(kind, admin, name, key), null, `${key}: released on return`);
      }
    });

    test('LOCK-01: readers overlap, a writer never runs beside anyone', async () => {
      const name = lockName('reports');
      const locks = await Promise.all([0, 1].map(async () => tenure(await connect()).lock(name, { ttl: '1s' })));
      let readers = 0;
      let writers = 0;
      let mostReaders = 0;
      const bad = [];
      const holds = [];
      for (let i = 0; i < 16; i++) {
        const writer = i % 5 === 2;
        holds.push(locks[i % 2].hold('q3', async () => {
          if (writer) writers++;
          else mostReaders = Math.max(mostReaders, ++readers);
          if (writers > 1 || (writers === 1 && readers > 0)) bad.push(`${writers} writers beside ${readers} readers`);
          await sleep(30);
          if (writer) writers--;
          else readers--;
        }, { shared: !writer }));
        await sleep(3);
      }
      await Promise.all(holds);
      assert.deepEqual(bad, []);
      assert.ok(mostReaders >= 2, `readers never overlapped (at most ${mostReaders})`);
    });

    test('LOCK-08: a shared tryHold does not pass a waiting writer; a plain tryHold does not pass readers', async () => {
      const name = lockName('behind-writer');
      const lock = tenure(await connect()).lock(name);
      const nop = () => 'ran';
      let endReader;
      const readerEnds = new Promise((r) => { endReader = r; });
      let held = false;
      const reader = lock.hold('q3', async () => { held = true; await readerEnds; }, { shared: true });
      await until(async () => held, 3000, 'the first reader');
      assert.equal(await lock.tryHold('q3', nop, { shared: true }), 'ran', 'a second reader beside the first');
      await assert.rejects(lock.tryHold('q3', nop), NotHeldError);
      const writer = lock.hold('q3', nop);
      await until(async () => (await keyInfo(kind, admin, name, 'q3'))?.waiters === 1, 3000, 'the writer waits');
      await assert.rejects(lock.tryHold('q3', nop, { shared: true }), NotHeldError);
      endReader();
      await reader;
      assert.equal(await writer, 'ran');
    });

    test('LOCK-16: the owner is what LOCK.INFO and LOCK.HOLDERS show; hostname:pid by default', async () => {
      const name = lockName('summaries');
      const store = tenure(await connect());
      for (const [opts, want] of [
        [{ owner: 'worker-7' }, 'worker-7'],
        [{}, `${hostname()}:${process.pid}`],
        [{ limit: 4, owner: 'permit-holder' }, 'permit-holder'],
      ]) {
        await store.lock(name, opts).hold('chat-42', async (lease) => {
          const info = await infoFields(kind, admin, name, 'chat-42');
          assert.equal(info.owner, want);
          assert.equal(BigInt(info.fence), lease.fence);
          assert.equal(info.limit, String(opts.limit ?? 1));
        });
      }
      // Two permits of two owners: LOCK.HOLDERS lists both, oldest first.
      const a = store.lock(name, { limit: 2, owner: 'worker-a' });
      const b = store.lock(name, { limit: 2, owner: 'worker-b' });
      await a.hold('chat-43', (la) => b.hold('chat-43', async (lb) => {
        const hs = await holders(kind, admin, name, 'chat-43');
        assert.deepEqual(hs.map((h) => [h.owner, BigInt(h.fence)]), [['worker-a', la.fence], ['worker-b', lb.fence]]);
      }));
      // Readers too.
      const r1 = store.lock(name, { owner: 'reader-1' });
      const r2 = store.lock(name, { owner: 'reader-2' });
      await r1.hold('chat-44', () => r2.hold('chat-44', async () => {
        const hs = await holders(kind, admin, name, 'chat-44');
        assert.deepEqual(hs.map((h) => [h.owner, h.shared]), [['reader-1', '1'], ['reader-2', '1']]);
      }, { shared: true }), { shared: true });
    });

    test('LOCK-15: a hold whose limit disagrees with the key\'s rejects with a StoreError and runs nothing', async () => {
      const name = lockName('mismatch');
      const store = tenure(await connect());
      const sem = store.lock(name, { limit: 3 });
      const plain = store.lock(name);
      const other = store.lock(name, { limit: 5 });
      await sem.hold('k', async (lease) => {
        for (const [lock, opts] of [[plain, {}], [other, {}], [plain, { shared: true }]]) {
          const err = await lock.hold('k', () => assert.fail('ran'), opts).then(() => assert.fail('held'), (e) => e);
          assert.ok(err instanceof StoreError, String(err));
          assert.match(err.message, /this key is in use with LIMIT 3/);
        }
        const info = await infoFields(kind, admin, name, 'k');
        assert.equal(info.holders, '1', 'the refusals changed nothing');
        assert.equal(BigInt(info.fence), lease.fence);
      });
      await plain.hold('k', async () => {
        await assert.rejects(sem.tryHold('k', () => assert.fail('ran')),
          (e) => e instanceof StoreError && /in use without LIMIT/.test(e.message));
      });
      // A lock with a limit has no readers: refused before anything is sent.
      await assert.rejects(sem.hold('k', () => assert.fail('ran'), { shared: true }), OptionError);
    });

    test('LOCK-03: a swallowed HOLD reply of a permit or a reader is asked again with its request id: one grant', async () => {
      const own = await Server.start();
      const proxy = await Proxy.start(own.port);
      const ownAdmin = await connect(own.port);
      try {
        const name = lockName('swallow-kinds');
        const store = tenure(await connect(proxy.port));
        for (const [lock, opts] of [[store.lock(name, { limit: 2 }), {}], [store.lock(name), { shared: true }]]) {
          const grants = Number((await lockInfo(kind, ownAdmin)).grants_total);
          const key = opts.shared ? 'reader' : 'permit';
          proxy.swallowNext((text) => text.includes('LOCK.HOLD') && text.includes(key));
          await lock.hold(key, async (lease) => {
            const info = await infoFields(kind, ownAdmin, name, key);
            assert.equal(info.holders, '1');
            assert.equal(BigInt(info.fence), lease.fence);
          }, opts);
          assert.equal(Number((await lockInfo(kind, ownAdmin)).grants_total) - grants, 1, `${key}: one grant`);
        }
        assert.equal(proxy.swallowed, 2);
      } finally {
        proxy.close();
        await own.stop();
      }
    });
  });
}
