// Elections (SPEC §12) over one client kind, against the real server:
// campaign is a hold with the value as owner, leader reads LOCK.INFO,
// observe follows LOCK.WATCH (LOCK-17) through cut connections and
// restarts, never yielding an older term (LOCK-02).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { LostError, OptionError, Reason, tenure } from '../dist/index.js';
import { Server, clients, keyInfo, lockInfo, until } from './harness.mjs';

/** A candidate campaigning for key with value until resign(); leads resolves with its lease. */
function candidate(lock, key, value) {
  let resign;
  const resigned = new Promise((r) => { resign = r; });
  let leading;
  const leads = new Promise((r) => { leading = r; });
  const done = lock.campaign(key, value, async (lease) => {
    leading(lease);
    await Promise.race([resigned, new Promise((r) => lease.signal.addEventListener('abort', r, { once: true }))]);
  });
  done.catch(() => {});
  return { leads, resign, done };
}

/** The iterator's next value within ms, or a failure naming what was awaited. */
async function next(it, what, ms = 15_000) {
  let timer;
  const r = await Promise.race([
    it.next(),
    new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms); }),
  ]);
  clearTimeout(timer);
  assert.ok(!r.done, `${what}: the observer ended`);
  return r.value;
}

const within = (p, ms, what) => Promise.race([
  p, new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms).unref()),
]);

