// Hashing worker: reads a span of a file and answers the up2k chunk hash
// of each chunk of it (URL-safe base64 of the first 33 bytes of its
// SHA-512). WebCrypto where the page is a secure context, else sha512.js.
// A span of several chunks is read with one read: reading a file from a
// worker costs about as much CPU as digesting it, most of it per read.
import { SHA512 } from './sha512.js';

const subtle = self.crypto && self.crypto.subtle;

export function b64url(bytes) {
  let s = '';
  for (let i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i]);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

// read returns the bytes of file[start, end).
function read(file, start, end) {
  return file.slice(start, end).arrayBuffer();
}

// hashSpan hashes the chunks of cs bytes of file[start, end); t collects
// the milliseconds spent reading and digesting (the page's statistics).
async function hashSpan(file, start, end, cs, fallback, t) {
  const out = [];
  if (subtle && !fallback) {
    const t0 = performance.now();
    const buf = await read(file, start, end);
    const t1 = performance.now();
    t.read += t1 - t0;
    const ps = [];
    for (let p = 0; p < buf.byteLength; p += cs) {
      ps.push(subtle.digest('SHA-512', new Uint8Array(buf, p, Math.min(cs, buf.byteLength - p))));
    }
    for (const d of await Promise.all(ps)) out.push(b64url(new Uint8Array(d, 0, 33)));
    t.digest += performance.now() - t1;
    return out;
  }
  // Stream each chunk in pieces so a large span is never held whole.
  const step = 4 << 20;
  for (let c = start; c < end; c += cs) {
    const h = new SHA512();
    const ce = Math.min(end, c + cs);
    for (let p = c; p < ce; p += step) {
      const t0 = performance.now();
      const b = new Uint8Array(await read(file, p, Math.min(ce, p + step)));
      const t1 = performance.now();
      h.update(b);
      t.read += t1 - t0;
      t.digest += performance.now() - t1;
    }
    out.push(b64url(h.digest().subarray(0, 33)));
  }
  return out;
}

self.onmessage = async (ev) => {
  const { id, file, start, end, fallback } = ev.data;
  const cs = ev.data.cs || end - start;
  try {
    const t = { read: 0, digest: 0 };
    const hashes = await hashSpan(file, start, end, cs, fallback, t);
    self.postMessage({ id, hashes, hash: hashes[0], read: t.read, digest: t.digest });
  } catch (e) {
    self.postMessage({ id, error: String((e && e.message) || e) });
  }
};
