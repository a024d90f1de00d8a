// The real server for the tests, and the clients the SDK runs on: the
// binary test/build.mjs built from cmd/tenure, started on a free loopback
// port with a data directory of its own; node-redis 5, node-redis 6 and
// ioredis 5 connected to it.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import * as redis5 from 'redis5';
import * as redis6 from 'redis6';
import { Redis } from 'ioredis';

// TENURE_BIN runs the suite against another build of the server.
const bin = process.env.TENURE_BIN ?? join(dirname(fileURLToPath(import.meta.url)), '..', '.build', 'tenure');

export const sha256 = (s) => createHash('sha256').update(s).digest('hex');

/** A running tenure server; stop() kills it and removes its directory. */
export class Server {
  constructor(dir, users) {
    this.dir = dir;
    this.users = users;
    this.child = null;
    this.port = 0;
  }

  static async start({ users } = {}) {
    const dir = mkdtempSync(join(tmpdir(), 'tenure-ts-'));
    let usersFile;
    if (users !== undefined) {
      usersFile = join(dir, 'users.conf');
      writeFileSync(usersFile, users);
    }
    const s = new Server(dir, usersFile);
    await s.#spawn('127.0.0.1:0');
    return s;
  }

  async #spawn(addr) {
    const giveUp = Date.now() + 10_000;
    for (;;) {
      const args = ['--addr', addr, '--fsync', 'no', '--log-level', 'info', '--dir', join(this.dir, 'data')];
      if (this.users) args.push('--users', this.users);
      const child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
      const port = await new Promise((resolve) => {
        let buf = '';
        let said = false;
        child.stderr.on('data', (d) => {
          if (said) return;
          buf += d;
          const m = buf.match(/ready to accept connections.* addr=127\.0\.0\.1:(\d+)/);
          if (m) {
            said = true;
            resolve(Number(m[1]));
          }
        });
        child.on('exit', () => resolve(0));
      });
      if (port !== 0) {
        this.child = child;
        this.port = port;
        return;
      }
      if (Date.now() > giveUp) throw new Error(`tenure did not start on ${addr}`);
      await new Promise((r) => setTimeout(r, 100)); // the port may be held a moment after a kill
    }
  }

  /** SIGKILL, then the same address and directory again: a new epoch, no lease (LOCK-10). */
  async restart() {
    await this.kill();
    await this.#spawn(`127.0.0.1:${this.port}`);
  }

  async kill() {
    const c = this.child;
    if (c === null || c.exitCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGKILL');
    await exited;
  }

  async stop() {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

// A node-redis kind: createClient of redis 5 or 6, with options such as RESP.
const nodeRedis = (createClient, options) => ({
  async connect(port, { user, password } = {}) {
    const c = createClient({ socket: { host: '127.0.0.1', port }, username: user, password, ...options });
    c.on('error', () => {});
    await c.connect().catch((e) => { c.destroy(); throw e; });
    return c;
  },
  quit: (c) => c.destroy(),
  send: (c, ...args) => c.sendCommand(args.map(String)),
});

/**
 * The clients the suite runs over: each connect(port, opts) gives a
 * connected client (opts.user and opts.password log in); quit(c) closes
 * it; send(c, ...args) sends one command.
 */
export const clients = {
  'node-redis 5': nodeRedis(redis5.createClient, {}),
  'node-redis 6 (RESP2)': nodeRedis(redis6.createClient, { RESP: 2 }),
  'node-redis 5 (RESP3)': nodeRedis(redis5.createClient, { RESP: 3 }),
  'node-redis 6 (its default, RESP3)': nodeRedis(redis6.createClient, {}),
  'ioredis 5': {
    async connect(port, { user, password } = {}) {
      const c = new Redis({ host: '127.0.0.1', port, username: user, password, lazyConnect: true });
      c.on('error', () => {});
      await c.connect().catch((e) => { c.disconnect(); throw e; });
      return c;
    },
    quit: (c) => c.disconnect(),
    send: (c, ...args) => c.call(String(args[0]), ...args.slice(1).map(String)),
  },
};

/** INFO's `# Locks` section as an object of strings. */
export async function lockInfo(kind, c) {
  const text = String(await kind.send(c, 'INFO', 'locks'));
  return Object.fromEntries(text.split(/\r?\n/).filter((l) => l.includes(':')).map((l) => l.split(':', 2)));
}

/** LOCK.INFO lock key as an object, or null. */
export async function keyInfo(kind, c, lock, key) {
  const r = await kind.send(c, 'LOCK.INFO', lock, key);
  if (r === null) return null;
  const o = {};
  if (Array.isArray(r)) { // RESP2: a flat array of pairs
    for (let i = 0; i < r.length; i += 2) o[String(r[i])] = Number(r[i + 1]);
  } else { // RESP3: a map, which node-redis gives as an object
    for (const [k, v] of r instanceof Map ? r : Object.entries(r)) o[String(k)] = Number(v);
  }
  return o;
}

/** Resolves once cond() is true, checking every 20 ms; fails after ms. */
export async function until(cond, ms, what) {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * A TCP proxy in front of the server: cut() closes every connection through
 * it; watch(text) counts the commands and replies that contain text;
 * swallowNext(pred) drops the next reply to a command whose text
 * matches pred (the connection stays open, the reply never arrives);
 * swallowReplyIf(pred) drops each reply for which pred(command, reply) is
 * true, the texts of the connection's last command and of the reply.
 */
export class Proxy {
  static async start(port) {
    const p = new Proxy();
    p.socks = new Set();
    p.swallow = null;
    p.server = net.createServer((client) => {
      const upstream = net.connect(port, '127.0.0.1');
      p.socks.add(client);
      p.socks.add(upstream);
      let swallowReply = false;
      let lastCmd = '';
      client.on('data', (d) => {
        p.count(d, p.sentCounts);
        p.commands.push({ text: d.toString('latin1'), at: performance.now() });
        lastCmd = d.toString('latin1');
        if (p.swallow && p.swallow(d.toString('latin1'))) {
          p.swallow = null;
          swallowReply = true;
        }
        upstream.write(d);
      });
      upstream.on('data', (d) => {
        p.count(d, p.answerCounts);
        if (swallowReply || p.replyFilter?.(lastCmd, d.toString('latin1'))) {
          swallowReply = false;
          p.swallowed++;
          return;
        }
        client.write(d);
      });
      const close = () => {
        client.destroy();
        upstream.destroy();
        p.socks.delete(client);
        p.socks.delete(upstream);
      };
      client.on('close', close);
      upstream.on('close', close);
      client.on('error', close);
      upstream.on('error', close);
    });
    p.swallowed = 0;
    p.commands = []; // every command's text and when it reached the proxy
    p.watched = [];
    p.sentCounts = new Map(); // watched text -> times seen in commands
    p.answerCounts = new Map(); // watched text -> times seen in replies
    await new Promise((r) => p.server.listen(0, '127.0.0.1', r));
    p.port = p.server.address().port;
    return p;
  }

  /** Counts, from now on, the commands and replies that contain text. */
  watch(text) {
    this.watched.push(text);
  }

  count(d, counts) {
    const text = d.toString('latin1');
    for (const w of this.watched) {
      const n = text.split(w).length - 1;
      if (n > 0) counts.set(w, (counts.get(w) ?? 0) + n);
    }
  }

  swallowNext(pred) {
    this.swallow = pred;
  }

  swallowReplyIf(pred) {
    this.replyFilter = pred;
  }

  /** Closes every connection through the proxy; counts the cuts that closed one. */
  cut() {
    if (this.socks.size > 0) this.cuts = (this.cuts ?? 0) + 1;
    for (const s of this.socks) s.destroy();
    this.socks.clear();
  }

  close() {
    this.cut();
    this.server.close();
  }
}
