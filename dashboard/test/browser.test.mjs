// The dashboard in a real browser (SPEC §14): Debian's chromium, driven by
// playwright-core, loads the page from a real tenure server (bin/tenure,
// started here on loopback ports with a fresh data directory); a key held
// with a given owner appears without a reload, and goes when it is
// released; the page never shows the lease id. Screenshots go to out/.
//
//   node browser.test.mjs                      the test (make test-dashboard)
//   node browser.test.mjs --loaded FILE.png    a store with a few hundred keys,
//                                              waiters and a loss, screenshotted
//                                              (make dashboard-screenshot)
//
// TENURE_BIN names the server binary (default ../../bin/tenure), CHROMIUM
// the browser (default /usr/bin/chromium).
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const bin = process.env.TENURE_BIN || path.join(here, '..', '..', 'bin', 'tenure');
const browserPath = process.env.CHROMIUM || '/usr/bin/chromium';
const outDir = path.join(here, 'out');

function fail(msg) {
  console.error('FAIL: ' + msg);
  process.exitCode = 1;
  throw new Error(msg);
}

// ---- the server ----
async function startServer() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tenure-dashboard-'));
  const proc = spawn(bin, ['--addr', '127.0.0.1:0', '--http-addr', '127.0.0.1:0', '--dir', dir, '--log-format', 'json'],
    { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const addrs = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the server did not start:\n' + log)), 15000);
    proc.on('exit', (code) => reject(new Error('the server exited ' + code + ':\n' + log)));
    const found = {};
    proc.stderr.on('data', (chunk) => {
      log += chunk;
      for (const line of log.split('\n')) {
        if (!line.startsWith('{')) continue;
        try {
          const rec = JSON.parse(line);
          if (rec.msg === 'serving metrics') found.http = rec.addr;
          if (rec.msg === 'ready to accept connections') found.resp = rec.addr;
        } catch { /* a partial line */ }
      }
      if (found.http && found.resp) { clearTimeout(timer); resolve(found); }
    });
  });
  return {
    ...addrs,
    stop() { proc.kill('SIGTERM'); rmSync(dir, { recursive: true, force: true }); },
  };
}

