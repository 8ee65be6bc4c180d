/** Conversions at the edges: hashes are 32-byte big-endian values inside dacd, hex or bigint outside. */

const HEX = /^[0-9a-fA-F]*$/;

export function bigintToBytes32(v: bigint): Uint8Array {
  const out = new Uint8Array(32);
  writeBigint32(v, out, 0);
  return out;
}

const TWO_256 = 1n << 256n;
const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** Writes v as 32 big-endian bytes into dst at `offset` (all 32 bytes are written). */
export function writeBigint32(v: bigint, dst: Uint8Array, offset: number): void {
  if (v < 0n || v >= TWO_256) throw new RangeError(`value does not fit in 32 bytes: ${v}`);
  dst.fill(0, offset, offset + 32);
  if (v <= SAFE) {
    // Most leaf fields (balances, amounts, small ids) take this path: no BigInt arithmetic at all.
    let n = Number(v);
    for (let i = offset + 31; n > 0; i--) {
      dst[i] = n % 256;
      n = Math.floor(n / 256);
    }
    return;
  }
  // 64 bits at a time: a byte at a time made 32 BigInt temporaries per call.
  const view = new DataView(dst.buffer, dst.byteOffset + offset, 32);
  for (let at = 24; at >= 0 && v > 0n; at -= 8) {
    view.setBigUint64(at, BigInt.asUintN(64, v));
    v >>= 64n;
  }
}

const HEX_BYTE = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

export function bytesToBigint(b: Uint8Array, offset = 0, length = 32): bigint {
  if (length === 32) {
    // The trees' common case, 64 bits at a time: no hex string is built and parsed per call, and
    // none is left behind for the garbage collector.
    const v = new DataView(b.buffer, b.byteOffset + offset, 32);
    const high = (v.getBigUint64(0) << 64n) | v.getBigUint64(8);
    return (high << 128n) | (v.getBigUint64(16) << 64n) | v.getBigUint64(24);
  }
  if (length === 0) return 0n;
  let hex = "0x";
  for (let i = offset; i < offset + length; i++) hex += HEX_BYTE[b[i]!]!;
  return BigInt(hex);
}

/** Lower-case hex of exactly 64 digits, no prefix: the form tree roots take in state updates. */
export function toHex64(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("hex").padStart(64, "0");
}

/** `0x`-prefixed hex of the bytes as given. */
export function toHex0x(b: Uint8Array): string {
  return "0x" + Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("hex");
}

/** Parses hex (with or without 0x) into 32 bytes; null when it is not hex or too long. */
export function hexToBytes32(s: string): Uint8Array | null {
  const digits = s.startsWith("0x") || s.startsWith("0X") ? s.slice(2) : s;
  if (digits.length === 0 || digits.length > 64 || !HEX.test(digits)) return null;
  return new Uint8Array(Buffer.from(digits.padStart(64, "0"), "hex"));
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

export const ZERO32 = new Uint8Array(32);

/**
 * Sets the low `bits` bits of the 32 big-endian bytes at dst[dstOff..] to those of the 32 bytes at
 * src[srcOff..], leaving dst's other bits as they were.
 */
export function copyLowBits(
  dst: Uint8Array,
  dstOff: number,
  src: Uint8Array,
  srcOff: number,
  bits: number,
): void {
  for (let i = 31; i >= 0 && bits > 0; i--, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (1 << bits) - 1;
    dst[dstOff + i] = (dst[dstOff + i]! & ~mask) | (src[srcOff + i]! & mask);
  }
}

/**
 * Copies 32 bytes: a loop, which for so few bytes costs less than TypedArray.set and needs no
 * subarray, eight bytes a step, since the trees copy a few hundred thousand hashes a batch and a
 * byte a step spends most of its time on the loop itself.
 */
export function copy32(dst: Uint8Array, dstOff: number, src: Uint8Array, srcOff: number): void {
  for (let i = 0; i < 32; i += 8) {
    const d = dstOff + i;
    const s = srcOff + i;
    dst[d] = src[s]!;
    dst[d + 1] = src[s + 1]!;
    dst[d + 2] = src[s + 2]!;
    dst[d + 3] = src[s + 3]!;
    dst[d + 4] = src[s + 4]!;
    dst[d + 5] = src[s + 5]!;
    dst[d + 6] = src[s + 6]!;
    dst[d + 7] = src[s + 7]!;
  }
}

/** Bit k (0: the least significant) of the 32 big-endian bytes at b[off..]. */
export function bitAt(b: Uint8Array, off: number, k: number): number {
  return (b[off + 31 - (k >> 3)]! >> (k & 7)) & 1;
}

const POW2 = Array.from({ length: 257 }, (_, k) => 1n << BigInt(k));

/** The number of bits of v (0 ≤ v < 2^256), by comparisons only: no string or BigInt is made. */
export function bitLength(v: bigint): number {
  if (v === 0n) return 0;
  let lo = 0; // 2^lo ≤ v
  let hi = 256; // v < 2^hi
  while (hi - lo > 1) {
    const mid = (lo + hi) >>> 1;
    if (v >= POW2[mid]!) lo = mid;
    else hi = mid;
  }
  return hi;
}

/** h + small, as 32-byte big-endian values (an edge's hash is H(bottom, path) + length). */
export function addSmall(h: Uint8Array, small: number): Uint8Array {
  // A copy made explicitly: on a Buffer, slice() would be a view and the sum would overwrite h.
  const out = new Uint8Array(32);
  out.set(h);
  let carry = small;
  for (let i = 31; i >= 0 && carry > 0; i--) {
    const s = out[i]! + carry;
    out[i] = s & 0xff;
    carry = s >> 8;
  }
  return out;
}
