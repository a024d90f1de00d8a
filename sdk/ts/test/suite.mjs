// Every behaviour of SPEC §8 over one client kind, against the real server.
// Each test uses a lock of its own, so that they run side by side.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';

import { LostError, NotHeldError, Reason, StoreError, tenure } from '../dist/index.js';
import { Proxy, Server, clients, keyInfo, lockInfo, sha256, sleep, until } from './harness.mjs';

export function suite(kindName) {
  const kind = clients[kindName];
  describe(kindName, { concurrency: true }, () => {
    let server;
    let admin; // a client of the test's own, for INFO, REVOKE and writes
    const opened = [];
    const connect = async (port = server.port, opts) => {
      const c = await kind.connect(port, opts);
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

    test("the seed's example: the summary is saved with the lease's fence", async () => {
      const store = tenure(await connect());
      const summaries = store.lock(lockName('summaries'), { ttl: '30s' });
      const chatId = 'chat-1';
      const messages = ['hello', 'world'];
      const model = {
        summarize: (msgs, { signal }) => new Promise((resolve, reject) => {
          const t = setTimeout(() => resolve(msgs.join(' ').toUpperCase()), 50);
          signal.addEventListener('abort', () => { clearTimeout(t); reject(signal.reason); });
        }),
      };
      const saveSummary = async (id, text, fence) => {
        assert.equal(await kind.send(admin, 'SET', `summary:${id}`, text, 'FENCE', fence), 'OK');
      };
      let fence;
      await summaries.hold(chatId, async (lease) => {
        assert.equal(typeof lease.fence, 'bigint');
        fence = lease.fence;
        const text = await model.summarize(messages, { signal: lease.signal }); // aborted if the lease is lost
        await saveSummary(chatId, text, lease.fence);
      });
      assert.equal(await kind.send(admin, 'GET', 'summary:chat-1'), 'HELLO WORLD');
      // A later holder's fence is larger, and the earlier one's write is refused (LOCK-02, LOCK-12).
      await summaries.hold(chatId, async (lease) => {
        assert.ok(lease.fence > fence);
        await saveSummary(chatId, 'newer', lease.fence);
      });
      await assert.rejects(saveSummary(chatId, 'late', fence), /FENCED/);
      assert.equal(await kind.send(admin, 'GET', 'summary:chat-1'), 'newer');
    });

    test('a 1 s ttl lease is renewed through a 4 s function', async () => {
      const store = tenure(await connect());
      const name = lockName('renewed');
      const lock = store.lock(name, { ttl: '1s' });
      const other = tenure(await connect()).lock(name, { ttl: '1s' });
      const fences = [];
      const v = await lock.hold('k', async (lease) => {
        for (let i = 0; i < 8; i++) {
          await sleep(500);
          fences.push((await keyInfo(kind, admin, name, 'k')).fence);
          await assert.rejects(other.tryHold('k', () => assert.fail('ran beside the holder')), NotHeldError);
        }
        assert.equal(lease.lost, null);
        assert.equal(lease.signal.aborted, false);
        return 'done';
      });
      assert.equal(v, 'done');
      assert.equal(new Set(fences).size, 1, `one lease throughout: ${fences}`);
      assert.equal(await keyInfo(kind, admin, name, 'k'), null, 'released on return');
    });

    // A function that waits for its signal and resolves: hold must fail all the same.
    const untilAborted = (lease, during) => async () => {
      const aborted = once(lease.signal, 'abort');
      await during?.();
      await aborted;
      assert.ok(lease.signal.reason instanceof LostError);
      assert.equal(lease.lost, lease.signal.reason);
      return 'resolved';
    };

    test('an admin revoke aborts the signal and fails hold with its reason, though fn resolved', async () => {
      const name = lockName('revoke');
      const lock = tenure(await connect()).lock(name, { ttl: '3s' });
      let signalReason;
      const err = await lock.hold('k', (lease) => {
        lease.signal.addEventListener('abort', () => { signalReason = lease.signal.reason; });
        return untilAborted(lease, async () => {
          assert.equal(await kind.send(admin, 'LOCK.REVOKE', name, 'k'), 1);
        })();
      }).then(() => assert.fail('hold resolved'), (e) => e);
      assert.ok(err instanceof LostError, String(err));
      assert.equal(err.reason, Reason.revoked);
      assert.equal(signalReason.reason, Reason.revoked);
    });

    test('MAXHOLD aborts the signal and fails hold as revoked maxhold (LOCK-07)', async () => {
      const lock = tenure(await connect()).lock(lockName('maxhold'), { ttl: '5s', maxHold: '1s' });
      let deadline;
      let grantedAt;
      let abortedAt;
      const err = await lock.hold('k', (lease) => {
        grantedAt = performance.now();
        deadline = lease.deadline;
        lease.signal.addEventListener('abort', () => { abortedAt = performance.now(); });
        return untilAborted(lease)();
      }).then(() => assert.fail('hold resolved'), (e) => e);
      assert.ok(err instanceof LostError, String(err));
      assert.equal(err.reason, Reason.maxHold);
      // The holder gives up a margin (500 ms) before the store's MAXHOLD,
      // counted from the HOLD's send time, which came before the grant.
      assert.ok(deadline - grantedAt <= 500, `deadline ${deadline - grantedAt} ms after the grant`);
      assert.ok(abortedAt >= deadline, 'aborted at the deadline, not before');
    });

    test('a restart of the server aborts the signal and fails hold as unknown lease (LOCK-10)', async () => {
      const own = await Server.start();
      const c = await kind.connect(own.port);
      try {
        const lock = tenure(c).lock(lockName('restart'), { ttl: '3s' });
        const err = await lock.hold('k', (lease) => untilAborted(lease, () => own.restart())())
          .then(() => assert.fail('hold resolved'), (e) => e);
        assert.ok(err instanceof LostError, String(err));
        assert.equal(err.reason, Reason.unknownLease);
      } finally {
        kind.quit(c);
        await own.stop();
      }
    });

    test('a frozen holder (SIGSTOP) loses its key to the next in line, and learns it when it wakes, as expired', async () => {
      const name = lockName('frozen');
      const child = spawn(process.execPath, [new URL('./holder.mjs', import.meta.url).pathname, 'freeze',
        kindName, String(server.port), name, 'k'], { stdio: ['ignore', 'pipe', 'inherit'] });
      const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
      const line = async () => (await lines.next()).value;
      try {
        const [said, childFence] = (await line()).split(' ');
        assert.equal(said, 'held');
        child.kill('SIGSTOP');
        const lock = tenure(await connect()).lock(name, { ttl: '2s' });
        const t0 = performance.now();
        await lock.hold('k', async (lease) => {
          assert.ok(lease.fence > BigInt(childFence));
          const took = performance.now() - t0;
          assert.ok(took < 4000, `the frozen holder's key came within its ttl: ${took} ms`);
          // Frozen past its lease's end plus a ttl, the store has forgotten
          // the lease: the child's RELEASE is answered "unknown lease", which
          // tells nothing the holder did not know (the same epoch), so its
          // own reason, expired, stands.
          await sleep(t0 + 5500 - performance.now());
          child.kill('SIGCONT');
          assert.equal(await line(), 'aborted LostError expired');
          assert.equal(await line(), 'rejected LostError expired');
        });
      } finally {
        child.kill('SIGCONT');
        child.kill();
      }
    });

    test('20 holds on 3 keys, from 3 clients, exclude each other, each fence larger than the one before (LOCK-01, LOCK-02)', async () => {
      const name = lockName('exclusion');
      const locks = await Promise.all([0, 1, 2].map(async () => tenure(await connect()).lock(name, { ttl: '1s' })));
      const inside = new Map();
      const fences = new Map();
      await Promise.all(Array.from({ length: 20 }, (_, i) => locks[Math.floor(i / 3) % 3].hold(`k${i % 3}`, async (lease) => {
        const key = lease.key;
        assert.equal(inside.get(key) ?? 0, 0, `two holders of ${key} at once`);
        inside.set(key, 1);
        assert.ok(lease.fence > (fences.get(key) ?? 0n), 'fences grow');
        fences.set(key, lease.fence);
        await sleep(20);
        inside.set(key, 0);
      })));
      assert.equal(fences.size, 3);
    });

    test('release on return and on throw: the next waiter is served at once', async () => {
      const name = lockName('letgo');
      const a = tenure(await connect()).lock(name);
      const b = tenure(await connect()).lock(name);
      for (const how of ['return', 'throw']) {
        let releasedAt;
        let servedAt;
        let waiting;
        const boom = new Error('boom');
        const first = a.hold('k', async () => {
          waiting = b.hold('k', () => { servedAt = performance.now(); });
          await until(async () => (await keyInfo(kind, admin, name, 'k'))?.waiters === 1, 3000, 'b waits');
          releasedAt = performance.now();
          if (how === 'throw') throw boom;
          return 'ok';
        });
        if (how === 'throw') await assert.rejects(first, (e) => e === boom);
        else assert.equal(await first, 'ok');
        await waiting;
        assert.ok(servedAt - releasedAt < 500, `on ${how}, served ${servedAt - releasedAt} ms after fn settled`);
      }
    });

    test('waiters are served first come, first served, across several wait chunks (LOCK-08)', async () => {
      const name = lockName('fifo');
      const holder = tenure(await connect()).lock(name);
      const order = [];
      const waiting = [];
      await holder.hold('k', async () => {
        for (let i = 0; i < 4; i++) {
          const lock = tenure(await connect()).lock(name);
          waiting.push(lock.hold('k', () => { order.push(i); }));
          await until(async () => (await keyInfo(kind, admin, name, 'k'))?.waiters === i + 1, 3000, `waiter ${i} in line`);
        }
        // Longer than a chunk (4 s): every waiter has sent its next chunk on its other connection.
        await sleep(5000);
        assert.equal((await keyInfo(kind, admin, name, 'k')).waiters, 4, 'no place lost or doubled');
      });
      await Promise.all(waiting);
      assert.deepEqual(order, [0, 1, 2, 3]);
    });

    test("a waiter's chunks overlap: each next HOLD supersedes the one before, on the waiter's own connections", async () => {
      const proxy = await Proxy.start(server.port);
      try {
        const name = lockName('overlap');
        const holder = tenure(await connect()).lock(name);
        const user = await connect(proxy.port);
        const waiter = tenure(user).lock(name);
        proxy.watch(name);
        proxy.watch('superseded by a retry of the same request');
        let waiting;
        await holder.hold('k', async () => {
          waiting = waiter.hold('k', () => 'served');
          await until(async () => (await keyInfo(kind, admin, name, 'k'))?.waiters === 1, 3000, 'waiting');
          // The user's client is not blocked behind the waiting HOLD.
          assert.equal(await kind.send(user, 'PING'), 'PONG');
          await sleep(4500); // a chunk is 4 s; the next goes a quarter into it
        });
        assert.equal(await waiting, 'served');
        const holds = proxy.sentCounts.get(name);
        const superseded = proxy.answerCounts.get('superseded by a retry of the same request') ?? 0;
        assert.ok(holds >= 4, `${holds} HOLDs in 4.5 s of waiting`);
        assert.ok(superseded >= holds - 2, `${superseded} of ${holds} HOLDs answered superseded`);
      } finally {
        proxy.close();
      }
    });

    test('a bounded wait gives up with NotHeldError', async () => {
      const name = lockName('wait');
      const holder = tenure(await connect()).lock(name);
      const waiter = tenure(await connect()).lock(name, { wait: '500ms' });
      await holder.hold('k', async () => {
        const t0 = performance.now();
        await assert.rejects(waiter.hold('k', () => assert.fail('ran')), NotHeldError);
        const took = performance.now() - t0;
        assert.ok(took >= 490 && took < 2000, `gave up after ${took} ms`);
        await assert.rejects(waiter.tryHold('k', () => assert.fail('ran')), NotHeldError);
      });
    });

    test("aborting a waiting hold through the user's signal leaves no place behind", async () => {
      const name = lockName('abort');
      const holder = tenure(await connect()).lock(name);
      const waiter = tenure(await connect()).lock(name);
      const ctl = new AbortController();
      const why = new Error('the user gave up');
      await holder.hold('k', async () => {
        const waiting = waiter.hold('k', () => assert.fail('ran'), { signal: ctl.signal });
        await until(async () => (await keyInfo(kind, admin, name, 'k'))?.waiters === 1, 3000, 'waiting');
        const t0 = performance.now();
        ctl.abort(why);
        await assert.rejects(waiting, (e) => e instanceof NotHeldError && e.cause === why);
        assert.ok(performance.now() - t0 < 1000, 'stopped waiting at once');
        // The place lingers a second, passed over, then is gone.
        await until(async () => (await keyInfo(kind, admin, name, 'k')).waiters === 0, 2500, 'no place left');
      });
      assert.equal(await keyInfo(kind, admin, name, 'k'), null, 'nobody was granted the key');
    });

    test('a swallowed HOLD reply is asked again with the same request id: the same lease, one grant (LOCK-03)', async () => {
      // A server of its own, so that grants_total counts this test's grants alone.
      const own = await Server.start();
      const proxy = await Proxy.start(own.port);
      const admin = await connect(own.port);
      try {
        const name = lockName('swallow');
        const lock = tenure(await connect(proxy.port)).lock(name);
        for (const how of ['hold', 'tryHold']) {
          const grants = Number((await lockInfo(kind, admin)).grants_total);
          proxy.swallowNext((text) => text.includes('LOCK.HOLD') && text.includes(name));
          await lock[how]('k', async (lease) => {
            assert.equal(proxy.swallowed > 0, true, 'a reply was swallowed');
            assert.equal(BigInt((await keyInfo(kind, admin, name, 'k')).fence), lease.fence);
          });
          assert.equal(Number((await lockInfo(kind, admin)).grants_total) - grants, 1, `${how}: one grant`);
        }
        assert.equal(proxy.swallowed, 2);
      } finally {
        proxy.close();
        await own.stop();
      }
    });

    // The request-id window (SPEC §8, LOCK-03): the store remembers a
    // request id until at least a ttl after the earliest time a grant to it
    // can have come (the send of the oldest HOLD not answered null or
    // "superseded"); the SDK sends a HOLD with that id only before that time
    // less the holder's margin, and past it asks again with a fresh id.
    const reqidOf = (text) => /\$32\r\n([0-9a-f]{32})\r\n/.exec(text)?.[1];
    // Notes the lease ids each request id's HOLDs were answered with, and
    // swallows every reply to the first request id's HOLDs.
    const loseFirstReqID = (proxy, name) => {
      const g = { leases: new Map(), lost: undefined, lostAt: 0 };
      proxy.swallowReplyIf((cmd, reply) => {
        if (!cmd.includes('LOCK.HOLD') || !cmd.includes(name)) return false;
        const reqid = reqidOf(cmd);
        if (reply.startsWith('*')) {
          if (!g.leases.has(reqid)) g.leases.set(reqid, new Set());
          g.leases.get(reqid).add(reqidOf(reply));
        }
        if (g.lost === undefined) [g.lost, g.lostAt] = [reqid, performance.now()];
        return reqid === g.lost;
      });
      return g;
    };
    const oneLeaseEach = (g) => {
      for (const [reqid, leases] of g.leases) assert.equal(leases.size, 1, `LOCK-03: request id ${reqid} was granted ${leases.size} leases`);
    };
    // Every HOLD of each request id reached the store before its first +
    // window (none was answered null or superseded here); the ids in order.
    const heldWithin = (proxy, name, window) => {
      const first = new Map();
      for (const { text, at } of proxy.commands) {
        if (!text.includes('LOCK.HOLD') || !text.includes(name)) continue;
        const reqid = reqidOf(text);
        if (!first.has(reqid)) first.set(reqid, at);
        else assert.ok(at - first.get(reqid) < window, `a HOLD with request id ${reqid} reached the store ${(at - first.get(reqid)).toFixed(0)} ms after its first`);
      }
      return [...first.keys()];
    };

    test('answers lost past the request-id window: asked again with a fresh id, one lease per id (SPEC §8, LOCK-03)', async () => {
      const own = await Server.start();
      const proxy = await Proxy.start(own.port);
      const admin = await connect(own.port);
      try {
        const name = lockName('window');
        const lock = tenure(await connect(proxy.port)).lock(name, { ttl: '1s' });
        const grants = Number((await lockInfo(kind, admin)).grants_total);
        const g = loseFirstReqID(proxy, name);
        // The first id's HOLDs (granted at once, its later chunks answered
        // the same lease) are cut off 950 ms after the grant: past the window.
        const cutter = (async () => {
          await until(async () => g.lost !== undefined, 3000, 'the lost grant');
          await sleep(950 - (performance.now() - g.lostAt));
          proxy.cut();
        })();
        let ranAt;
        await lock.hold('k', async (lease) => {
          ranAt = performance.now();
          assert.equal(BigInt((await keyInfo(kind, admin, name, 'k')).fence), lease.fence);
        });
        await cutter;
        const reqids = heldWithin(proxy, name, 900);
        assert.deepEqual(reqids.length, 2, `request ids ${reqids}: the lost one, then a fresh one`);
        assert.equal(reqids[0], g.lost);
        oneLeaseEach(g);
        assert.equal(Number((await lockInfo(kind, admin)).grants_total) - grants, 2, "the orphan's grant and fn's");
        assert.ok(ranAt - g.lostAt >= 950, 'fn ran before the orphan lease ran out');
      } finally {
        proxy.close();
        await own.stop();
      }
    });

    test('aborted past the request-id window, its grant lost: no probe with that id (SPEC §8, LOCK-03)', async () => {
      const own = await Server.start();
      const proxy = await Proxy.start(own.port);
      const admin = await connect(own.port);
      try {
        const name = lockName('window');
        const lock = tenure(await connect(proxy.port)).lock(name, { ttl: '1s' });
        const grants = Number((await lockInfo(kind, admin)).grants_total);
        const g = loseFirstReqID(proxy, name);
        await assert.rejects(
          lock.hold('k', () => assert.fail('fn ran on a grant whose every answer was lost'), { signal: AbortSignal.timeout(1200) }),
          (e) => e instanceof NotHeldError);
        assert.equal(heldWithin(proxy, name, 900).length, 1);
        oneLeaseEach(g);
        assert.equal(Number((await lockInfo(kind, admin)).grants_total) - grants, 1);
        await until(async () => ((await keyInfo(kind, admin, name, 'k'))?.fence ?? 0) === 0, 3000, 'the orphan lease to run out');
      } finally {
        proxy.close();
        await own.stop();
      }
    });

    test('MaxHold counts from the oldest chunk that may have been granted: its grant lost, a later chunk gets the same lease (LOCK-07, LOCK-03)', async () => {
      const proxy = await Proxy.start(server.port);
      try {
        const name = lockName('capped');
        // A ttl longer than the time from the lost grant to the later
        // chunk's answer (about a quarter chunk, 1 s), so the lease lives
        // on; and the cap more than a ttl after that, so the HOLD's reply
        // is not capped and the renewals meet the holder's cap.
        const maxHold = 4000;
        const waiter = tenure(await connect(proxy.port)).lock(name, { ttl: '2s', maxHold });
        const holder = tenure(await connect()).lock(name, { ttl: '1s' });
        let grantedBy; // the store granted before its reply got to the proxy
        proxy.swallowReplyIf((cmd, reply) => {
          const grant = grantedBy === undefined && cmd.includes('LOCK.HOLD') && cmd.includes(name) && reply.startsWith('*');
          if (grant) grantedBy = performance.now();
          return grant;
        });
        proxy.watch(name);
        let cap;
        let waiting;
        await holder.hold('k', async () => {
          waiting = waiter.hold('k', async (lease) => {
            if (!lease.signal.aborted) await once(lease.signal, 'abort');
            cap = lease.deadline;
          });
          await until(async () => (await keyInfo(kind, admin, name, 'k'))?.waiters === 1, 3000, 'waiting');
        });
        await assert.rejects(waiting, (e) => e instanceof LostError && e.reason === Reason.maxHold && !e.fromStore);
        assert.equal(proxy.swallowed, 1, 'the first grant reply was swallowed');
        assert.ok(proxy.sentCounts.get(name) >= 2, 'a later HOLD got the lease');
        // The store's cap is maxHold after the grant, which came before
        // grantedBy; the holder's must be a margin before it (2 ms for the
        // store's milliseconds).
        const margin = waiter.margin;
        assert.ok(cap <= grantedBy + maxHold - margin + 2,
          `the holder's cap is ${(cap - grantedBy).toFixed(1)} ms after the grant, the store's at most ${maxHold} ms`);
      } finally {
        proxy.close();
      }
    });

    test('connections cut every 300 ms while a lease is held do not lose it', async () => {
      const proxy = await Proxy.start(server.port);
      let cutter;
      try {
        const name = lockName('cuts');
        const lock = tenure(await connect(proxy.port)).lock(name, { ttl: '2s' });
        let fence;
        await lock.hold('k', async (lease) => {
          cutter = setInterval(() => proxy.cut(), 300);
          fence = lease.fence;
          const first = lease.deadline;
          await sleep(4000);
          assert.equal(lease.lost, null);
          assert.ok(lease.deadline > first + 2000, 'renewed through the cuts');
        });
        assert.ok(fence > 0n);
        assert.ok(proxy.cuts >= 8, `${proxy.cuts} cuts of a live connection in 4 s`);
      } finally {
        clearInterval(cutter);
        proxy.close();
      }
    });

    test('a read-only user gets a clear error, and its function never runs', async () => {
      const own = await Server.start({
        users: `user reader read sha256:${sha256('r-pass')}\nuser writer write sha256:${sha256('w-pass')}\n`,
      });
      const reader = await kind.connect(own.port, { user: 'reader', password: 'r-pass' });
      const writer = await kind.connect(own.port, { user: 'writer', password: 'w-pass' });
      try {
        const lock = tenure(reader).lock(lockName('readonly'));
        const err = await lock.hold('k', () => assert.fail('ran')).then(() => assert.fail('held'), (e) => e);
        assert.ok(err instanceof StoreError, String(err));
        assert.match(err.message, /refused: NOPERM/);
        assert.equal(await tenure(writer).lock(lockName('readonly')).hold('k', () => 'w'), 'w');
      } finally {
        kind.quit(reader);
        kind.quit(writer);
        await own.stop();
      }
    });

    test('nothing of the SDK (a timer, a connection of its own) keeps the process alive once hold has settled', { timeout: 15_000 }, async () => {
      const child = spawn(process.execPath, [new URL('./holder.mjs', import.meta.url).pathname, 'exit',
        kindName, String(server.port), lockName('exit'), 'k'], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.on('data', (d) => { out += d; });
      const [code] = await once(child, 'exit');
      const exitedAt = Date.now();
      assert.equal(code, 0);
      const settledAt = Number(out.match(/settled (\d+)/)[1]);
      // Under 2 s, the shortest timer the holder's SDK has (holder.mjs).
      assert.ok(exitedAt - settledAt < 1500, `exited ${exitedAt - settledAt} ms after hold settled`);
    });
  });
}
