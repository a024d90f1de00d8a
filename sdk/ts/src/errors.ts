// The errors of the SDK, classes for instanceof, and the store's reasons
// (SPEC §4).

/** Reasons a lease is lost, as the store spells them after `-LOST ` (SPEC §4). */
export const Reason = {
  expired: 'expired',
  maxHold: 'revoked maxhold',
  revoked: 'revoked by admin',
  released: 'released',
  unknownLease: 'unknown lease',
} as const;

/** The base class of every error this package throws. */
export class TenureError extends Error {
  override name = 'TenureError';
}

/**
 * The lease was lost before the function settled, so another holder may
 * have held the key beside it. `hold` rejects with it even when the function
 * resolved; `lease.signal` is aborted with it as its reason.
 */
export class LostError extends TenureError {
  override name = 'LostError';
  /** The store's word after `-LOST`, or `expired` / `revoked maxhold` for the holder's own deadline. */
  readonly reason: string;
  /** Whether the store said so; false when the holder's deadline passed first. */
  readonly fromStore: boolean;
  /** What the function threw, when it threw as well. */
  fnError?: unknown;

  constructor(reason: string, fromStore: boolean, cause?: unknown) {
    let msg = `lease lost: ${reason}`;
    if (!fromStore) {
      msg += " (holder's deadline passed";
      if (cause !== undefined) msg += `; last renewal: ${describe(cause)}`;
      msg += ')';
    }
    super(msg, cause === undefined ? undefined : { cause });
    this.reason = reason;
    this.fromStore = fromStore;
  }
}

/**
 * The function did not run because the key was not held: tryHold found it
 * held, the wait elapsed, the caller's signal aborted while waiting in line
 * (then `cause` is the signal's reason), or the grant ended before the
 * function could start. Trying again may succeed.
 */
export class NotHeldError extends TenureError {
  override name = 'NotHeldError';
}

/**
 * The store refused the request for good: a read-only user (`NOPERM`), a
 * connection not authenticated (`NOAUTH`), or another error reply no retry
 * cures. `reply` is the store's error line.
 */
export class StoreError extends TenureError {
  override name = 'StoreError';
  readonly reply: string;
  constructor(message: string, reply: string) {
    super(message);
    this.reply = reply;
  }
}

/** An option or argument out of range (a programming error). */
export class OptionError extends TenureError {
  override name = 'OptionError';
}

/** An error reply from the store, as the drivers hand it on. */
export class ReplyError extends Error {
  override name = 'ReplyError';
}

export function describe(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** The reason of a `-LOST` reply, or undefined. */
export function lostReason(e: unknown): string | undefined {
  if (e instanceof ReplyError && e.message.startsWith('LOST ')) return e.message.slice(5);
  return undefined;
}

/**
 * Whether an error is worth a retry with the same request: the network
 * failed (or the reply was lost), or the store answered an error a later
 * try can cure. Any other error reply is final.
 */
export function transient(e: unknown): boolean {
  if (!(e instanceof ReplyError)) return true;
  return [
    'ERR superseded', // one of our own retries took the place over
    'ERR server is shutting down',
    'ERR max number of clients',
    'LOADING ', 'TRYAGAIN ', 'BUSY ',
    'CLUSTERDOWN ', // a cluster between leaders (SPEC §10), as the other SDKs take it
  ].some((p) => e.message.startsWith(p));
}

export function superseded(e: unknown): boolean {
  return e instanceof ReplyError && e.message.startsWith('ERR superseded');
}
