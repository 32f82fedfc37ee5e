// Hashing worker: reads one slice of a file and answers the up2k chunk
// hash of it (URL-safe base64 of the first 33 bytes of its SHA-512).
// WebCrypto where the page is a secure context, else sha512.js.
import { SHA512 } from './sha512.js';

const subtle = self.crypto && self.crypto.subtle;

export function b64url(bytes) {
  let s = '';
  for (let i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i]);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

// t: milliseconds spent reading the file and digesting, for the page's
// statistics (where an upload's time goes).
async function digest(file, start, end, fallback, t) {
  if (subtle && !fallback) {
    let t0 = performance.now();
    const buf = await file.slice(start, end).arrayBuffer();
    let t1 = performance.now();
    t.read += t1 - t0;
    const d = new Uint8Array(await subtle.digest('SHA-512', buf));
    t.digest += performance.now() - t1;
    return d;
  }
  // Stream the slice in pieces so a large chunk is never held twice.
  const h = new SHA512();
  const step = 4 << 20;
  for (let p = start; p < end; p += step) {
    const t0 = performance.now();
    const b = new Uint8Array(await file.slice(p, Math.min(end, p + step)).arrayBuffer());
    const t1 = performance.now();
    h.update(b);
    t.read += t1 - t0;
    t.digest += performance.now() - t1;
  }
  return h.digest();
}

self.onmessage = async (ev) => {
  const { id, file, start, end, fallback } = ev.data;
  try {
    const t = { read: 0, digest: 0 };
    const d = await digest(file, start, end, fallback, t);
    self.postMessage({ id, hash: b64url(d.subarray(0, 33)), read: t.read, digest: t.digest });
  } catch (e) {
    self.postMessage({ id, error: String((e && e.message) || e) });
  }
};
