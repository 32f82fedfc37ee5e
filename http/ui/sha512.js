// SHA-512 (FIPS 180-4) in plain JavaScript, for pages that are not a
// secure context (WebCrypto's crypto.subtle is missing there). 64-bit
// words are kept as two 32-bit halves. The round constants and initial
// values are derived at load time from their definition (the first 64
// bits of the fractional parts of the cube and square roots of the first
// primes), computed exactly with BigInt, so no table can be mistyped.

function primes(n) {
  const out = [];
  for (let c = 2; out.length < n; c++) {
    if (out.every((p) => c % p !== 0)) out.push(c);
  }
  return out;
}

// iroot returns floor(x^(1/k)) for a BigInt x >= 1 (Newton's method).
function iroot(x, k) {
  const K = BigInt(k);
  let r = 1n << BigInt(Math.ceil(x.toString(2).length / k) + 1);
  for (;;) {
    const next = ((K - 1n) * r + x / r ** (K - 1n)) / K;
    if (next >= r) return r;
    r = next;
  }
}

function fracBits(p, k) {
  // floor(p^(1/k) * 2^64) mod 2^64: the first 64 fractional bits.
  const v = iroot(BigInt(p) << BigInt(64 * k), k) & ((1n << 64n) - 1n);
  return [Number(v >> 32n) | 0, Number(v & 0xffffffffn) | 0];
}

const P = primes(80);
const K = new Int32Array(160);
P.forEach((p, i) => {
  const [h, l] = fracBits(p, 3);
  K[2 * i] = h;
  K[2 * i + 1] = l;
});
const IV = new Int32Array(16);
P.slice(0, 8).forEach((p, i) => {
  const [h, l] = fracBits(p, 2);
  IV[2 * i] = h;
  IV[2 * i + 1] = l;
});

const TWO32 = 4294967296;

// compress runs the block function over every whole 128-byte block of
// b[pos:end) and returns how far it got.
function compress(H, W, b, pos, end) {
  while (end - pos >= 128) {
    for (let i = 0; i < 32; i++, pos += 4) {
      W[i] = (b[pos] << 24) | (b[pos + 1] << 16) | (b[pos + 2] << 8) | b[pos + 3];
    }
    for (let i = 32; i < 160; i += 2) {
      let h = W[i - 30], l = W[i - 29]; // w[t-15]
      const s0h = ((h >>> 1) | (l << 31)) ^ ((h >>> 8) | (l << 24)) ^ (h >>> 7);
      const s0l = ((l >>> 1) | (h << 31)) ^ ((l >>> 8) | (h << 24)) ^ ((l >>> 7) | (h << 25));
      h = W[i - 4]; l = W[i - 3]; // w[t-2]
      const s1h = ((h >>> 19) | (l << 13)) ^ ((l >>> 29) | (h << 3)) ^ (h >>> 6);
      const s1l = ((l >>> 19) | (h << 13)) ^ ((h >>> 29) | (l << 3)) ^ ((l >>> 6) | (h << 26));
      const lo = (s1l >>> 0) + (W[i - 13] >>> 0) + (s0l >>> 0) + (W[i - 31] >>> 0);
      W[i] = (s1h + W[i - 14] + s0h + W[i - 32] + Math.floor(lo / TWO32)) | 0;
      W[i + 1] = lo | 0;
    }
    let ah = H[0], al = H[1], bh = H[2], bl = H[3], ch = H[4], cl = H[5], dh = H[6], dl = H[7];
    let eh = H[8], el = H[9], fh = H[10], fl = H[11], gh = H[12], gl = H[13], hh = H[14], hl = H[15];
    for (let i = 0; i < 160; i += 2) {
      const S1h = ((eh >>> 14) | (el << 18)) ^ ((eh >>> 18) | (el << 14)) ^ ((el >>> 9) | (eh << 23));
      const S1l = ((el >>> 14) | (eh << 18)) ^ ((el >>> 18) | (eh << 14)) ^ ((eh >>> 9) | (el << 23));
      const chh = (eh & fh) ^ (~eh & gh);
      const chl = (el & fl) ^ (~el & gl);
      const t1l = (hl >>> 0) + (S1l >>> 0) + (chl >>> 0) + (K[i + 1] >>> 0) + (W[i + 1] >>> 0);
      const t1h = (hh + S1h + chh + K[i] + W[i] + Math.floor(t1l / TWO32)) | 0;
      const S0h = ((ah >>> 28) | (al << 4)) ^ ((al >>> 2) | (ah << 30)) ^ ((al >>> 7) | (ah << 25));
      const S0l = ((al >>> 28) | (ah << 4)) ^ ((ah >>> 2) | (al << 30)) ^ ((ah >>> 7) | (al << 25));
      const mjh = (ah & bh) ^ (ah & ch) ^ (bh & ch);
      const mjl = (al & bl) ^ (al & cl) ^ (bl & cl);
      const t2l = (S0l >>> 0) + (mjl >>> 0);
      const t2h = S0h + mjh + Math.floor(t2l / TWO32);
      hh = gh; hl = gl; gh = fh; gl = fl; fh = eh; fl = el;
      const el2 = (dl >>> 0) + (t1l >>> 0);
      eh = (dh + t1h + Math.floor(el2 / TWO32)) | 0;
      el = el2 | 0;
      dh = ch; dl = cl; ch = bh; cl = bl; bh = ah; bl = al;
      const al2 = (t1l >>> 0) + (t2l >>> 0);
      ah = (t1h + t2h + Math.floor(al2 / TWO32)) | 0;
      al = al2 | 0;
    }
    const v = [ah, al, bh, bl, ch, cl, dh, dl, eh, el, fh, fl, gh, gl, hh, hl];
    for (let i = 0; i < 16; i += 2) {
      const lo = (H[i + 1] >>> 0) + (v[i + 1] >>> 0);
      H[i] = (H[i] + v[i] + Math.floor(lo / TWO32)) | 0;
      H[i + 1] = lo | 0;
    }
  }
  return pos;
}

