// The two Redis clients the SDK runs on, told apart by their shape: node-redis
// (`redis` 5 and later: sendCommand, duplicate) and ioredis (5 and later:
// call, duplicate). The SDK needs of them only to send a command and to make
// a connection of its own; it never changes the user's client.

import { ReplyError, OptionError } from './errors.js';

/** A connection of the SDK's own (a duplicate of the user's client). */
export interface Conn {
  /** Sends one command; integers in the reply come as bigint or string. */
  send(args: string[]): Promise<unknown>;
  /** Drops the connection at once; a command in flight fails. */
  close(): void;
}

export interface Driver {
  /** Sends one command on the user's client. */
  call(args: string[]): Promise<unknown>;
  /**
   * Sends one command on the user's client, its integers as strings or
   * bigints where a number would lose digits (fences past 2^53).
   */
  read(args: string[]): Promise<unknown>;
  /** Opens a duplicate of the user's client that does not reconnect. */
  open(): Promise<Conn>;
}

/** What either client looks like, as far as the SDK touches it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any;

const noop = () => {};

/** The driver for a node-redis or ioredis client; an OptionError for anything else. */
export function driverFor(client: AnyClient): Driver {
  if (client && typeof client.call === 'function' && typeof client.callBuffer === 'function' &&
    typeof client.duplicate === 'function') {
    return ioredisDriver(client);
  }
  if (client && typeof client.sendCommand === 'function' && typeof client.duplicate === 'function') {
    return nodeRedisDriver(client);
  }
  throw new OptionError('tenure(client): want a node-redis client (createClient) or an ioredis client (new Redis)');
}

// node-redis names its error replies ErrorReply (SimpleError and BlobError
// extend it); ioredis, ReplyError. Anything else failed on the way.
function reply(e: unknown): unknown {
  if (!(e instanceof Error)) return e;
  for (let p = Object.getPrototypeOf(e); p && p !== Error.prototype; p = Object.getPrototypeOf(p)) {
    const n = p.constructor?.name;
    if (n === 'ErrorReply' || n === 'ReplyError') return new ReplyError(e.message);
  }
  return e;
}

async function sent<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (e) {
    throw reply(e);
  }
}

// RESP_TYPES.NUMBER of node-redis, the integer reply (':'), mapped to a
// string: fences pass 2^53 once the epoch does.
const RESP_NUMBER = 58;

// A node-redis cluster (createCluster: a tenure cluster, SPEC §10) takes
// a command's routing key first: a LOCK.HOLD goes where its lock name's
// slot lives, anything else to any node, which redirects to the leader.
function routingKey(args: string[]): string | undefined {
  return args[0].toUpperCase() === 'LOCK.HOLD' ? args[1] : undefined;
}

function nodeRedisDriver(client: AnyClient): Driver {
  const cluster = typeof client.nodeClient === 'function';
  const send = (c: AnyClient, args: string[], options?: object) =>
    cluster ? c.sendCommand(routingKey(args), false, args, options) : c.sendCommand(args, options);
  return {
    call: (args) => sent(send(client, args)),
    read: (args) => sent(send(client, args, { typeMapping: { [RESP_NUMBER]: String } })),
    async open() {
      const o = client.options ?? {};
      // Its own connection fails rather than queues or reconnects: the SDK
      // retries on a new one, with the same request id.
      const dup = cluster
        ? client.duplicate({
          defaults: { ...o.defaults, socket: { ...o.defaults?.socket, reconnectStrategy: false }, disableOfflineQueue: true },
        })
        : client.duplicate({
          socket: { ...o.socket, reconnectStrategy: false },
          disableOfflineQueue: true,
        });
      dup.on('error', noop);
      try {
        await dup.connect();
      } catch (e) {
        dup.destroy?.();
        throw reply(e);
      }
      return {
        send: (args) => sent(send(dup, args, { typeMapping: { [RESP_NUMBER]: String } })),
        close() {
          try {
            if (typeof dup.destroy === 'function') dup.destroy();
            else dup.disconnect().catch(noop);
          } catch {
            // already closed
          }
        },
      };
    },
  };
}

function ioredisDriver(client: AnyClient): Driver {
  const d: Driver = {
    call: (args) => sent(client.call(args[0], ...args.slice(1))),
    // ioredis parses integers as numbers unless its connection says
    // stringNumbers: a reply with one past 2^53 is asked again on a
    // connection of the SDK's own that does.
    async read(args) {
      const r = await d.call(args);
      if (!unsafe(r)) return r;
      const conn = await d.open();
      try {
        return await conn.send(args);
      } finally {
        conn.close();
      }
    },
    async open() {
      const perNode = {
        stringNumbers: true, // fences past 2^53
        retryStrategy: () => null,
        maxRetriesPerRequest: 0,
        autoResendUnfulfilledCommands: false,
        reconnectOnError: null,
      };
      // An ioredis Cluster (a tenure cluster, SPEC §10) takes its nodes'
      // options apart, and follows -MOVED to the leader itself.
      const dup = client.isCluster
        ? client.duplicate(undefined, {
          lazyConnect: true,
          enableOfflineQueue: false,
          clusterRetryStrategy: () => null,
          redisOptions: { ...client.options?.redisOptions, ...perNode },
        })
        : client.duplicate({ lazyConnect: true, enableOfflineQueue: false, ...perNode });
      dup.on('error', noop);
      try {
        await dup.connect();
      } catch (e) {
        dup.disconnect();
        throw reply(e);
      }
      return {
        send: (args) => sent(dup.call(args[0], ...args.slice(1))),
        close: () => dup.disconnect(),
      };
    },
  };
  return d;
}

/** Whether a reply holds a number that may have lost digits. */
function unsafe(r: unknown): boolean {
  if (typeof r === 'number') return !Number.isSafeInteger(r) && Number.isInteger(r);
  if (Array.isArray(r)) return r.some(unsafe);
  return false;
}