// ---- a minimal RESP client: one command at a time per connection ----
class Resp {
  constructor(addr) {
    const [host, port] = [addr.slice(0, addr.lastIndexOf(':')), Number(addr.slice(addr.lastIndexOf(':') + 1))];
    this.sock = net.connect(port, host);
    this.buf = Buffer.alloc(0);
    this.waiting = [];
    this.sock.on('data', (d) => { this.buf = Buffer.concat([this.buf, d]); this.drain(); });
    this.ready = new Promise((res, rej) => { this.sock.once('connect', res); this.sock.once('error', rej); });
  }
  // parse reads one reply at i: [value, next index] or null if incomplete.
  parse(i) {
    const nl = this.buf.indexOf('\r\n', i);
    if (nl < 0) return null;
    const type = String.fromCharCode(this.buf[i]);
    const line = this.buf.toString('utf8', i + 1, nl);
    switch (type) {
      case '+': return [line, nl + 2];
      case '-': return [new Error(line), nl + 2];
      case ':': return [Number(line), nl + 2];
      case '$': {
        const n = Number(line);
        if (n < 0) return [null, nl + 2];
        if (this.buf.length < nl + 2 + n + 2) return null;
        return [this.buf.toString('utf8', nl + 2, nl + 2 + n), nl + 2 + n + 2];
      }
      case '*': {
        const n = Number(line);
        if (n < 0) return [null, nl + 2];
        const out = [];
        let j = nl + 2;
        for (let k = 0; k < n; k++) {
          const r = this.parse(j);
          if (!r) return null;
          out.push(r[0]); j = r[1];
        }
        return [out, j];
      }
      default: throw new Error('unexpected reply type ' + type);
    }
  }
  drain() {
    while (this.waiting.length) {
      const r = this.parse(0);
      if (!r) return;
      this.buf = this.buf.subarray(r[1]);
      this.waiting.shift()(r[0]);
    }
  }
  async do(...args) {
    await this.ready;
    const parts = ['*' + args.length + '\r\n'];
    for (const a of args.map(String)) parts.push('$' + Buffer.byteLength(a) + '\r\n' + a + '\r\n');
    this.sock.write(parts.join(''));
    return new Promise((res) => this.waiting.push(res));
  }
  close() { this.sock.destroy(); }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const rid = () => Math.random().toString(16).slice(2) + Math.random().toString(16).slice(2);

async function openBrowser() {
  return chromium.launch({ executablePath: browserPath, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
}

// ---- the test ----
async function test() {
  const srv = await startServer();
  const browser = await openBrowser();
  const c = new Resp(srv.resp);
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`http://${srv.http}/?lock=browser`);
    await page.waitForSelector('#live.on', { timeout: 10000 });
    // A mark the page would lose if it reloaded.
    await page.evaluate(() => { window.__loaded = 'first load'; });

    const owner = 'owner-' + rid().slice(0, 10);
    const held = await c.do('LOCK.HOLD', 'browser', 'job-42', rid(), 'OWNER', owner, 'TTL', 30000);
    if (!Array.isArray(held) || held.length !== 3) fail('LOCK.HOLD: ' + held);
    const [leaseId, fence] = held;

    const row = page.locator('#keys tbody tr[data-key="job-42"]');
    await row.waitFor({ state: 'visible', timeout: 5000 }).catch(() => fail('the held key did not appear within 5 s'));
    const text = await row.innerText();
    if (!text.includes(owner)) fail(`the key's row shows no owner ${owner}: ${text}`);
    if (!text.includes(String(fence))) fail(`the key's row shows no fence ${fence}: ${text}`);
    await page.locator('#feed li', { hasText: owner }).first().waitFor({ timeout: 5000 }).catch(() => fail('no grant in the feed'));
    await page.locator('#locks tbody tr[data-lock="browser"]').waitFor({ timeout: 5000 }).catch(() => fail('no row for the lock'));
    if (await page.evaluate(() => window.__loaded) !== 'first load') fail('the page reloaded');
    mkdirSync(outDir, { recursive: true });
    await page.screenshot({ path: path.join(outDir, 'held.png'), fullPage: true });
    if ((await page.content()).includes(leaseId)) fail('the page shows the lease id');

    const released = await c.do('LOCK.RELEASE', leaseId);
    if (released !== 1) fail('LOCK.RELEASE: ' + released);
    await row.waitFor({ state: 'detached', timeout: 5000 }).catch(() => fail('the released key did not go within 5 s'));
    await page.locator('#feed li .kind', { hasText: 'released' }).first().waitFor({ timeout: 5000 }).catch(() => fail('no release in the feed'));
    if (await page.evaluate(() => window.__loaded) !== 'first load') fail('the page reloaded');
    if ((await page.content()).includes(leaseId)) fail('the page shows the lease id');
    await page.screenshot({ path: path.join(outDir, 'released.png'), fullPage: true });

    // Who holds a key and who waits: a click on its row.
    const first = await c.do('LOCK.HOLD', 'browser', 'job-43', rid(), 'OWNER', 'holder-' + owner, 'TTL', 30000);
    const w = new Resp(srv.resp);
    const waiting = w.do('LOCK.HOLD', 'browser', 'job-43', rid(), 'OWNER', 'waiter-' + owner, 'TTL', 30000, 'WAIT', 20000);
    const row43 = page.locator('#keys tbody tr[data-key="job-43"]');
    await row43.waitFor({ timeout: 5000 }).catch(() => fail('job-43 did not appear'));
    await page.waitForFunction(() => document.querySelector('#keys tbody tr[data-key="job-43"]')?.cells[6]?.textContent === '1',
      null, { timeout: 5000 }).catch(() => fail('job-43 shows no waiter'));
    await row43.click();
    const detail = page.locator('#keys tr.detail');
    await detail.filter({ hasText: 'waiter-' + owner }).waitFor({ timeout: 5000 }).catch(() => fail('the key\'s line does not show its waiter'));
    if (!(await detail.innerText()).includes('holder-' + owner)) fail('the key\'s detail does not show its holder');
    await page.screenshot({ path: path.join(outDir, 'line.png'), fullPage: true });
    await c.do('LOCK.RELEASE', first[0]);
    const second = await waiting;
    if (!Array.isArray(second)) fail('the waiter was not granted: ' + second);
    await w.do('LOCK.RELEASE', second[0]);
    w.close();
    if (errors.length) fail('errors on the page: ' + errors.join('; '));
    console.log(`ok: the key held by ${owner} appeared and went without a reload; screenshots in ${outDir}`);
  } finally {
    c.close();
    await browser.close();
    srv.stop();
  }
}

// ---- a loaded store, for docs/dashboard.png ----
async function loaded(file) {
  const srv = await startServer();
  const c = new Resp(srv.resp);
  const waiting = [];
  const owners = ['billing-7', 'billing-8', 'etl-2', 'etl-3', 'api-1', 'api-2', 'api-3', 'cron-1'];
  const browser = await openBrowser();
  try {
    // A few hundred held keys, sent in one pipeline.
    const seeds = [];
    for (let i = 0; i < 320; i++) {
      seeds.push(c.do('LOCK.HOLD', 'summaries', 'chat-' + (1000 + i * 7), rid(), 'OWNER', owners[i % owners.length] + ':' + (4000 + i % 50),
        'TTL', 40000 + (i * 9973) % 260000));
    }
    for (let i = 0; i < 40; i++) seeds.push(c.do('LOCK.HOLD', 'invoices', 'inv-' + (500 + i), rid(), 'OWNER', 'billing-' + (i % 3), 'TTL', 120000));
    await Promise.all(seeds);
    // A semaphore, full, with callers waiting in line; a deploy lock with waiters.
    for (let i = 0; i < 5; i++) await c.do('LOCK.HOLD', 'llm-calls', 'openai', rid(), 'LIMIT', 5, 'OWNER', 'agent-' + i, 'TTL', 60000);
    await c.do('LOCK.HOLD', 'deploy', 'prod', rid(), 'OWNER', 'ci-runner-12', 'TTL', 60000);
    for (const who of ['billing-9:4100', 'etl-4:4200']) {
      const w = new Resp(srv.resp);
      waiting.push(w);
      w.do('LOCK.HOLD', 'summaries', 'chat-1000', rid(), 'OWNER', who, 'WAIT', 120000);
    }
    for (let i = 0; i < 4; i++) {
      const w = new Resp(srv.resp);
      waiting.push(w);
      w.do('LOCK.HOLD', 'llm-calls', 'openai', rid(), 'LIMIT', 5, 'OWNER', 'agent-' + (5 + i), 'WAIT', 120000);
      const d = new Resp(srv.resp);
      waiting.push(d);
      d.do('LOCK.HOLD', 'deploy', 'prod', rid(), 'OWNER', 'ci-runner-' + (13 + i), 'WAIT', 120000);
    }
    // A loss: a holder that stopped renewing learns it lost the lease.
    const short = await c.do('LOCK.HOLD', 'reports', 'weekly', rid(), 'OWNER', 'reporter-1', 'TTL', 1000);
    const browserPage = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    await browserPage.goto(`http://${srv.http}/?lock=summaries`);
    await sleep(1500);
    const lost = await c.do('LOCK.RENEW', short[0]);
    if (!(lost instanceof Error)) fail('the renewal after the ttl was not LOST: ' + lost);
    // Churn for the charts: short holds, some released, some left to expire.
    const end = Date.now() + 30000;
    let n = 0;
    while (Date.now() < end) {
      const g = await c.do('LOCK.HOLD', 'jobs', 'job-' + (n % 40), rid(), 'OWNER', 'worker-' + (n % 6), 'TTL', 1000, 'WAIT', 0);
      if (Array.isArray(g) && n % 5 !== 0) {
        setTimeout(() => c.do('LOCK.RELEASE', g[0]), 50 + (n * 37) % 400);
      }
      n++;
      await sleep(40);
    }
    await browserPage.locator('#keys tbody tr').first().waitFor({ timeout: 5000 });
    await browserPage.locator('#chart-all').check();
    await browserPage.locator('#keys tbody tr[data-key="chat-1000"]').click();
    await browserPage.locator('#keys tr.detail', { hasText: 'etl-4:4200' }).waitFor({ timeout: 5000 });
    await sleep(3500);
    await browserPage.screenshot({ path: file, fullPage: true });
    console.log('ok: ' + file);
  } finally {
    for (const w of waiting) w.close();
    c.close();
    await browser.close();
    srv.stop();
  }
}

const i = process.argv.indexOf('--loaded');
try {
  if (i >= 0) await loaded(path.resolve(process.argv[i + 1]));
  else await test();
} catch (e) {
  if (!process.exitCode) console.error(e);
  process.exitCode = 1;
}
