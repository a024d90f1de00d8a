// tenure's dashboard: plain JavaScript, no build step, nothing from outside
// the binary. The server sends the node and the lock table every second and
// each lock event as it happens (api/stream, server-sent events); a lock's
// keys and the charts' history are read from api/keys and api/series.
// Everything shown is set with textContent: lock names, keys and owners are
// any bytes a client chose.
'use strict';

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const state = {
  summary: null,
  lock: params.get('lock') || '',
  lockSort: { by: 'leases', desc: true },
  keySort: { by: 'key', desc: false },
  keyOffset: 0,
  keyLimit: 50,
  keys: null,          // the last page of keys
  keysAt: 0,           // when it arrived (ms)
  keysTimer: 0,
  openKey: null,       // the key whose holders and line are shown
  keyDetail: null,     // api/key's answer for it
  feedMax: 300,
};

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else if (k === 'data') for (const [dk, dv] of Object.entries(v)) e.dataset[dk] = dv;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(c == null ? '' : String(c)));
  return e;
}

function fmtDuration(ms) {
  if (ms == null || ms < 0) return '—';
  if (ms < 10) return (Math.round(ms * 10) / 10) + ' ms';
  if (ms < 1000) return Math.round(ms) + ' ms';
  const s = ms / 1000;
  if (s < 60) return s.toFixed(s < 10 ? 1 : 0) + ' s';
  const m = Math.floor(s / 60);
  if (m < 60) return m + 'm ' + Math.floor(s % 60) + 's';
  const h = Math.floor(m / 60);
  if (h < 48) return h + 'h ' + (m % 60) + 'm';
  return Math.floor(h / 24) + 'd ' + (h % 24) + 'h';
}
const fmtSeconds = (s) => (s == null ? '—' : fmtDuration(s * 1000));
// A percentile in the first bucket says only that it is under its bound
// (a wait of 0 reads as 0.99 ms otherwise, as histogram_quantile has it).
const fmtPercentile = (v, first) => (v != null && first && v <= first ? '≤ ' + fmtSeconds(first) : fmtSeconds(v));
const fmtNum = (n) => (n == null ? '—' : Number(n).toLocaleString('en-US'));
const fmtTime = (t) => new Date(t).toLocaleTimeString('en-GB', { hour12: false }) + '.' + String(t % 1000).padStart(3, '0');

// ---- the node and its peers ----
function renderNode(n) {
  $('node-role').textContent = n.role;
  $('node-epoch').textContent = n.epoch;
  $('node-leases').textContent = fmtNum(n.leases);
  $('node-waiters').textContent = fmtNum(n.waiters);
  $('node-keys').textContent = fmtNum(n.keys);
  $('node-uptime').textContent = fmtDuration(n.uptime_s * 1000);
  const clustered = !!(n.peers && n.peers.length);
  $('node-leader-box').hidden = !clustered;
  $('peers-box').hidden = !clustered;
  if (!clustered) return;
  $('node-leader').textContent = n.leader ? n.leader + ' (' + n.leader_addr + ')' + (n.leader === n.self ? ' — this node' : '') : 'none known';
  const body = $('peers').tBodies[0];
  body.replaceChildren(...n.peers.map((p) => el('tr', {},
    el('td', {}, p.id + (p.id === n.leader ? ' ★' : '') + (p.id === n.self ? ' (this)' : '')),
    el('td', {}, p.addr),
    el('td', { class: 'num' }, p.applied < 0 ? '—' : fmtNum(p.applied)),
    el('td', { class: 'num' + (p.lag > 100 ? ' warn' : '') }, p.lag < 0 ? 'unknown' : fmtNum(p.lag)))));
}

// ---- the lock table ----
function sortRows(rows, sort) {
  const dir = sort.desc ? -1 : 1;
  return rows.sort((a, b) => {
    let x = a[sort.by], y = b[sort.by];
    if (x == null) x = -Infinity;
    if (y == null) y = -Infinity;
    if (typeof x === 'string') return dir * x.localeCompare(y) || a.lock.localeCompare(b.lock);
    return dir * (x - y) || a.lock.localeCompare(b.lock);
  });
}

