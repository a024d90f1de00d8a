import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

import { type Conn, type Driver } from './driver.js';
import { type Duration, show, toMs } from './duration.js';
import {
  LostError, NotHeldError, OptionError, Reason, ReplyError, StoreError, describe, lostReason, superseded, transient,
} from './errors.js';
import { type Leader, leaderOf, observe } from './election.js';
import { type Grant, Lease } from './lease.js';
import { Mailbox, STOPPED, TIMEOUT, attempts, now, sleep, within } from './timing.js';

// The ranges of SPEC §3, in ms.
const minTTL = 1000, maxTTL = 3_600_000, defaultTTL = 10_000;
const minMaxHold = 1000, maxMaxHold = 86_400_000;
const maxLockLen = 256, maxKeyLen = 1024;
// LIMIT n and OWNER text (SPEC §12).
const maxLimit = 65_536, maxOwnerLen = 256;
/** the default margin is min(ttl/10, maxMargin) */
const maxMargin = 2000;
/**
 * WAIT of each HOLD while waiting in line. Neither client has a read
 * timeout by default, so the SDK keeps its own: a HOLD not answered within
 * its WAIT plus replyGrace is taken as lost, its connection dropped, and it
 * is asked again with the same request id.
 */
const waitChunk = 4000;
const replyGrace = 2000;
/**
 * While waiting in line, a HOLD whose answer was lost is tried again at
 * least this often (and at least every ttl/10), so that the place, which
 * lingers for a second after its connection closes, is resumed.
 */
const maxWaitRetry = 250;
/**
 * The next chunk is sent at wait/overlapAt into the current one: early, so
 * that it has three quarters of the chunk to reach the store (a busy
 * machine, a slow network, a pause of the collector) before the place
 * would linger.
 */
const overlapAt = 4;
/** HOLDs of one hold outstanding at once: a hung one does not stop the next, up to this. */
const maxHoldsInFlight = 3;

export interface LockOptions {
  /** How long a lease lasts without a renewal: 1s to 1h, default 10s. */
  ttl?: Duration;
  /** Caps every lease at this long after its grant (LOCK-07): 1s to 24h; default no cap. */
  maxHold?: Duration;
  /** Bounds the time hold waits in line; then it rejects with NotHeldError. Default: no bound. */
  wait?: Duration;
  /**
   * How long before the store's deadline the holder gives the lease up:
   * default min(ttl/10, 2s); under half the ttl and under maxHold.
   */
  margin?: Duration;
  /**
   * Makes the lock a semaphore (SPEC §12): each key admits up to this many
   * leases at once, each a lease of its own (its own fence, renewal and
   * loss). An integer from 1 to 65536; 1, the default, is a plain lock.
   * Every holder of a key must agree on it while the key is in use: a hold
   * with another limit rejects with a StoreError, without running its
   * function ("this key is in use with LIMIT n", LOCK-15). A lock with a
   * limit has no shared holds.
   */
  limit?: number;
  /**
   * The text the store shows of this lock's leases to anyone who asks who
   * holds a key (LOCK.INFO, LOCK.LIST, LOCK.HOLDERS): 1 to 256 bytes.
   * Default `hostname:pid`. Information, never a credential (LOCK-16).
   */
  owner?: string;
}

export interface HoldOptions {
  /**
   * Stops waiting in line when it aborts: hold rejects with NotHeldError
   * (its cause the signal's reason), leaving no place in line and letting
   * go any grant that raced in. Once the function runs, the signal is the
   * function's business: it does not end the lease.
   */
  signal?: AbortSignal;
  /**
   * Holds the key as a reader (SPEC §12, SHARED): shared with other readers,
   * never with a plain hold (a writer). The line stays one (LOCK-08): a
   * reader that comes while a writer waits waits behind it. A lock with a
   * limit has no readers: such a hold rejects with an OptionError.
   */
  shared?: boolean;
}

/** `hostname:pid`, the hostname cut to fit maxOwnerLen bytes. */
function defaultOwner(): string {
  let host = hostname() || 'unknown';
  const pid = `:${process.pid}`;
  while (Buffer.byteLength(host) + pid.length > maxOwnerLen) host = host.slice(0, -1);
  return host + pid;
}

