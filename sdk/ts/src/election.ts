// Elections (SPEC §12) are locks: the leader of (lock, key) is its holder,
// the value it proclaims is the lease's OWNER, and its term is the lease's
// fence, larger for every later leader, across restarts and failovers
// (LOCK-02). Campaign is hold with the value as owner and no wait limit
// (lock.ts); leader reads LOCK.INFO; observe runs LOCK.WATCH in a loop.

import { type Conn, type Driver } from './driver.js';
import { ReplyError, StoreError, describe } from './errors.js';
import { TIMEOUT, sleep, within } from './timing.js';

/**
 * Who leads an election: the value it campaigned with (the lease's owner)
 * and its term, the fence of its lease. "None" is `null` wherever a
 * Leader may be absent (leader(), observe()).
 */
export interface Leader {
  readonly owner: string;
  /** The term: the leader's fence, larger for every later leader (LOCK-02). */
  readonly fence: bigint;
}

/** WAIT of each LOCK.WATCH: a watch is asked again this often, and a silent connection is noticed within it plus replyGrace. */
const watchChunk = 4000;
const replyGrace = 2000;
/** The pause after an error observe outlasts grows from this to maxBackoff. */
const minBackoff = 50, maxBackoff = 1000;

/**
 * The fence and owner of a LOCK.INFO-shaped reply (LOCK.INFO, LOCK.WATCH):
 * a flat array of field and value (RESP2), a map or object (RESP3), or
 * null (free). A free key and one with only places in line (fence 0) are
 * both null.
 */
export function leaderOf(reply: unknown): Leader | null {
  if (reply === null || reply === undefined) return null;
  let pairs: [unknown, unknown][];
  if (Array.isArray(reply)) {
    pairs = [];
    for (let i = 0; i + 1 < reply.length; i += 2) pairs.push([reply[i], reply[i + 1]]);
  } else if (reply instanceof Map) {
    pairs = [...reply.entries()];
  } else if (typeof reply === 'object') {
    pairs = Object.entries(reply);
  } else {
    throw new Error(`a reply of ${typeof reply}, want LOCK.INFO's fields`);
  }
  let fence: bigint | undefined;
  let owner: string | undefined;
  for (const [k, v] of pairs) {
    const name = String(k);
    if (name === 'fence') fence = BigInt(String(v));
    else if (name === 'owner') owner = Buffer.isBuffer(v) ? v.toString() : String(v);
  }
  if (fence === undefined || owner === undefined) throw new Error('a reply without fence and owner');
  return fence === 0n ? null : { owner, fence };
}

const same = (a: Leader | null, b: Leader | null) =>
  a === null ? b === null : b !== null && a.fence === b.fence && a.owner === b.owner;

/**
 * Whether observe may outlast e by trying again: anything on the way (the
 * network, a restart, -TRYAGAIN, -CLUSTERDOWN, -LOADING) but the store's
 * refusals that no retry changes.
 */
function outlasts(e: unknown): boolean {
  if (!(e instanceof ReplyError)) return true;
  return !['NOPERM', 'NOAUTH', 'WRONGPASS', 'ERR unknown command', 'ERR syntax', 'ERR wrong number']
    .some((p) => e.message.startsWith(p));
}

/** The epoch of a fence (SPEC §2): its high 32 bits. */
const epoch = (f: bigint) => f >> 32n;

/**
 * observe's loop: LOCK.WATCH with the last fence seen, on a connection of
 * its own (a duplicate of the user's client), opened again after any
 * failure. See Lock.observe.
 */
export async function* observe(
  driver: Driver, lock: string, key: string, signal?: AbortSignal,
): AsyncGenerator<Leader | null, void, undefined> {
  let conn: Conn | undefined;
  const onAbort = () => conn?.close();
  signal?.addEventListener('abort', onAbort, { once: true });
  let fence = 0n; // what the next LOCK.WATCH waits to change
  let last: Leader | null = null; // the last one yielded
  let yielded = false;
  let top = 0n; // the largest fence yielded
  let backoff = 0;
  try {
    while (!signal?.aborted) {
      let ld: Leader | null;
      try {
        conn ??= await driver.open();
        if (signal?.aborted) return;
        // The first answer is the key as it is (LOCK.INFO): a LOCK.WATCH
        // with FENCE 0 on a free key would wait for a change.
        const args = yielded
          ? ['LOCK.WATCH', lock, key, 'FENCE', String(fence), 'TIMEOUT', String(watchChunk)]
          : ['LOCK.INFO', lock, key];
        const reply = await within(conn.send(args), watchChunk + replyGrace);
        if (reply === TIMEOUT) throw new Error(`no answer to LOCK.WATCH within ${watchChunk + replyGrace} ms`);
        ld = leaderOf(reply);
      } catch (e) {
        if (!(e instanceof ReplyError)) {
          conn?.close();
          conn = undefined;
        }
        if (signal?.aborted) return;
        if (!outlasts(e)) {
          const line = describe(e);
          throw new StoreError(`observe ${lock} ${JSON.stringify(key)}: the store refused: ${line}`, line);
        }
        backoff = Math.min(Math.max(2 * backoff, minBackoff), maxBackoff);
        await sleep(backoff, signal);
        continue;
      }
      backoff = 0;
      fence = ld?.fence ?? 0n;
      if (yielded && same(ld, last)) continue; // TIMEOUT: nothing changed
      if (ld !== null && ld.fence <= top) continue; // an older term than one yielded (LOCK-02): never yield it
      if (ld !== null && yielded && last !== null && epoch(ld.fence) > epoch(last.fence)) {
        // A new epoch: the last leader's lease ended with the old one,
        // even if no one saw the key free in between.
        last = null;
        yield null;
        if (signal?.aborted) return;
      }
      last = ld;
      yielded = true;
      if (ld !== null && ld.fence > top) top = ld.fence;
      yield ld;
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
    conn?.close();
  }
}