function markSort(table, sort) {
  for (const th of table.tHead.rows[0].cells) {
    th.classList.toggle('asc', th.dataset.sort === sort.by && !sort.desc);
    th.classList.toggle('desc', th.dataset.sort === sort.by && sort.desc);
  }
}

function renderLocks() {
  const s = state.summary;
  if (!s) return;
  s.locks = s.locks || [];
  const filter = $('lock-filter').value.toLowerCase();
  const rows = sortRows(s.locks.filter((r) => !filter || r.lock.toLowerCase().includes(filter)), state.lockSort);
  const body = $('locks').tBodies[0];
  body.replaceChildren(...rows.map((r) => {
    const tr = el('tr', { data: { lock: r.lock }, class: r.lock === state.lock ? 'chosen' : '' },
      el('td', { class: 'name', title: r.lock }, r.lock),
      el('td', { class: 'num' }, fmtNum(r.leases)),
      el('td', { class: 'num' + (r.waiters > 0 ? ' warn' : '') }, fmtNum(r.waiters)),
      el('td', { class: 'num' }, r.grants_per_s.toFixed(2)),
      el('td', { class: 'num' }, fmtNum(r.grants)),
      el('td', { class: 'num' }, fmtNum(r.releases)),
      el('td', { class: 'num' }, fmtNum(r.expiries)),
      el('td', { class: 'num' }, fmtNum(r.revoked)),
      el('td', { class: 'num' + (r.lost > 0 ? ' warn' : '') }, fmtNum(r.lost)),
      el('td', { class: 'num' }, fmtPercentile(r.hold_p99, s.hold_first_bound)),
      el('td', { class: 'num' }, fmtPercentile(r.wait_p99, s.wait_first_bound)));
    // On mousedown: the table is built again every second, and a click
    // whose press and release fall on two builds would be lost.
    tr.addEventListener('mousedown', () => chooseLock(r.lock));
    return tr;
  }));
  markSort($('locks'), state.lockSort);
  const other = s.locks.find((r) => r.lock === '_other');
  $('locks-note').textContent = (rows.length === s.locks.length ? s.locks.length + ' locks' : rows.length + ' of ' + s.locks.length + ' locks') +
    (other ? ' — names past the first 1,000 share the row _other; open ?lock=NAME to see such a lock\'s keys' : '');
}

function chooseLock(lock) {
  if (lock === state.lock) return;
  state.lock = lock;
  state.keyOffset = 0;
  state.openKey = null;
  const url = new URL(location.href);
  url.searchParams.set('lock', lock);
  history.replaceState(null, '', url);
  renderLocks();
  fetchKeys();
  fetchSeries();
  renderFeedFilter();
}

// ---- a lock's keys ----
async function fetchKeys() {
  clearTimeout(state.keysTimer);
  state.keysTimer = setTimeout(fetchKeys, 2000);
  $('keys-lock').textContent = state.lock || '— pick a lock';
  if (!state.lock) return;
  const q = new URLSearchParams({ lock: state.lock, q: $('key-filter').value, sort: state.keySort.by,
    desc: state.keySort.desc ? '1' : '0', offset: state.keyOffset, limit: state.keyLimit });
  try {
    const res = await fetch('api/keys?' + q);
    if (!res.ok) return;
    const page = await res.json();
    if (page.lock !== state.lock) return;
    state.keys = page;
    state.keysAt = Date.now();
    if (state.openKey != null) await fetchKeyDetail();
    renderKeys();
  } catch (e) { /* the next beat tries again */ }
}

async function fetchKeyDetail() {
  const key = state.openKey;
  try {
    const res = await fetch('api/key?' + new URLSearchParams({ lock: state.lock, key }));
    if (res.ok && key === state.openKey) {
      state.keyDetail = await res.json();
      state.detailAt = Date.now();
    }
  } catch (e) { /* next time */ }
}

