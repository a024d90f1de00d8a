import { LostError, Reason, lostReason } from './errors.js';
import { attempts, now, sleep } from './timing.js';

/** A HOLD's grant, with the local times around it (monotonic ms). */
export interface Grant {
  id: string;
  fence: bigint;
  /** ttl left when the store answered, ms */
  left: number;
  /** when this HOLD was sent: the deadline counts from it */
  sent: number;
  received: number;
  /**
   * No later than the grant: the send time of the oldest HOLD of the
   * request id that may have been the one granted. MaxHold counts from it
   * (LOCK-07). Set by acquire.
   */
  notBefore: number;
}

/** What a Lease needs of its Lock. */
export interface Keeping {
  ttl: number;
  margin: number;
  maxHold: number | undefined;
  renew(id: string): Promise<number>;
}

/**
 * One grant of a key to this holder, handed to the function of `hold`.
 * Its fence and signal are what the function uses: the fence goes with
 * every write the lease protects, the signal goes to every call that
 * should stop when the lease is lost.
 */
export class Lease {
  /** The key held, within its lock. */
  readonly key: string;
  /**
   * The fencing token: larger than every fence granted before, on any lock
   * and key, restarts of the store included (LOCK-02). A bigint, since
   * fences pass 2^53 once the store's epoch does.
   */
  readonly fence: bigint;
  /**
   * Aborted the moment the lease is lost, with the LostError as its
   * reason. Pass it to every call the lease protects.
   */
  readonly signal: AbortSignal;

  readonly #ctl = new AbortController();
  readonly #lock: Keeping;
  /** @internal the lease id: renews and releases, never leaves the SDK (LOCK-04) */
  readonly id: string;
  /** notBefore + maxHold - margin, if maxHold: no later than the store's cap less the margin */
  readonly #maxCap: number | undefined;
  /** send time of the last HOLD or RENEW that succeeded */
  #sent: number;
  #deadline = 0;
  /** the deadline is the MaxHold cap (the store's or ours) */
  #atMax = false;
  /** the last renewal failure since the last success */
  #lastErr: unknown;
  #lost: LostError | null = null;
  /** fn has settled: only the store's word can lose the lease now */
  #over = false;

  /** @internal */
  constructor(lock: Keeping, key: string, g: Grant) {
    this.#lock = lock;
    this.key = key;
    this.fence = g.fence;
    this.id = g.id;
    this.signal = this.#ctl.signal;
    // The store granted no earlier than notBefore, so its MAXHOLD deadline
    // is no earlier than this (LOCK-07).
    this.#maxCap = lock.maxHold === undefined ? undefined : g.notBefore + lock.maxHold - lock.margin;
    this.#sent = g.sent;
    this.#setDeadline(g.sent, g.left, false);
  }

  /**
   * The LostError once the lease is lost, else null. It compares the
   * holder's deadline with the clock itself, so a holder that wakes from a
   * pause longer than its ttl learns of the loss at once, before any timer
   * has run.
   */
  get lost(): LostError | null {
    this.check(now());
    return this.#lost;
  }

  /**
   * The holder's deadline, in ms on the `performance.now()` clock: the send
   * time of the last HOLD or RENEW that succeeded, plus the ttl the store
   * answered, less the margin, capped at maxHold - margin after the send
   * of the oldest HOLD that may have been granted. When it
   * passes without a renewal, the lease is lost.
   */
  get deadline(): number {
    return this.#deadline;
  }

  #setDeadline(sent: number, left: number, capped: boolean): void {
    let d = sent + left - this.#lock.margin;
    this.#atMax = capped;
    if (this.#maxCap !== undefined) {
      if (capped) {
        // sent + left and the cap are two lower bounds of the same MAXHOLD
        // deadline (less the margin): the later is the closer.
        d = Math.max(d, this.#maxCap);
      } else if (d >= this.#maxCap) {
        d = this.#maxCap;
        this.#atMax = true;
      }
    }
    this.#sent = sent;
    this.#deadline = d;
  }

  /**
   * @internal A RENEW sent at `sent` answered `left`. A success that arrives
   * after the holder's deadline does not revive the lease.
   */
  renewed(sent: number, left: number): void {
    if (this.check(now()) || sent <= this.#sent) return;
    this.#setDeadline(sent, left, left < this.#lock.ttl);
    this.#lastErr = undefined;
  }

  /**
   * @internal The renewal made before fn starts, which the deadline of a
   * grant that waited in line may have passed: the lease was not in use
   * yet, and the store kept it.
   */
  renewedBeforeUse(sent: number, left: number): void {
    this.#setDeadline(sent, left, left < this.#lock.ttl);
  }

  /** @internal Loses the lease if its deadline has passed at t; says whether it is lost. */
  check(t: number): boolean {
    if (this.#lost !== null) return true;
    if (this.#over || t < this.#deadline) return false;
    this.lose(new LostError(this.#atMax ? Reason.maxHold : Reason.expired, false, this.#lastErr));
    return true;
  }

  /** @internal Marks the lease lost for e unless it already is, and aborts the signal. */
  lose(e: LostError): void {
    if (this.#lost !== null) return;
    this.#lost = e;
    this.#ctl.abort(e);
  }

  /** @internal fn has settled: returns the loss so far. */
  end(): LostError | null {
    this.check(now());
    this.#over = true;
    return this.#lost;
  }

  /**
   * @internal Renews the lease while fn runs (SPEC §8): at the latest ttl/3
   * after the last success; after a failure, again at least every ttl/10
   * on any connection the user's client has, until the holder's deadline.
   * Returns when the lease is lost or stop aborts.
   */
  async keep(stop: AbortSignal): Promise<void> {
    const { ttl } = this.#lock;
    const renewEvery = ttl / 3;
    const retryEvery = ttl / 10;
    for (;;) {
      const deadline = this.#deadline;
      // Capped at MaxHold, nothing is left to renew for past the deadline.
      await sleep(Math.min(this.#sent + renewEvery, deadline) - now(), stop);
      if (stop.aborted || this.check(now())) return;
      const ended = await attempts(deadline, retryEvery, async () => {
        try {
          return await this.#lock.renew(this.id);
        } catch (e) {
          if (lostReason(e) === undefined) this.#lastErr = e;
          throw e;
        }
      }, (e) => lostReason(e) !== undefined, stop);
      switch (ended.kind) {
        case 'stopped':
          return;
        case 'gaveUp':
          // attempts gave up at the deadline, which check sees as passed;
          // else the clock went backwards.
          if (!this.check(now())) this.lose(new LostError(Reason.expired, false, ended.last));
          return;
        case 'answered':
          if (!ended.out.ok) {
            this.lose(new LostError(lostReason(ended.out.error)!, true));
            return;
          }
          this.renewed(ended.out.sent, ended.out.value);
      }
      if (this.check(now())) return;
    }
  }
}
