// Options and arguments, checked before anything is sent (SPEC §3 ranges).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { NotHeldError, OptionError, TenureError, tenure } from '../dist/index.js';

// A node-redis-shaped client that must never be reached: options are
// checked before any command.
const unreachable = {
  sendCommand: () => assert.fail('sent a command'),
  duplicate: () => assert.fail('opened a connection'),
};
const store = tenure(unreachable);

test('durations: strings and milliseconds', () => {
  for (const ttl of ['1s', '1000ms', 1000, '1h', '0.5m', '1m30s']) store.lock('l', { ttl });
  for (const [ttl, want] of [['500ms', /ttl 500ms: must be from 1s to 1h/], ['2h', /ttl 2h: must be from 1s to 1h/],
    [999, /ttl 999ms/], ['ten', /not a duration/], ['10 s', /not a duration/], [NaN, /not a finite/]]) {
    assert.throws(() => store.lock('l', { ttl }), (e) => e instanceof OptionError && want.test(e.message), String(ttl));
  }
});

test('maxHold from 1s to 24h, wait not negative, margin under half the ttl and under maxHold', () => {
  store.lock('l', { maxHold: '24h', ttl: '1h' });
  assert.throws(() => store.lock('l', { maxHold: '25h' }), /maxHold 25h: must be from 1s to 24h/);
  assert.throws(() => store.lock('l', { maxHold: 500 }), /maxHold 500ms/);
  assert.throws(() => store.lock('l', { wait: -1 }), /wait -1ms: must not be negative/);
  assert.throws(() => store.lock('l', { ttl: '2s', margin: '1s' }), /margin 1s: must be from 0 to under half the ttl/);
  // The default margin, min(ttl/10, 2s), must be under maxHold: 2s is not under 1s.
  assert.throws(() => store.lock('l', { ttl: '1m', maxHold: '1s' }), /margin 2s: must be under maxHold/);
  store.lock('l', { ttl: '1m', maxHold: '1s', margin: '200ms' });
});

test('names and keys: 1 to 256 and 1 to 1024 bytes', async () => {
  assert.throws(() => store.lock(''), /the name must be 1 to 256 bytes/);
  assert.throws(() => store.lock('x'.repeat(257)), /the name must be 1 to 256 bytes/);
  const lock = store.lock('l');
  await assert.rejects(lock.hold('', () => {}), /the key must be 1 to 1024 bytes/);
  await assert.rejects(lock.tryHold('é'.repeat(513), () => {}), /the key must be 1 to 1024 bytes/);
  await assert.rejects(lock.hold('k'), /no function/);
});

test('an aborted signal: NotHeldError before anything is sent', async () => {
  const why = new Error('no');
  await assert.rejects(store.lock('l').hold('k', () => assert.fail('ran'), { signal: AbortSignal.abort(why) }),
    (e) => e instanceof NotHeldError && e instanceof TenureError && e.cause === why);
});

test('a client that is neither node-redis nor ioredis', () => {
  assert.throws(() => tenure({}), (e) => e instanceof OptionError && /node-redis .* or an ioredis/.test(e.message));
  assert.throws(() => tenure(null), OptionError);
});

test('limit an integer from 1 to 65536, owner 1 to 256 bytes (SPEC §12)', () => {
  for (const limit of [1, 2, 65536]) store.lock('l', { limit });
  for (const limit of [0, -1, 65537, 1.5, NaN]) {
    assert.throws(() => store.lock('l', { limit }),
      (e) => e instanceof OptionError && /limit .*: must be an integer from 1 to 65536/.test(e.message), String(limit));
  }
  store.lock('l', { owner: 'o'.repeat(256) });
  for (const owner of ['', 'o'.repeat(257), 'é'.repeat(129)]) {
    assert.throws(() => store.lock('l', { owner }),
      (e) => e instanceof OptionError && /owner .*: must be 1 to 256 bytes/.test(e.message), `${owner.length} chars`);
  }
});

test('a shared hold on a lock with a limit: an OptionError before anything is sent', async () => {
  await assert.rejects(store.lock('l', { limit: 2 }).hold('k', () => assert.fail('ran'), { shared: true }),
    (e) => e instanceof OptionError && /a lock with a limit has no shared holds/.test(e.message));
  await assert.rejects(store.lock('l', { limit: 2 }).tryHold('k', () => assert.fail('ran'), { shared: true }), OptionError);
});