function toggleKey(key) {
  state.openKey = state.openKey === key ? null : key;
  state.keyDetail = null;
  if (state.openKey != null) fetchKeyDetail().then(renderKeys);
  renderKeys();
}

// detailRow is who holds the open key and who waits for it.
function detailRow() {
  const d = state.keyDetail;
  const elapsed = Date.now() - (state.detailAt || 0);
  const td = el('td', { colspan: '7' });
  if (!d) { td.append('…'); return el('tr', { class: 'detail' }, td); }
  const holders = el('div', {}, el('b', {}, 'held by '),
    ...(d.holders.length ? d.holders.map((h, i) => el('span', { class: 'who' }, (i ? ', ' : '') + (h.owner || '(no owner)') +
      ' — fence ' + h.fence + ', held ' + fmtDuration(h.held_ms + elapsed) +
      (h.ttl_ms >= 0 ? ', ttl ' + fmtDuration(Math.max(0, h.ttl_ms - elapsed)) : ', in process') +
      (h.maxhold_ms >= 0 ? ', maxhold in ' + fmtDuration(Math.max(0, h.maxhold_ms - elapsed)) : '') + (h.shared ? ', shared' : ''))) : ['nobody']));
  const line = el('div', {}, el('b', {}, 'waiting '),
    ...(d.line.length ? d.line.map((w, i) => el('span', { class: 'who' + (w.lingering ? ' muted' : '') }, (i ? ', ' : '') + (i + 1) + '. ' +
      (w.owner || '(no owner)') + ' for ' + fmtDuration(w.waited_ms + elapsed) + (w.shared ? ', shared' : '') + (w.lingering ? ' (lingering)' : ''))) : ['nobody']));
  td.append(holders, line);
  return el('tr', { class: 'detail' }, td);
}

let keysSoon = 0;
function fetchKeysSoon() {
  if (keysSoon) return;
  keysSoon = setTimeout(() => { keysSoon = 0; fetchKeys(); }, 150);
}

// ttlCell is the ttl bar of key k; its parts are kept in live, which
// tickKeys runs down between readings without building the rows again (a
// row built again under the pointer would swallow a click).
function ttlCell(k, live) {
  if (k.ttl_ms < 0) return el('td', {}, k.in_process ? 'in process' : '—');
  const fill = el('div', { class: 'fill' });
  const text = el('span');
  live.fill = fill;
  live.text = text;
  return el('td', {}, el('div', { class: 'ttl' }, el('div', { class: 'track' }, fill), text));
}

function tickKeys() {
  const elapsed = Date.now() - state.keysAt;
  for (const live of state.liveCells || []) {
    const k = live.k;
    if (live.fill) {
      const left = Math.max(0, k.ttl_ms - elapsed);
      const frac = Math.min(1, left / Math.max(k.lease_ttl_ms, k.ttl_ms, 1));
      live.fill.style.width = (frac * 100).toFixed(1) + '%';
      live.fill.className = 'fill' + (frac < 0.1 ? ' crit' : frac < 0.3 ? ' low' : '');
      live.text.textContent = fmtDuration(left);
    }
    if (k.fence) live.held.textContent = fmtDuration(k.held_ms + elapsed);
  }
  const old = $('keys').querySelector('tr.detail');
  if (old) old.replaceWith(detailRow());
}