// SHA512 hashes incrementally: update(bytes) any number of times, then
// digest() once.
export class SHA512 {
  constructor() {
    this.H = IV.slice();
    this.W = new Int32Array(160);
    this.buf = new Uint8Array(128);
    this.nbuf = 0;
    this.len = 0;
  }

  update(data) {
    const b = data instanceof Uint8Array ? data : new Uint8Array(data);
    this.len += b.length;
    let pos = 0;
    if (this.nbuf > 0) {
      const n = Math.min(128 - this.nbuf, b.length);
      this.buf.set(b.subarray(0, n), this.nbuf);
      this.nbuf += n;
      pos = n;
      if (this.nbuf < 128) return this;
      compress(this.H, this.W, this.buf, 0, 128);
      this.nbuf = 0;
    }
    pos = compress(this.H, this.W, b, pos, b.length);
    this.buf.set(b.subarray(pos), 0);
    this.nbuf = b.length - pos;
    return this;
  }

  digest() {
    const pad = new Uint8Array(this.nbuf < 112 ? 128 : 256);
    pad.set(this.buf.subarray(0, this.nbuf));
    pad[this.nbuf] = 0x80;
    const bits = pad.length;
    const hi = Math.floor(this.len / 0x20000000); // len*8 >> 32
    const lo = (this.len * 8) >>> 0;
    pad[bits - 8] = hi >>> 24; pad[bits - 7] = hi >>> 16; pad[bits - 6] = hi >>> 8; pad[bits - 5] = hi;
    pad[bits - 4] = lo >>> 24; pad[bits - 3] = lo >>> 16; pad[bits - 2] = lo >>> 8; pad[bits - 1] = lo;
    compress(this.H, this.W, pad, 0, pad.length);
    const out = new Uint8Array(64);
    for (let i = 0; i < 16; i++) {
      const w = this.H[i];
      out[4 * i] = w >>> 24; out[4 * i + 1] = w >>> 16; out[4 * i + 2] = w >>> 8; out[4 * i + 3] = w;
    }
    return out;
  }
}

export function sha512(data) {
  return new SHA512().update(data).digest();
}
