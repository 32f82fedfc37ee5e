// up2k from the browser: hash files in Web Workers, handshake, send the
// chunks the server still needs over several connections, retry with
// backoff, resume after a reload (the handshake asks only for what is
// missing; hashes of unfinished files are kept in localStorage).

const MiB = 1 << 20;
// SPAN is about how many bytes a hashing worker reads at once (whole
// chunks): in Chromium a read costs about as much CPU as its digest, much
// of it per read; 16 MiB reads hash a 1 GiB file about 1.4x faster than
// one read per 4 MiB chunk (FileReaderSync is no better, 64 MiB worse).
const SPAN = 16 * MiB;

// chunkSize is the server's chunk size for a file of size bytes: 1 MiB
// growing in copyparty's steps (x1.5, x2 ...) until the file has at most
// 256 chunks, or, from 32 MiB chunks on, at most 4096.
export function chunkSize(size) {
  let cs = MiB, step = 512 * 1024;
  for (;;) {
    for (const mul of [1, 2]) {
      const n = Math.ceil(size / cs);
      if (n <= 256 || (cs >= 32 * MiB && n <= 4096)) return cs;
      cs += step;
      step *= mul;
    }
  }
}

// encPath escapes each segment of a slash-separated path.
export function encPath(p) {
  return p.split('/').map(encodeURIComponent).join('/');
}

// fmtSize is a short human size.
export function fmtSize(n) {
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(n < 10 ? 2 : n < 100 ? 1 : 0) : String(n)) + ' ' + u[i];
}

export function fmtTime(s) {
  if (!isFinite(s)) return '?';
  s = Math.round(s);
  const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, x = s % 60;
  return (h ? h + ':' + String(m).padStart(2, '0') : m) + ':' + String(x).padStart(2, '0');
}

const STORE = 'hoard.up2k';

function loadStore() {
  try { return JSON.parse(localStorage.getItem(STORE) || '{}'); } catch { return {}; }
}

function saveStore(m) {
  try { localStorage.setItem(STORE, JSON.stringify(m)); } catch { /* full: resume rehashes */ }
}

// HashPool runs hash tasks on a few workers.
class HashPool {
  constructor(n, fallback, stats) {
    this.n = n; // workers
    this.fallback = fallback;
    this.stats = stats;
    this.idle = [];
    this.queue = [];
    this.waiting = new Map();
    this.seq = 0;
    for (let i = 0; i < n; i++) {
      const w = new Worker(new URL('./hashw.js', import.meta.url), { type: 'module' });
      w.onmessage = (ev) => {
        const cb = this.waiting.get(ev.data.id);
        this.waiting.delete(ev.data.id);
        this.idle.push(w);
        this.next();
        if (ev.data.error) return cb.reject(new Error(ev.data.error));
        this.stats.read += ev.data.read;
        this.stats.digest += ev.data.digest;
        this.stats.hashed += cb.end - cb.start;
        cb.resolve(ev.data.hashes);
      };
      this.idle.push(w);
    }
  }

  // hash answers the hashes of the chunks of cs bytes in file[start, end).
  hash(file, start, end, cs) {
    return new Promise((resolve, reject) => {
      this.queue.push({ file, start, end, cs, resolve, reject });
      this.next();
    });
  }

  next() {
    while (this.idle.length && this.queue.length) {
      const t = this.queue.shift();
      const id = ++this.seq;
      this.waiting.set(id, t);
      this.idle.pop().postMessage({ id, file: t.file, start: t.start, end: t.end, cs: t.cs, fallback: this.fallback });
    }
  }
}

