// The clock and the waiting the SDK does, none of which keeps a process
// alive: every timer is unref'd.

/** The local monotonic clock, in ms. */
export const now = (): number => performance.now();

export const TIMEOUT = Symbol('timeout');
export const STOPPED = Symbol('stopped');

/**
 * A queue of arrivals (answers, cancellations) that one task waits on, with
 * a timeout and a stop signal.
 */
export class Mailbox<T> {
  #items: T[] = [];
  #waiter: ((v: T) => void) | undefined;

  push(x: T): void {
    const w = this.#waiter;
    if (w) {
      this.#waiter = undefined;
      w(x);
    } else {
      this.#items.push(x);
    }
  }

  /** The next arrival, or TIMEOUT after ms, or STOPPED once stop aborts. */
  next(ms: number, stop?: AbortSignal): Promise<T | typeof TIMEOUT | typeof STOPPED> {
    if (this.#items.length > 0) return Promise.resolve(this.#items.shift()!);
    if (stop?.aborted) return Promise.resolve(STOPPED);
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = (v: T | typeof TIMEOUT | typeof STOPPED) => {
        if (timer !== undefined) clearTimeout(timer);
        stop?.removeEventListener('abort', onStop);
        this.#waiter = undefined;
        resolve(v);
      };
      const onStop = () => done(STOPPED);
      this.#waiter = done;
      if (ms !== Infinity) timer = setTimeout(() => done(TIMEOUT), Math.max(0, ms)).unref();
      stop?.addEventListener('abort', onStop, { once: true });
    });
  }
}

/** Resolves after ms (unref'd), or at once when stop aborts. */
export function sleep(ms: number, stop?: AbortSignal): Promise<void> {
  return new Mailbox<never>().next(ms, stop).then(() => undefined);
}

/** p's outcome, or TIMEOUT after ms; p's later failure is swallowed. */
export function within<T>(p: Promise<T>, ms: number): Promise<T | typeof TIMEOUT> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve(TIMEOUT), Math.max(0, ms)).unref();
    p.then(
      (v) => { clearTimeout(timer); resolve(v); },
      (e) => { clearTimeout(timer); reject(e); },
    );
  });
}

/** One attempt's outcome and when it was sent. */
export type Outcome<T> = { sent: number; ok: true; value: T } | { sent: number; ok: false; error: unknown };

export type Ended<T> =
  | { kind: 'answered'; out: Outcome<T> }
  | { kind: 'gaveUp'; last: unknown }
  | { kind: 'stopped' };

/**
 * maxInFlight bounds the attempts of one renewal or release outstanding at
 * once: a reply lost by the network can hold its attempt for long, and the
 * next one must not wait for it.
 */
const maxInFlight = 3;

/**
 * Runs op until an attempt succeeds or fails decisively. A new attempt
 * starts every `every` ms while none has answered, up to maxInFlight
 * outstanding, so one whose reply is lost does not hold up the next. Gives
 * up when `until` (on the monotonic clock) passes, or stops when stop
 * aborts. Attempts still outstanding then run to their end, their outcome
 * ignored (never an unhandled rejection).
 */
export async function attempts<T>(
  until: number, every: number, op: () => Promise<T>, decisive: (e: unknown) => boolean, stop?: AbortSignal,
): Promise<Ended<T>> {
  const box = new Mailbox<Outcome<T>>();
  let inFlight = 0;
  let nextTry = now();
  let last: unknown = new Error('no attempt answered in time');
  for (;;) {
    const t = now();
    if (t >= until) return { kind: 'gaveUp', last };
    if (t >= nextTry) {
      nextTry = t + every;
      if (inFlight < maxInFlight) {
        inFlight++;
        const sent = now();
        op().then(
          (value) => box.push({ sent, ok: true, value }),
          (error) => box.push({ sent, ok: false, error }),
        );
      }
    }
    const r = await box.next(Math.min(nextTry, until) - now(), stop);
    if (r === STOPPED) return { kind: 'stopped' };
    if (r === TIMEOUT) continue;
    inFlight--;
    if (r.ok || decisive(r.error)) return { kind: 'answered', out: r };
    last = r.error;
  }
}