export function elections(kindName) {
  const kind = clients[kindName];
  describe(`${kindName}: elections`, () => {
    /** Runs body with a server of its own and clients on it, closed after. */
    async function withServer(body) {
      const server = await Server.start();
      const opened = [];
      const connect = async () => {
        const c = await kind.connect(server.port);
        opened.push(c);
        return c;
      };
      try {
        await body(server, connect);
      } finally {
        for (const c of opened) kind.quit(c);
        await server.stop();
      }
    }

    test('LOCK-17: observe yields none, then A, then B with a larger term when A resigns and B waited; leader agrees', () =>
      withServer(async (server, connect) => {
        const admin = await connect();
        const lock = tenure(await connect()).lock('sched', { ttl: '5s' });
        assert.equal(await lock.leader('main'), null, 'a free key has no leader');
        const ac = new AbortController();
        const it = lock.observe('main', { signal: ac.signal })[Symbol.asyncIterator]();
        assert.equal(await next(it, 'the first leader, at once', 2000), null);

        const a = candidate(lock, 'main', 'node-a:8080');
        const la = await within(a.leads, 5000, 'A leads');
        assert.deepEqual(await next(it, 'A'), { owner: 'node-a:8080', fence: la.fence });
        const b = candidate(lock, 'main', 'node-b:8080');
        await until(async () => (await keyInfo(kind, admin, 'sched', 'main'))?.waiters === 1, 5000, 'B in line');
        assert.deepEqual(await lock.leader('main'), { owner: 'node-a:8080', fence: la.fence }, 'A leads while B waits');

        a.resign();
        await a.done;
        const lb = await within(b.leads, 5000, 'B leads');
        const ld = await next(it, 'B');
        assert.deepEqual(ld, { owner: 'node-b:8080', fence: lb.fence });
        assert.ok(ld.fence > la.fence, `B's term ${ld.fence} after A's ${la.fence}`);
        assert.deepEqual(await lock.leader('main'), ld);

        b.resign();
        await b.done;
        assert.equal(await next(it, 'none after B'), null);
        ac.abort();
        const end = await within(it.next(), 5000, 'the observer ending');
        assert.equal(end.done, true, 'an aborted observer ends');
      }));

    test('a revoked leader (LOCK.REVOKE) is aborted and its campaign fails lost; observers see it go', () =>
      withServer(async (server, connect) => {
        const admin = await connect();
        const lock = tenure(await connect()).lock('sched', { ttl: '5s' });
        const ac = new AbortController();
        const it = lock.observe('main', { signal: ac.signal })[Symbol.asyncIterator]();
        assert.equal(await next(it, 'none'), null);
        const a = candidate(lock, 'main', 'A');
        const la = await within(a.leads, 5000, 'A leads');
        assert.equal((await next(it, 'A')).fence, la.fence);
        await kind.send(admin, 'LOCK.REVOKE', 'sched', 'main');
        await within(new Promise((r) => la.signal.aborted ? r() : la.signal.addEventListener('abort', r)), 5000,
          "the revoked leader's signal");
        await assert.rejects(a.done, (e) => e instanceof LostError && e.reason === Reason.revoked);
        assert.equal(await next(it, 'none after the revoke'), null);
        ac.abort();
      }));

    test('LOCK-17: an observer outlives cut connections (CLIENT KILL) and misses no change', () =>
      withServer(async (server, connect) => {
        const admin = await connect();
        const lock = tenure(await connect()).lock('sched');
        const ac = new AbortController();
        const it = lock.observe('main', { signal: ac.signal })[Symbol.asyncIterator]();
        assert.equal(await next(it, 'none'), null);
        let top = 0n;
        for (let round = 0; round < 3; round++) {
          // The observer watches again once asked for the next leader.
          const coming = next(it, `A after cut ${round}`);
          await until(async () => (await lockInfo(kind, admin)).watchers === '1', 5000, 'the observer watching');
          const killed = Number(await kind.send(admin, 'CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes'));
          assert.ok(killed > 0, 'CLIENT KILL killed no one');
          const a = candidate(lock, 'main', `A${round}`);
          const la = await within(a.leads, 5000, 'A leads');
          const ld = await coming;
          assert.deepEqual(ld, { owner: `A${round}`, fence: la.fence });
          assert.ok(ld.fence > top, 'terms grow');
          top = ld.fence;
          a.resign();
          await a.done;
          assert.equal(await next(it, `none in round ${round}`), null);
        }
        ac.abort();
      }));

    test('LOCK-17: an observer outlives a restart of the store: none, then the new leader in a later epoch', () =>
      withServer(async (server, connect) => {
        const lock = tenure(await connect()).lock('sched', { ttl: '2s' });
        const ac = new AbortController();
        const it = lock.observe('main', { signal: ac.signal })[Symbol.asyncIterator]();
        assert.equal(await next(it, 'none'), null);
        const a = candidate(lock, 'main', 'A');
        const la = await within(a.leads, 5000, 'A leads');
        assert.equal((await next(it, 'A')).fence, la.fence);

        await server.restart();
        await within(assert.rejects(a.done, LostError), 15_000, "A's campaign failing lost");
        assert.equal(await next(it, 'none after the restart'), null);
        const b = candidate(lock, 'main', 'B');
        const lb = await within(b.leads, 10_000, 'B leads');
        const ld = await next(it, 'B');
        assert.deepEqual(ld, { owner: 'B', fence: lb.fence });
        assert.ok(ld.fence >> 32n > la.fence >> 32n, `B's term ${ld.fence} in a later epoch than A's ${la.fence}`);
        b.resign();
        await b.done;
        ac.abort();
      }));

    test('campaign checks its value; a campaign ignores the lock\'s wait', () =>
      withServer(async (server, connect) => {
        const lock = tenure(await connect()).lock('sched', { wait: 0 });
        await assert.rejects(lock.campaign('main', '', () => {}), OptionError);
        await assert.rejects(lock.campaign('main', 'x'.repeat(257), () => {}), OptionError);
        const a = candidate(lock, 'main', 'A');
        await within(a.leads, 5000, 'A leads');
        const b = candidate(lock, 'main', 'B'); // waits though the lock says wait 0
        await new Promise((r) => setTimeout(r, 300));
        a.resign();
        assert.equal((await within(b.leads, 5000, 'B leads after A')).key, 'main');
        assert.equal((await lock.leader('main')).owner, 'B');
        b.resign();
        await Promise.all([a.done, b.done]);
      }));
  });
}
