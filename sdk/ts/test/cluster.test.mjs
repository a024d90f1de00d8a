// The SDK over the cluster clients of node-redis (createCluster) and
// ioredis (Cluster), against three tenure nodes (SPEC §10): a hold, a
// fenced write, renewals, and a failover that is a restart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import * as redis5 from 'redis5';
import * as redis6 from 'redis6';
import { Cluster } from 'ioredis';

import { tenure } from '../dist/index.js';

const bin = process.env.TENURE_BIN ?? join(dirname(fileURLToPath(import.meta.url)), '..', '.build', 'tenure');

async function freePorts(n) {
  const servers = await Promise.all(Array.from({ length: n }, () => new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => resolve(s));
  })));
  const ports = servers.map((s) => s.address().port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

/** Three nodes on loopback, each with its own directory. */
class ThreeNodes {
  static async start() {
    const c = new ThreeNodes();
    c.dir = mkdtempSync(join(tmpdir(), 'tenure-ts-cluster-'));
    c.ports = await freePorts(3);
    c.peers = c.ports.map((p, i) => `n${i + 1}=127.0.0.1:${p}`).join(',');
    c.children = [];
    for (let i = 0; i < 3; i++) await c.spawn(i);
    return c;
  }

  async spawn(i) {
    const args = ['--node-id', `n${i + 1}`, '--peers', this.peers, '--dir', join(this.dir, `n${i + 1}`),
      '--fsync', 'no', '--raft-election-timeout', '300ms'];
    const child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    await new Promise((resolve, reject) => {
      let buf = '';
      child.stderr.on('data', (d) => {
        buf += d;
        if (buf.includes('ready to accept connections')) resolve();
      });
      child.on('exit', (code) => reject(new Error(`n${i + 1} exited ${code}: ${buf}`)));
    });
    child.stderr.resume();
    this.children[i] = child;
  }

  /** The index of the node whose ROLE is master, once one is. */
  async leader() {
    for (const deadline = Date.now() + 10_000; Date.now() < deadline;) {
      for (let i = 0; i < 3; i++) {
        if (this.children[i].exitCode !== null || this.children[i].signalCode !== null) continue;
        const role = await sendTo(this.ports[i], 'ROLE').catch(() => '');
        if (role.startsWith('*3\r\n$6\r\nmaster')) return i;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error('no leader');
  }

  async kill(i) {
    const c = this.children[i];
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGKILL');
    await exited;
  }

  async stop() {
    for (let i = 0; i < 3; i++) {
      if (this.children[i].exitCode === null && this.children[i].signalCode === null) await this.kill(i);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** One raw RESP command on a fresh connection: the reply's bytes. */
function sendTo(port, ...args) {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let buf = '';
    s.on('error', reject);
    s.on('data', (d) => { buf += d; setTimeout(() => { s.destroy(); resolve(buf); }, 20); });
    s.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`);
  });
}

const kinds = {
  'node-redis 5 createCluster': {
    async open(ports) {
      const c = redis5.createCluster({ rootNodes: ports.map((p) => ({ url: `redis://127.0.0.1:${p}` })) });
      c.on('error', () => {});
      await c.connect();
      return c;
    },
    send: (c, key, ...args) => c.sendCommand(key, false, args.map(String)),
    close: (c) => c.destroy(),
  },
  'node-redis 6 createCluster': {
    async open(ports) {
      const c = redis6.createCluster({ rootNodes: ports.map((p) => ({ url: `redis://127.0.0.1:${p}` })) });
      c.on('error', () => {});
      await c.connect();
      return c;
    },
    send: (c, key, ...args) => c.sendCommand(key, false, args.map(String)),
    close: (c) => c.destroy(),
  },
  'ioredis 5 Cluster': {
    async open(ports) {
      const c = new Cluster(ports.map((port) => ({ host: '127.0.0.1', port })), { slotsRefreshInterval: 200 });
      c.on('error', () => {});
      await c.set('warm-up', '1');
      return c;
    },
    send: (c, key, ...args) => c.call(String(args[0]), ...args.slice(1).map(String)),
    close: (c) => c.disconnect(),
  },
};

for (const [name, kind] of Object.entries(kinds)) {
  test(`${name}: hold, fenced write and renewals on a cluster; a failover's fences are larger`, async () => {
    const nodes = await ThreeNodes.start();
    let c;
    try {
      await nodes.leader();
      c = await kind.open(nodes.ports);
      const jobs = tenure(c).lock('jobs', { ttl: 1000 });
      const first = await jobs.hold('k', async (lease) => {
        assert.equal(await kind.send(c, 'out', 'SET', 'out', 'a', 'FENCE', lease.fence), 'OK');
        await new Promise((r) => setTimeout(r, 1300)); // past the ttl: renewed
        return lease.fence;
      });
      assert.equal(await kind.send(c, 'out', 'GET', 'out'), 'a');

      await nodes.kill(await nodes.leader());
      await nodes.leader();
      // Until the client's routing finds the new leader, holds are retried.
      let second;
      for (const deadline = Date.now() + 15_000; second === undefined;) {
        try {
          second = await jobs.hold('k', async (lease) => lease.fence);
        } catch (e) {
          if (Date.now() > deadline) throw e;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      assert.ok(second > first, `fence ${second} after failover, ${first} before (LOCK-14)`);
      assert.ok(second >> 32n > first >> 32n, 'a new epoch');
    } finally {
      if (c) kind.close(c);
      await nodes.stop();
    }
  });
}