function renderKeys() {
  const page = state.keys;
  const body = $('keys').tBodies[0];
  if (!page) { body.replaceChildren(); return; }
  const elapsed = Date.now() - state.keysAt;
  const rows = [];
  state.liveCells = [];
  for (const k of page.keys) {
    const live = { k, held: el('td', { class: 'num' }, '—') };
    state.liveCells.push(live);
    const tr = el('tr', { data: { key: k.key }, class: k.key === state.openKey ? 'open' : '', title: 'who holds it and who waits' },
      el('td', { class: 'name', title: k.key }, k.key),
      el('td', { class: 'name', title: k.owner }, k.owner || '—'),
      el('td', { class: 'num' }, k.fence || '—'),
      ttlCell(k, live),
      live.held,
      el('td', { class: 'num' }, k.holders + '/' + k.limit),
      el('td', { class: 'num' + (k.waiters > 0 ? ' warn' : '') }, fmtNum(k.waiters)));
    tr.addEventListener('click', () => toggleKey(k.key));
    rows.push(tr);
    if (k.key === state.openKey) rows.push(detailRow());
  }
  body.replaceChildren(...rows);
  tickKeys();
  markSort($('keys'), state.keySort);
  const last = Math.min(page.offset + page.keys.length, page.matched);
  $('keys-count').textContent = page.matched === 0 ? 'no held or waited-for key' :
    (page.offset + 1) + '–' + last + ' of ' + fmtNum(page.matched) + (page.matched !== page.total ? ' (of ' + fmtNum(page.total) + ')' : '') +
    (page.truncated ? ' — the first 200,000 only' : '');
  $('keys-prev').disabled = page.offset === 0;
  $('keys-next').disabled = last >= page.matched;
}

// ---- the feed ----
function feedItem(e) {
  const li = el('li', { data: { lock: e.lock || '', seq: e.seq } },
    el('span', { class: 'muted' }, fmtTime(e.t)),
    el('span', { class: 'kind k-' + e.event }, e.event),
    el('span', { title: (e.lock || '') + ' ' + (e.key || '') }, e.event === 'epoch' ? 'epoch ' + e.epoch : e.lock + ' / ' + e.key),
    el('span', { class: 'muted', title: 'owner ' + (e.owner || '') }, e.owner || ''),
    el('span', { class: 'muted', title: 'fence' }, e.event === 'epoch' ? '' : e.fence + (e.reason && e.reason !== e.event ? ' · ' + e.reason : '')));
  li.hidden = $('feed-only').checked && state.lock !== '' && e.lock !== state.lock && e.event !== 'epoch';
  return li;
}

function addEvent(e) {
  const feed = $('feed');
  feed.prepend(feedItem(e));
  while (feed.childElementCount > state.feedMax) feed.lastElementChild.remove();
  if (e.lock === state.lock) fetchKeysSoon();
}

function renderFeedFilter() {
  const only = $('feed-only').checked && state.lock !== '';
  for (const li of $('feed').children) li.hidden = only && li.dataset.lock !== state.lock && li.dataset.lock !== '';
}

// ---- charts ----
const rateLines = [['grants', 'Grants', '#2e7d32'], ['releases', 'Releases', '#1565c0'], ['expiries', 'Expiries', '#ef6c00'],
  ['revoked', 'Revoked', '#c62828'], ['lost', 'Lost', '#6a1b9a']];
const timeLines = [['hold p50', 'HoldP50', '#90caf9'], ['hold p99', 'HoldP99', '#1565c0'], ['wait p50', 'WaitP50', '#ffcc80'], ['wait p99', 'WaitP99', '#ef6c00']];

function legend(id, lines) {
  $(id).replaceChildren(...lines.map(([name, , color]) => {
    const i = el('i');
    i.style.background = color;
    return el('span', {}, i, name);
  }));
}