/** One named lock of a tenure store, with the options its leases are held with. */
export class Lock {
  readonly name: string;
  /** @internal */ readonly ttl: number;
  /** @internal */ readonly maxHold: number | undefined;
  /** @internal */ readonly margin: number;
  /** @internal The LIMIT sent with every HOLD; undefined for none (a limit of 1). */
  readonly limit: number | undefined;
  /** @internal The OWNER sent with every HOLD. */
  readonly owner: string;
  readonly #wait: number | undefined;
  readonly #driver: Driver;
  readonly #opts: LockOptions;

  /** @internal */
  constructor(driver: Driver, name: string, opts: LockOptions = {}) {
    const bad = (why: string) => new OptionError(`lock ${JSON.stringify(name)}: ${why}`);
    if (typeof name !== 'string' || Buffer.byteLength(name) === 0 || Buffer.byteLength(name) > maxLockLen) {
      throw bad(`the name must be 1 to ${maxLockLen} bytes`);
    }
    const ttl = opts.ttl === undefined ? defaultTTL : toMs(opts.ttl, 'ttl');
    if (!(ttl >= minTTL && ttl <= maxTTL)) throw bad(`ttl ${show(ttl)}: must be from 1s to 1h`);
    const maxHold = opts.maxHold === undefined ? undefined : toMs(opts.maxHold, 'maxHold');
    if (maxHold !== undefined && !(maxHold >= minMaxHold && maxHold <= maxMaxHold)) {
      throw bad(`maxHold ${show(maxHold)}: must be from 1s to 24h`);
    }
    const wait = opts.wait === undefined ? undefined : toMs(opts.wait, 'wait');
    if (wait !== undefined && wait < 0) throw bad(`wait ${show(wait)}: must not be negative`);
    const margin = opts.margin === undefined ? Math.min(ttl / 10, maxMargin) : toMs(opts.margin, 'margin');
    if (!(margin >= 0 && margin < ttl / 2)) throw bad(`margin ${show(margin)}: must be from 0 to under half the ttl`);
    if (maxHold !== undefined && margin >= maxHold) throw bad(`margin ${show(margin)}: must be under maxHold`);
    const limit = opts.limit;
    if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1 && limit <= maxLimit)) {
      throw bad(`limit ${String(limit)}: must be an integer from 1 to ${maxLimit}`);
    }
    const owner = opts.owner ?? defaultOwner();
    if (typeof owner !== 'string' || Buffer.byteLength(owner) === 0 || Buffer.byteLength(owner) > maxOwnerLen) {
      throw bad(`owner ${JSON.stringify(owner)}: must be 1 to ${maxOwnerLen} bytes`);
    }
    this.#driver = driver;
    this.#opts = { ...opts };
    this.name = name;
    this.ttl = Math.round(ttl);
    this.maxHold = maxHold === undefined ? undefined : Math.round(maxHold);
    this.#wait = wait;
    this.margin = margin;
    this.limit = limit === undefined || limit === 1 ? undefined : limit;
    this.owner = owner;
  }

  /**
   * Waits in line for key, then runs fn while holding it, renewing the
   * lease in the background, and lets the key go when fn settles.
   *
   * Resolves with fn's value if the lease was held until fn settled, and
   * rejects with fn's error if it threw. Rejects with a LostError if the
   * lease was lost before fn settled, **even if fn resolved** (fn's own
   * error, if any, is the LostError's `fnError`); with a NotHeldError,
   * without running fn, if the wait elapsed or options.signal aborted while
   * waiting; with a StoreError if the store refused (a read-only user, a
   * limit other than the key's, LOCK-15).
   *
   * On a lock with a limit, hold holds one of the key's permits: it waits
   * while all are held. With `{ shared: true }` it holds the key as a
   * reader; otherwise alone (a writer), waiting while anyone holds it.
   * Everything above holds of a permit and a reader too.
   */
  hold<T>(key: string, fn: (lease: Lease) => T | Promise<T>, options: HoldOptions = {}): Promise<T> {
    return this.#run(key, fn, false, options);
  }

  /**
   * hold that does not wait in line: a NotHeldError at once if key is held
   * (for a reader: held by a writer, or a writer waits for it).
   */
  tryHold<T>(key: string, fn: (lease: Lease) => T | Promise<T>, options: HoldOptions = {}): Promise<T> {
    return this.#run(key, fn, true, options);
  }

  /**
   * Campaigns in the election key (SPEC §12): waits in line, with no limit
   * but options.signal (the lock's wait does not apply: a candidate waits
   * its turn), until it leads, then runs fn as the leader. value (1 to 256
   * bytes: its address, say) is what leader() and observe() show of it,
   * and `lease.fence` is its term.
   *
   * It is hold with value as the lease's owner, by the same rules:
   * `lease.signal` aborts the moment the leadership is lost (revoked,
   * expired, the store restarted), and campaign then rejects with a
   * LostError even if fn resolved; when fn settles the key is let go,
   * which is resigning, and the next candidate in line leads at once.
   *
   * Whatever a leader writes to a resource that others may write after it
   * should carry its term (SET … FENCE, or the resource's own check of the
   * fence), so that a leader that lost its lease without noticing (a
   * paused process) cannot overwrite its successor's work.
   */
  campaign<T>(key: string, value: string, fn: (lease: Lease) => T | Promise<T>, options: { signal?: AbortSignal } = {}): Promise<T> {
    if (typeof value !== 'string' || Buffer.byteLength(value) === 0 || Buffer.byteLength(value) > maxOwnerLen) {
      return Promise.reject(new OptionError(
        `campaign ${this.name} ${JSON.stringify(key)}: the value must be 1 to ${maxOwnerLen} bytes`));
    }
    const candidate = new Lock(this.#driver, this.name, { ...this.#opts, owner: value, wait: undefined });
    return candidate.hold(key, fn, { signal: options.signal });
  }

  /**
   * The election key's leader now (LOCK.INFO), or null when no one leads.
   * On a key held shared or with a limit it is the newest of its holders.
   */
  async leader(key: string): Promise<Leader | null> {
    const what = `leader of ${this.name} ${JSON.stringify(key)}`;
    let reply: unknown;
    try {
      reply = await this.#driver.read(['LOCK.INFO', this.name, key]);
    } catch (e) {
      if (e instanceof ReplyError) throw refused(what, e);
      throw e;
    }
    return leaderOf(reply);
  }

  /**
   * Follows the election key: yields the current leader (or null: none)
   * first, then every change the store reports (LOCK.WATCH), until
   * options.signal aborts or the loop is left (break, return, throw). A
   * consumer that is slow sees the latest leader, not every one that came
   * and went meanwhile.
   *
   * The fences of the leaders it yields only increase: it never yields a
   * term older than one it yielded. It outlives cut connections, store
   * restarts and cluster failovers by watching again, on a connection of
   * its own, with the last fence it saw: a new epoch shows as null, then
   * the new leader. Errors it may outlast (the network, -TRYAGAIN,
   * -CLUSTERDOWN) it retries every 50 ms to 1 s; a refusal no retry cures
   * (a user that may not read, a store without LOCK.WATCH) ends it with a
   * StoreError.
   *
   * ```ts
   * for await (const ld of lock.observe('main', { signal })) {
   *   console.log(ld === null ? 'no leader' : `${ld.owner} leads, term ${ld.fence}`);
   * }
   * ```
   */
  observe(key: string, options: { signal?: AbortSignal } = {}): AsyncIterable<Leader | null> {
    return observe(this.#driver, this.name, key, options.signal);
  }

  async #run<T>(key: string, fn: (lease: Lease) => T | Promise<T>, tryOnce: boolean, options: HoldOptions): Promise<T> {
    const { signal } = options;
    const shared = options.shared === true;
    const what = `hold ${this.name} ${JSON.stringify(key)}`;
    if (typeof key !== 'string' || Buffer.byteLength(key) === 0 || Buffer.byteLength(key) > maxKeyLen) {
      throw new OptionError(`${what}: the key must be 1 to ${maxKeyLen} bytes`);
    }
    if (typeof fn !== 'function') throw new OptionError(`${what}: no function`);
    if (shared && this.limit !== undefined) throw new OptionError(`${what}: a lock with a limit has no shared holds`);
    if (signal?.aborted) throw new NotHeldError(`${what}: aborted before it waited`, { cause: signal.reason });

    const g = await this.#acquire(what, key, shared, tryOnce, signal);
    const lease = new Lease(this, key, g);
    // A HOLD that waited in line was granted after it was sent, which is
    // what its deadline counts from. Renew before fn starts rather than
    // start fn on a deadline that may soon pass.
    if (now() - g.sent >= this.ttl / 3) await this.#renewBeforeUse(what, lease, g);
    if (signal?.aborted) {
      await this.release(lease.id, lease.deadline);
      throw new NotHeldError(`${what}: aborted as the key was granted`, { cause: signal.reason });
    }

    const stop = new AbortController();
    const keeper = lease.keep(stop.signal);
    let value: T | undefined;
    let failed = false;
    let fnError: unknown;
    try {
      value = await fn(lease);
    } catch (e) {
      failed = true;
      fnError = e;
    }
    stop.abort();
    await keeper;
    const lost = await this.#letGo(lease);
    if (lost !== null) {
      if (failed) lost.fnError = fnError;
      throw lost;
    }
    if (failed) throw fnError;
    return value as T;
  }

  /**
   * Gets key for one request id (SPEC §8). Waiting in line is a chain of
   * HOLDs with that id, each waiting one chunk, each sent (on the other of
   * two connections of the hold's own) a quarter into the previous one's
   * WAIT: the store answers the older one "superseded" and the place never
   * lingers, so no later waiter is served first (LOCK-08). Whichever answer
   * carries the grant wins; a duplicate is the same lease (LOCK-03). A lost
   * answer is asked again with the same id.
   *
   * The last chunk of a bounded wait has no successor, nor has a chunk
   * whose WAIT ran out before its successor went (this process paused): its
   * answer comes first, as it may be the grant, and a HOLD sent long after
   * a grant may reach a store that has forgotten the request id. A grant
   * other than the one kept, from such a HOLD, is let go.
   *
   * A request id is kept only while the store surely remembers it (the
   * request-id window, SPEC §8): a grant to it came no earlier than
   * notBefore, the send time of the oldest HOLD not yet answered null or
   * "superseded", and the store remembers the id for at least the lease's
   * ttl after the lease ends, so until at least notBefore + ttl. A HOLD with
   * the id is sent only while now < notBefore + ttl - margin (the holder's
   * margin, for the time the HOLD takes to reach the store). Past that a
   * lost answer is asked again with a fresh id: the hold joins the line
   * anew, and a lease granted to the old id, if any, is never renewed and
   * runs out; an answer that brings it after all is kept if it comes first,
   * let go if not.
   */
  async #acquire(what: string, key: string, shared: boolean, tryOnce: boolean, signal?: AbortSignal): Promise<Grant> {
    const waitUntil = tryOnce ? now() : this.#wait === undefined ? undefined : now() + this.#wait;
    let last = tryOnce || this.#wait === 0; // the next HOLD is the last try
    const retryEvery = Math.min(this.ttl / 10, maxWaitRetry);
    const window = this.reqidWindow();
    const calls = new HoldCalls(this, new Conns(this.#driver), key, newReqID(), shared);
    const onAbort = () => calls.box.push({ cancelled: true });
    signal?.addEventListener('abort', onAbort, { once: true });

    let failingSince: number | undefined; // the first of the failures since the last answer
    let notBefore: number | undefined; // no grant of the current request id came before this
    const oldNotBefore: number[] = []; // notBefore of each earlier request id (by gen), for its grant's maxHold
    let cur: HoldCall = { seq: 0, sent: 0, wait: 0, open: false }; // the newest HOLD sent
    let nextAt: number | undefined; // when to send the next HOLD; undefined: when cur answers
    // Sends the next HOLD, one chunk (or less, at the end of a bounded
    // wait); false if the wait is over.
    const send = (): boolean => {
      let wait = waitChunk;
      if (last) wait = 0;
      else if (waitUntil !== undefined) {
        let rem = waitUntil - now();
        if (rem <= 0) {
          if (failingSince === undefined) return false;
          // The last HOLD failed: it may have been granted. A last try
          // with the same request id says (past the window: a try with a
          // fresh one).
          rem = 0;
          last = true;
        }
        wait = Math.min(wait, rem);
      }
      if (notBefore !== undefined && now() >= notBefore + window) {
        // The store may have forgotten the request id (SPEC §8): a HOLD
        // with it could get a second lease (LOCK-03). Start over.
        oldNotBefore.push(notBefore);
        calls.restart();
        notBefore = undefined;
      }
      cur = calls.send(wait);
      notBefore ??= cur.sent;
      const final = last || (waitUntil !== undefined && cur.sent + wait >= waitUntil);
      // Within the window too, with room for an answer to move notBefore
      // on before the next successor.
      nextAt = final ? undefined : cur.sent + Math.min(wait, window) / overlapAt;
      return true;
    };
    const waited = () => new NotHeldError(tryOnce || this.#wait === 0
      ? `${what}: held by another`
      : `${what}: waited ${show(this.#wait!)}`);

    let result: { grant: Grant } | { error: Error } | undefined;
    send();
    while (result === undefined) {
      const a = await calls.box.next(nextAt === undefined ? Infinity : nextAt - now());
      if (a === STOPPED) continue;
      if (a === TIMEOUT) {
        if (cur.open && now() >= cur.sent + cur.wait) {
          // cur's WAIT has run out: too late to overlap it (this process
          // paused, or is overloaded), and its answer is due.
          nextAt = undefined;
        } else if (cur.open && now() >= notBefore! + window) {
          // Answers are late (replies lost, or this process paused): cur
          // may have been granted, and a successor may reach a store that
          // has forgotten the request id. cur's answer is due.
          nextAt = undefined;
        } else if (calls.inFlight >= maxHoldsInFlight) {
          nextAt = undefined; // older HOLDs hang: the next goes when one answers
          calls.stalled = true;
        } else if (!send()) {
          nextAt = undefined; // the wait is over: cur's answer ends it
        }
        continue;
      }
      if ('cancelled' in a) {
        result = { error: await this.#abandon(what, calls, retryEvery, signal!, notBefore! + window) };
        break;
      }
      calls.inFlight--;
      const out = a.out;
      if (a.gen !== calls.gen) {
        // A HOLD of an earlier request id: its grant is a lease as good as
        // any; anything else it says is of no concern any more.
        if (out.ok && out.grant !== null) {
          result = { grant: { ...out.grant, notBefore: oldNotBefore[a.gen] } };
          break;
        }
        if (calls.stalled) {
          calls.stalled = false;
          nextAt = now();
        }
        continue;
      }
      const newest = a.seq === cur.seq;
      if (newest) cur.open = false;
      if (out.ok && out.grant !== null) {
        result = { grant: { ...out.grant, notBefore: notBefore! } };
        break;
      }
      const error = out.ok ? undefined : out.error;
      if (out.ok || (!newest && superseded(error))) {
        // Not granted when the store answered, which was after this HOLD
        // was sent: neither was any earlier one (LOCK-03). A HOLD that
        // failed may have been granted: it does not move notBefore.
        notBefore = Math.max(notBefore!, out.sent);
      }
      if (!newest && (out.ok || transient(error))) {
        // An older chunk: its WAIT ran out, it was superseded by the newer
        // one, or it failed; the newer one carries on.
        if (calls.stalled) {
          calls.stalled = false;
          nextAt = now();
        }
        continue;
      }
      if (out.ok) {
        // Not granted within its WAIT; the place lingers.
        failingSince = undefined;
        if (last || !send()) result = { error: waited() };
        continue;
      }
      const reason = lostReason(error);
      if (reason !== undefined) {
        // Granted, but the answer was lost and the lease ended before this
        // retry: fn never ran.
        result = { error: new NotHeldError(`${what}: the grant's answer was lost, and then the lease: ${reason}`) };
      } else if (!transient(error)) {
        result = { error: refused(what, error) };
      } else if (now() - (failingSince ??= out.sent) > this.ttl) {
        // Any lease granted on the way has run out by now.
        result = { error: new StoreError(`${what}: no answer for ${show(this.ttl)}: ${describe(error)}`, '') };
      } else {
        nextAt = out.sent + retryEvery; // retry the newest, after a pause
        if (waitUntil !== undefined && now() >= waitUntil) nextAt = now(); // send makes it the last try
      }
    }
    signal?.removeEventListener('abort', onAbort);
    calls.settle('grant' in result ? result.grant.id : undefined);
    if ('grant' in result) return result.grant;
    throw result.error;
  }

  /**
   * Stops waiting for reqid once the user's signal aborts. A HOLD with the
   * same reqid and WAIT 0 answers the blocked one at once (superseded),
   * leaves the place to linger, passed over, and says whether a grant came
   * first (then it is that grant, LOCK-03, and it is let go). An answer lost
   * on the way says nothing: it is asked again until the store answers or
   * a ttl has passed (any grant has run out by then). A probe goes only
   * before sendBy, the end of the request id's window (SPEC §8): later, the
   * store may have forgotten the id and would grant the probe a second
   * lease. A lease granted before, its answer lost, runs out unrenewed.
   */
  async #abandon(what: string, calls: HoldCalls, retryEvery: number, signal: AbortSignal, sendBy: number): Promise<Error> {
    const giveUp = now() + this.ttl;
    for (;;) {
      if (now() >= sendBy) break;
      const probe = await this.sendHold(calls.conns, calls.key, calls.reqid, 0, calls.shared);
      if (probe.ok) {
        if (probe.grant !== null) await this.release(probe.grant.id, probe.grant.received + probe.grant.left);
        break;
      }
      if (!transient(probe.error) || superseded(probe.error) || now() >= giveUp) break;
      await sleep(retryEvery);
    }
    return new NotHeldError(`${what}: aborted while waiting in line`, { cause: signal.reason });
  }

  /**
   * @internal How long after notBefore (no grant to a request id came
   * earlier) a HOLD may still carry that id (SPEC §8). The store remembers
   * an id for at least the lease's ttl after the lease ends, and the lease
   * starts at the grant, so until at least notBefore + ttl by its clock; the
   * holder's margin is for the time the HOLD takes to get there.
   */
  reqidWindow(): number {
    return this.ttl - this.margin;
  }

  /**
   * @internal Sends one HOLD with WAIT wait on a connection of the hold's
   * own. Every HOLD of one request id carries the same LIMIT, SHARED and
   * OWNER: a retry with another limit would be refused (LOCK-15).
   */
  async sendHold(conns: Conns, key: string, reqid: string, wait: number, shared: boolean): Promise<HoldOutcome> {
    let conn: Conn;
    try {
      conn = await conns.take();
    } catch (error) {
      return { ok: false, sent: now(), error };
    }
    // WAIT rounds up: a wait is waited in full.
    const args = ['LOCK.HOLD', this.name, key, reqid, 'TTL', String(this.ttl), 'WAIT', String(Math.ceil(wait))];
    if (this.maxHold !== undefined) args.push('MAXHOLD', String(this.maxHold));
    if (this.limit !== undefined) args.push('LIMIT', String(this.limit));
    else if (shared) args.push('SHARED');
    args.push('OWNER', this.owner);
    const sent = now();
    try {
      const reply = await within(conn.send(args), wait + replyGrace);
      if (reply === TIMEOUT) {
        conns.drop(conn);
        return { ok: false, sent, error: new Error(`no answer to LOCK.HOLD within ${show(wait + replyGrace)}`) };
      }
      conns.give(conn);
      return { ok: true, sent, grant: parseGrant(reply, sent, now()) };
    } catch (error) {
      if (error instanceof ReplyError) conns.give(conn);
      else conns.drop(conn);
      return { ok: false, sent, error };
    }
  }

  /** @internal */
  async renew(id: string): Promise<number> {
    return Number(await this.#driver.call(['LOCK.RENEW', id]));
  }

  /**
   * Renews a lease that was granted after waiting in line, before fn
   * starts. The store's deadline is at most the answer's arrival plus the
   * ttl it answered: renewals are tried until then.
   */
  async #renewBeforeUse(what: string, lease: Lease, g: Grant): Promise<void> {
    const ended = await attempts(g.received + g.left, this.ttl / 10, () => this.renew(lease.id), isLost);
    if (ended.kind === 'answered') {
      if (ended.out.ok) {
        lease.renewedBeforeUse(ended.out.sent, ended.out.value);
        return;
      }
      throw new NotHeldError(`${what}: the lease ended before the function started: ${lostReason(ended.out.error)}`);
    }
    await this.release(lease.id, now() + this.ttl / 10);
    const last = ended.kind === 'gaveUp' ? ended.last : undefined;
    throw new StoreError(`${what}: renew after the grant: ${describe(last)}`, '');
  }

  /**
   * Lets the lease go once fn has settled (SPEC §8): releases it with its
   * id, retried until the holder's deadline. Returns why the lease was
   * lost, if it was before fn settled; a RELEASE answered -LOST says so too.
   *
   * A reason the holder already knows stands: the store's answer replaces
   * it only when it tells more. After the holder's own deadline passed, a
   * store that forgot the ended lease answers "unknown lease", which is not
   * news; an admin's revoke that came first is, and so is a restart (the
   * store's epoch is newer than the fence's). The holder's "expired" or
   * "revoked maxhold" is how the store itself ends the lease, a margin
   * later: the store's saying so is not news either.
   */
  async #letGo(lease: Lease): Promise<LostError | null> {
    const ours = lease.end();
    if (ours === null) {
      const storeSays = await this.release(lease.id, lease.deadline);
      if (storeSays !== null) lease.lose(storeSays);
      return storeSays;
    }
    if (ours.fromStore) return ours;
    // Given up by the holder's clock: the store may still hold it for a
    // margin. One try hands it to the next in line early, and may say what
    // the store knows.
    const storeSays = await this.release(lease.id, now() + this.ttl / 10);
    if (storeSays === null) return ours;
    const tellsMore = storeSays.reason === Reason.revoked ||
      (storeSays.reason === Reason.unknownLease && await this.#epochChanged(lease));
    return tellsMore ? storeSays : ours;
  }

  /**
   * Whether the store is in a newer epoch than the one that granted the
   * lease (fence >> 32, SPEC §2): it restarted since (LOCK-10). Unknown
   * counts as no.
   */
  async #epochChanged(lease: Lease): Promise<boolean> {
    try {
      const info = String(await within(this.#driver.call(['INFO', 'locks']), this.ttl / 10));
      const m = info.match(/^epoch:(\d+)/m);
      return m !== null && BigInt(m[1]!) > lease.fence >> 32n;
    } catch {
      return false;
    }
  }

  /**
   * Releases lease id: RELEASE, retried with the same id until one is
   * answered or `until` passes. Returns the store's -LOST answer, if any
   * but "released" (a retry of a RELEASE that did release).
   */
  /** @internal */
  async release(id: string, until: number): Promise<LostError | null> {
    const ended = await attempts(until, this.ttl / 10, () => this.#driver.call(['LOCK.RELEASE', id]), isLost);
    if (ended.kind !== 'answered' || ended.out.ok) return null;
    const reason = lostReason(ended.out.error);
    return reason === undefined || reason === Reason.released ? null : new LostError(reason, true);
  }
}

type HoldOutcome = { ok: true; sent: number; grant: Grant | null } | { ok: false; sent: number; error: unknown };
type Arrival = { seq: number; gen: number; out: HoldOutcome } | { cancelled: true };

/** One HOLD that acquire sent. */
interface HoldCall {
  seq: number;
  sent: number;
  wait: number;
  /** not answered yet */
  open: boolean;
}

/**
 * The HOLDs of one request id. While acquire runs, their answers go to
 * box; once it has settled, an answer that carries a grant other than the
 * one it kept (a HOLD that reached the store after it forgot the request
 * id) is let go, and the connections are closed once every HOLD answered.
 */
class HoldCalls {
  readonly box = new Mailbox<Arrival>();
  inFlight = 0;
  /** the next HOLD waits for one in flight to answer */
  stalled = false;
  #seq = 0;
  /** how many times acquire drew a fresh request id (restart) */
  gen = 0;
  #settled = false;
  #kept: string | undefined;

  constructor(
    readonly lock: Lock, readonly conns: Conns, readonly key: string, public reqid: string, readonly shared: boolean,
  ) {}

  /** Draws a fresh request id for the HOLDs sent from now on. */
  restart(): void {
    this.reqid = newReqID();
    this.gen++;
  }

  send(wait: number): HoldCall {
    const call = { seq: ++this.#seq, sent: now(), wait, open: true };
    const gen = this.gen;
    this.inFlight++;
    void this.lock.sendHold(this.conns, this.key, this.reqid, wait, this.shared).then(async (out) => {
      if (!this.#settled) {
        this.box.push({ seq: call.seq, gen, out });
        return;
      }
      this.inFlight--;
      await this.#letGoUnkept(out);
      if (this.inFlight === 0) this.conns.closeAll();
    });
    return call;
  }

  /** acquire is done: kept is the lease it returned, if any. */
  settle(kept: string | undefined): void {
    this.#settled = true;
    this.#kept = kept;
    void (async () => {
      for (let a = await this.box.next(0); a !== TIMEOUT && a !== STOPPED; a = await this.box.next(0)) {
        if ('out' in a) {
          this.inFlight--;
          await this.#letGoUnkept(a.out);
        }
      }
      if (this.inFlight === 0) this.conns.closeAll();
    })();
  }

  async #letGoUnkept(out: HoldOutcome): Promise<void> {
    if (out.ok && out.grant !== null && out.grant.id !== this.#kept) {
      await this.lock.release(out.grant.id, out.grant.received + out.grant.left);
    }
  }
}

const isLost = (e: unknown) => lostReason(e) !== undefined;

/** A request id: 128 random bits as 32 hex characters. */
const newReqID = () => randomBytes(16).toString('hex');

function refused(what: string, e: unknown): Error {
  const line = e instanceof ReplyError ? e.message : describe(e);
  return new StoreError(`${what}: the store refused: ${line}`, line);
}

/** A HOLD's reply: null (not granted within WAIT) or [leaseid, fence, ttl left]. */
function parseGrant(reply: unknown, sent: number, received: number): Grant | null {
  if (reply === null) return null;
  if (Array.isArray(reply) && reply.length === 3) {
    const [id, fence, left] = reply;
    const f = typeof fence === 'bigint' || typeof fence === 'string' ? BigInt(fence) : undefined;
    if (typeof id === 'string' && id.length === 32 && f !== undefined && f > 0n) {
      return { id, fence: f, left: Number(left), sent, received, notBefore: sent };
    }
  }
  throw new Error(`LOCK.HOLD replied ${String(reply)}, want [leaseid fence ttl]`);
}

/**
 * The connections of one hold's wait in line: duplicates of the user's
 * client, so that it is never blocked behind a waiting HOLD. With the
 * overlap of chunks two are in use, alternating; a broken one is dropped
 * and a new one opened.
 */
class Conns {
  readonly #driver: Driver;
  readonly #idle: Conn[] = [];
  readonly #all = new Set<Conn>();
  #closed = false;

  constructor(driver: Driver) {
    this.#driver = driver;
  }

  async take(): Promise<Conn> {
    const c = this.#idle.pop();
    if (c !== undefined) return c;
    const fresh = await this.#driver.open();
    if (this.#closed) {
      fresh.close();
      throw new Error('the hold is over');
    }
    this.#all.add(fresh);
    return fresh;
  }

  give(c: Conn): void {
    if (this.#closed) c.close();
    else this.#idle.push(c);
  }

  drop(c: Conn): void {
    this.#all.delete(c);
    c.close();
  }

  closeAll(): void {
    this.#closed = true;
    for (const c of this.#all) c.close();
    this.#all.clear();
    this.#idle.length = 0;
  }
}
