/**
 * @tenure-db/locks: leases with fencing tokens on a tenure store, over the
 * user's node-redis or ioredis client.
 *
 * What it is for: making sure that, most of the time, one worker does a
 * piece of work, and learning when that could not be made sure. What it is
 * not for: a lease cannot stop code that ignores its signal, nor a write
 * already on the wire; whatever the holder writes to must check the fence.
 *
 * @module
 */

import { driverFor } from './driver.js';
import { Lock, type LockOptions } from './lock.js';

export { Lock, type LockOptions, type HoldOptions } from './lock.js';
export { Lease } from './lease.js';
export type { Leader } from './election.js';
export { LostError, NotHeldError, OptionError, Reason, StoreError, TenureError } from './errors.js';
export type { Duration } from './duration.js';

/** A tenure store, reached through the user's client. */
export interface Store {
  /**
   * The lock called name (1 to 256 bytes), with the options its leases are
   * held with. It sends nothing; an option out of range throws an
   * OptionError.
   */
  lock(name: string, options?: LockOptions): Lock;
}

/**
 * The store behind a connected client: a node-redis client (`redis` 5 or
 * later, `createClient()`, RESP2 or RESP3) or an ioredis client (5 or later,
 * `new Redis()`), told apart by their methods. The SDK sends renewals and
 * releases on that client, and waits in line on duplicates of it
 * (`duplicate()`), opened per hold and closed once it is granted, so the
 * client is never blocked behind a waiting HOLD.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function tenure(client: any): Store {
  const driver = driverFor(client);
  return { lock: (name, options) => new Lock(driver, name, options) };
}