function drawChart(canvas, points, lines, fmt) {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth, h = canvas.clientHeight;
  canvas.width = w * dpr; canvas.height = h * dpr;
  const g = canvas.getContext('2d');
  g.scale(dpr, dpr);
  g.clearRect(0, 0, w, h);
  const left = 56, bottom = 18, top = 6, right = 8;
  let maxV = 0;
  for (const p of points) for (const [, f] of lines) if (p[f] != null) maxV = Math.max(maxV, p[f]);
  if (maxV === 0) maxV = 1;
  // The last five minutes, or since the first reading when that is less.
  const now = Date.now();
  const first = points.length ? points[0].t - 3000 : now - 60000;
  const span = Math.min(5 * 60 * 1000, Math.max(60000, now - first));
  const x = (t) => left + (w - left - right) * (1 - (now - t) / span);
  const y = (v) => top + (h - top - bottom) * (1 - v / maxV);
  g.strokeStyle = '#e0e0dc'; g.fillStyle = '#6b6f76'; g.font = '11px system-ui, sans-serif'; g.lineWidth = 1;
  for (let i = 0; i <= 4; i++) {
    const v = maxV * i / 4, yy = y(v);
    g.beginPath(); g.moveTo(left, yy); g.lineTo(w - right, yy); g.stroke();
    g.fillText(fmt(v), 2, yy + 4);
  }
  const tick = span > 120000 ? 60000 : 15000;
  for (let m = 0; m * tick <= span; m++) {
    const label = m === 0 ? 'now' : '-' + (tick === 60000 ? m + 'm' : (m * 15) + 's');
    g.fillText(label, Math.max(left - 10, x(now - m * tick) - (m === 0 ? 22 : 10)), h - 4);
  }
  for (const [, f, color] of lines) {
    g.strokeStyle = color; g.lineWidth = 1.6; g.beginPath();
    let drawing = false;
    for (const p of points) {
      if (p[f] == null || now - p.t > span) { drawing = false; continue; }
      if (!drawing) g.moveTo(x(p.t), y(p[f])); else g.lineTo(x(p.t), y(p[f]));
      drawing = true;
    }
    g.stroke();
  }
}

let series = [];
async function fetchSeries() {
  const lock = $('chart-all').checked ? '' : state.lock;
  $('chart-lock').textContent = lock || 'all locks';
  try {
    const res = await fetch('api/series?' + new URLSearchParams({ lock }));
    if (!res.ok) return;
    series = (await res.json()).points;
    drawCharts();
  } catch (e) { /* next time */ }
}
function drawCharts() {
  drawChart($('chart-rates'), series, rateLines, (v) => (v >= 100 ? v.toFixed(0) : v >= 1 ? v.toFixed(1) : v.toFixed(2)));
  drawChart($('chart-times'), series, timeLines, (v) => fmtSeconds(v));
}

// ---- the stream ----
function connect() {
  const es = new EventSource('api/stream');
  es.onopen = () => { $('live').textContent = 'live'; $('live').className = 'live on'; };
  es.onerror = () => { $('live').textContent = 'reconnecting'; $('live').className = 'live off'; };
  es.addEventListener('summary', (m) => {
    state.summary = JSON.parse(m.data);
    renderNode(state.summary.node);
    renderLocks();
  });
  es.addEventListener('lock', (m) => addEvent(JSON.parse(m.data)));
  es.addEventListener('skipped', (m) => {
    $('feed-note').textContent = 'the store ran faster than the page: ' + fmtNum(JSON.parse(m.data).events) + ' events not shown (LOCK.EVENTS has them)';
  });
}

function sortable(table, sort, then) {
  table.tHead.addEventListener('click', (ev) => {
    const th = ev.target.closest('th[data-sort]');
    if (!th) return;
    if (sort.by === th.dataset.sort) sort.desc = !sort.desc;
    else { sort.by = th.dataset.sort; sort.desc = th.classList.contains('num'); }
    then();
  });
}

sortable($('locks'), state.lockSort, renderLocks);
sortable($('keys'), state.keySort, () => { state.keyOffset = 0; fetchKeys(); });
$('lock-filter').addEventListener('input', renderLocks);
let keyFilterTimer = 0;
$('key-filter').addEventListener('input', () => {
  clearTimeout(keyFilterTimer);
  keyFilterTimer = setTimeout(() => { state.keyOffset = 0; fetchKeys(); }, 200);
});
$('keys-prev').addEventListener('click', () => { state.keyOffset = Math.max(0, state.keyOffset - state.keyLimit); fetchKeys(); });
$('keys-next').addEventListener('click', () => { state.keyOffset += state.keyLimit; fetchKeys(); });
$('feed-only').addEventListener('change', renderFeedFilter);
$('chart-all').addEventListener('change', fetchSeries);
legend('legend-rates', rateLines);
legend('legend-times', timeLines);
setInterval(tickKeys, 250);         // the ttl bars run down between readings
setInterval(fetchSeries, 3000);
window.addEventListener('resize', drawCharts);
connect();
fetchKeys();
fetchSeries();