function xhrPost(url, body, headers, onprogress, job) {
  return new Promise((resolve) => {
    const x = new XMLHttpRequest();
    x.open('POST', url);
    for (const [k, v] of Object.entries(headers)) x.setRequestHeader(k, v);
    if (onprogress) x.upload.onprogress = (e) => onprogress(e.loaded);
    x.onload = () => { job.xhrs.delete(x); resolve({ status: x.status, text: x.responseText }); };
    x.onerror = () => { job.xhrs.delete(x); resolve({ status: 0, text: 'network error (connection lost)' }); };
    x.onabort = () => { job.xhrs.delete(x); resolve({ status: -1, text: 'cancelled' }); };
    job.xhrs.add(x);
    x.send(body);
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Uploader holds the queue. onchange is called (throttled by the caller)
// whenever something visible changed.
export class Uploader {
  constructor(opts) {
    this.onchange = opts.onchange || (() => {});
    this.ondone = opts.ondone || (() => {});
    this.fallback = !!opts.fallback || !(self.crypto && self.crypto.subtle);
    // hashing workers and chunk connections: opts (1-8) or the defaults
    const knob = (v, def) => (Number.isInteger(v) && v >= 1 && v <= 8 ? v : def);
    const n = knob(opts.workers, Math.max(1, Math.min(4, (navigator.hardwareConcurrency || 2))));
    // where the time goes: posts and retries; milliseconds the workers
    // spent reading files and digesting, and the bytes they hashed
    this.stats = { posts: 0, retries: 0, read: 0, digest: 0, hashed: 0 };
    this.pool = new HashPool(n, this.fallback, this.stats);
    this.jobs = [];
    this.conns = knob(opts.conns, 4);
    this.active = 0; // chunk posts in flight
    this.hashing = 0;
    this.shaking = 0;
    this.paused = false;
    this.replace = ''; // '' rename, 'replace' overwrite, 'skip'
    this.tasks = []; // chunk posts waiting for a connection
    this.rate = 0; // bytes per second, smoothed
    this.lastBytes = 0;
    this.lastT = performance.now();
    this.store = loadStore(); // unfinished uploads, saved to localStorage now and then
    this.saveT = 0;
    addEventListener('pagehide', () => this.flush());
    setInterval(() => this.tick(), 1000);
  }

  // leftovers lists unfinished uploads recorded before a reload.
  leftovers() {
    if (this.jobs.length) return [];
    return Object.values(this.store);
  }

  forgetLeftovers() { this.store = {}; this.flush(); this.onchange(); }

  flush() {
    clearTimeout(this.saveT);
    this.saveT = 0;
    saveStore(this.store);
  }

  // add queues files: items are {file, rel} with rel the path below the
  // folder dest (a URL path ending in "/").
  add(items, dest) {
    const store = this.store;
    for (const { file, rel } of items) {
      const parts = rel.split('/').filter((p) => p !== '' && p !== '.' && p !== '..');
      const name = parts.pop() || file.name;
      const dir = dest + parts.map((p) => encodeURIComponent(p) + '/').join('');
      const key = decodeURIComponent(dir) + name + '\n' + file.size + '\n' + file.lastModified;
      if (this.jobs.some((j) => j.key === key && !['done', 'error', 'cancelled'].includes(j.state))) continue;
      const job = {
        key, file, name, dir, rel: parts.concat(name).join('/'), size: file.size, lmod: file.lastModified / 1000,
        cs: chunkSize(file.size), hashes: null, hashed: 0, state: 'queued', err: '', conf: 0, inflight: 0,
        tries: 0, xhrs: new Set(), url: '', need: null, t0: 0,
        tm: { add: performance.now() }, // when each step began or ended (ms)
      };
      const st = store[key];
      if (st && st.hashes && st.hashes.length === Math.ceil(job.size / job.cs)) {
        job.hashes = st.hashes; // resume without hashing again
        job.hashed = job.size;
        job.state = 'hashed';
      }
      this.jobs.push(job);
    }
    this.pump();
    this.onchange();
  }

  record(job) {
    const m = this.store;
    if (job.state === 'done' || job.state === 'cancelled') delete m[job.key];
    else m[job.key] = { key: job.key, rel: job.rel, dir: job.dir, size: job.size, hashes: job.hashes, t: Date.now() };
    const keys = Object.keys(m);
    if (keys.length > 5000) for (const k of keys.slice(0, keys.length - 5000)) delete m[k];
    if (!this.saveT) this.saveT = setTimeout(() => this.flush(), 1000);
  }

  pump() {
    if (this.paused) return;
    for (const j of this.jobs) {
      if (this.hashing >= 3) break;
      if (j.state === 'queued') this.hash(j);
    }
    for (const j of this.jobs) {
      if (this.shaking >= 4) break;
      if (j.state === 'hashed') this.handshake(j);
    }
    while (this.active < this.conns && this.tasks.length) {
      const t = this.tasks.shift();
      if (t.job.state !== 'uploading') continue;
      this.send(t);
    }
  }

  async hash(job) {
    job.state = 'hashing';
    job.tm.hash = performance.now();
    this.hashing++;
    try {
      // spans of whole chunks, about SPAN bytes each, one read per span
      const per = Math.max(1, Math.floor(SPAN / job.cs)) * job.cs;
      const ps = [];
      for (let s = 0; s < job.size; s += per) {
        const e = Math.min(job.size, s + per);
        ps.push(this.pool.hash(job.file, s, e, job.cs).then((h) => { job.hashed += e - s; this.onchange(); return h; }));
      }
      job.hashes = (await Promise.all(ps)).flat();
      if (job.state !== 'hashing') return; // cancelled meanwhile
      job.state = 'hashed';
      job.tm.hashed = performance.now();
      this.record(job);
    } catch (e) {
      this.fail(job, 'cannot read the file: ' + e.message);
    } finally {
      this.hashing--;
      this.pump();
      this.onchange();
    }
  }

  async handshake(job) {
    job.state = 'handshake';
    this.shaking++;
    try {
      const body = { name: job.name, size: job.size, lmod: job.lmod, life: 0, hash: job.hashes };
      if (this.replace === 'replace') body.replace = true;
      if (this.replace === 'skip') body.replace = 'skip';
      const r = await xhrPost(job.dir, JSON.stringify(body), { 'Content-Type': 'text/plain;charset=UTF-8' }, null, job);
      if (job.state !== 'handshake') return;
      if (r.status !== 200) {
        const msg = r.text.trim() || 'HTTP ' + r.status;
        if (r.status === 0 || r.status === 429 || r.status >= 500) return this.retry(job, msg, () => { job.state = 'hashed'; });
        return this.fail(job, msg);
      }
      const rep = JSON.parse(r.text);
      job.tm.shaken = performance.now();
      job.name = rep.name || job.name;
      job.wark = rep.wark;
      job.purl = rep.purl;
      job.url = rep.purl + encodeURIComponent(job.name);
      const need = rep.hash || rep.need || [];
      job.tries = 0;
      this.tasks = this.tasks.filter((t) => t.job !== job);
      if (need.length === 0) return this.finish(job);
      job.state = 'uploading';
      job.t0 = job.t0 || performance.now();
      job.need = new Set(need);
      const needBytes = this.queueChunks(job, need);
      job.conf = job.size - needBytes; // the rest the server has (and said so)
    } catch (e) {
      this.retry(job, 'handshake failed: ' + e.message, () => { job.state = 'hashed'; });
    } finally {
      this.shaking--;
      this.pump();
      this.onchange();
    }
  }

  // queueChunks turns the needed hashes into chunk posts: runs of adjacent
  // chunks (each hash unique in the file) are stitched into one post of at
  // most 32 MiB, smaller when that keeps every connection busy.
  queueChunks(job, need) {
    const count = new Map();
    for (const h of job.hashes) count.set(h, (count.get(h) || 0) + 1);
    const idx = [];
    const seen = new Set();
    job.hashes.forEach((h, i) => { if (need.includes(h) && !seen.has(h)) { seen.add(h); idx.push(i); } });
    let bytes = 0;
    for (const i of idx) bytes += Math.min(job.size, (i + 1) * job.cs) - i * job.cs;
    const cap = Math.max(job.cs, Math.min(32 * MiB, Math.ceil(bytes / this.conns / job.cs) * job.cs));
    let run = [];
    const flush = () => { if (run.length) this.tasks.push({ job, idx: run, tries: 0 }); run = []; };
    for (const i of idx) {
      const last = run[run.length - 1];
      const ok = run.length && i === last + 1 && count.get(job.hashes[i]) === 1 && count.get(job.hashes[last]) === 1 && (run.length + 1) * job.cs <= cap && run.length < 64;
      if (!ok) flush();
      run.push(i);
    }
    flush();
    return bytes;
  }

  async send(t) {
    const { job, idx } = t;
    this.active++;
    const start = idx[0] * job.cs, end = Math.min(job.size, (idx[idx.length - 1] + 1) * job.cs);
    const hdr = {
      'Content-Type': 'application/octet-stream',
      'X-Up2k-Wark': job.wark,
      'X-Up2k-Hash': idx.map((i) => job.hashes[i]).join(','),
    };
    this.stats.posts++;
    // inflight: bytes of posts sent (upload progress) that the server has
    // not confirmed yet; conf grows only by a post's 200 answer
    const r = await xhrPost(job.purl, job.file.slice(start, end), hdr, (n) => { job.inflight += n - (t.prog || 0); t.prog = n; this.onchange(); }, job);
    job.inflight -= t.prog || 0;
    t.prog = 0;
    this.active--;
    if (/already got that/.test(r.text) && idx.length > 1 && job.state === 'uploading') {
      job.state = 'hashed'; // some of the run arrived before: ask what is missing
    } else if (r.status === 200 || /already got that/.test(r.text)) {
      job.conf += end - start;
      for (const i of idx) job.need.delete(job.hashes[i]);
      job.tries = 0;
      if (job.need.size === 0 && job.state === 'uploading') this.finish(job);
    } else if (r.status !== -1 && job.state === 'uploading') {
      this.stats.retries++;
      const msg = r.text.trim() || 'HTTP ' + r.status;
      if (/unknown wark/.test(msg)) {
        job.state = 'hashed'; // the session is gone: handshake again
      } else if (r.status === 403 || r.status === 413 || (r.status === 400 && !/corrupted|already being written|sibling|stitched/.test(msg))) {
        this.fail(job, msg);
      } else {
        t.tries++;
        if (t.tries > 8) this.fail(job, msg);
        else {
          job.err = 'retrying: ' + msg.split('\n')[0];
          const ms = Math.min(30000, 500 * 2 ** t.tries) * (0.75 + Math.random() / 2);
          sleep(ms).then(() => { if (job.state === 'uploading') { this.tasks.unshift(t); this.pump(); } });
        }
      }
    }
    this.pump();
    this.onchange();
  }

  retry(job, msg, reset) {
    job.tries++;
    if (job.tries > 8) return this.fail(job, msg);
    job.err = 'retrying: ' + msg.split('\n')[0];
    job.state = 'wait';
    sleep(Math.min(30000, 500 * 2 ** job.tries)).then(() => { if (job.state === 'wait') { reset(); job.err = ''; this.pump(); } });
  }

  finish(job) {
    job.state = 'done';
    job.tm.done = performance.now();
    job.err = '';
    job.conf = job.size;
    this.record(job);
    this.ondone(job);
    this.onchange();
  }

  fail(job, msg) {
    job.state = 'error';
    job.err = msg;
    for (const x of job.xhrs) x.abort();
    this.tasks = this.tasks.filter((t) => t.job !== job);
    this.onchange();
  }

  // retryJob starts a failed file again from the handshake.
  retryJob(job) {
    if (job.state !== 'error') return;
    job.tries = 0;
    job.err = '';
    job.state = job.hashes ? 'hashed' : 'queued';
    this.pump();
    this.onchange();
  }

  cancel(job) {
    if (job.state === 'done') return;
    job.state = 'cancelled';
    for (const x of job.xhrs) x.abort();
    this.tasks = this.tasks.filter((t) => t.job !== job);
    this.record(job);
    this.onchange();
  }

  setPaused(p) {
    this.paused = p;
    if (!p) this.pump();
    this.onchange();
  }

  tick() {
    const now = performance.now();
    const b = this.totals().moved; // the speed of sending
    const r = Math.max(0, (b - this.lastBytes) / ((now - this.lastT) / 1000));
    this.rate = this.rate ? this.rate * 0.7 + r * 0.3 : r;
    this.lastBytes = b;
    this.lastT = now;
    if (this.busy()) this.onchange();
  }

  busy() { return this.jobs.some((j) => !['done', 'error', 'cancelled'].includes(j.state)); }

  totals() {
    // conf: bytes the server confirmed (a chunk post answered 200, or had
    // before the handshake); inflight: sent and not confirmed yet (a post
    // that fails drops out of it and never reaches conf); moved: both
    let size = 0, conf = 0, inflight = 0, done = 0, failed = 0, n = 0;
    for (const j of this.jobs) {
      if (j.state === 'cancelled') continue;
      n++;
      size += j.size;
      conf += Math.min(j.size, j.conf);
      inflight += Math.min(j.size - Math.min(j.size, j.conf), j.inflight);
      if (j.state === 'done') done++;
      if (j.state === 'error') failed++;
    }
    return { size, conf, inflight, moved: conf + inflight, done, failed, n, eta: this.rate > 0 ? (size - conf) / this.rate : Infinity };
  }
}
