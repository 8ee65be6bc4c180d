import { isSigned64 } from "../../../model/leaf-rules.js";
/**
 * The kit's binary files, read and written without Node's Buffer (the reader runs in browsers):
 * unsigned LEB128 counts, field elements as a length byte and their minimal big-endian bytes,
 * signed 64-bit values zig-zagged first, fixed 8-byte ids and 32-byte hashes, and level bitmaps
 * (bit k of byte k >> 3, least significant first).
 */

export class KitFormatError extends Error {
  override readonly name = "KitFormatError";
}

export class ByteWriter {
  private buf = new Uint8Array(1 << 16);
  length = 0;

  private room(n: number): void {
    if (this.length + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.length + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
  }

  u8(v: number): void {
    this.room(1);
    this.buf[this.length++] = v;
  }

  bytes(b: Uint8Array): void {
    this.room(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
  }

  /** An unsigned integer below 2^53, LEB128. */
  uint(v: number): void {
    if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`${v} is not a count`);
    while (v >= 0x80) {
      this.u8((v % 0x80) | 0x80);
      v = Math.floor(v / 0x80);
    }
    this.u8(v);
  }

  /** A non-negative integer below 2^256: its byte count, then its bytes, big-endian, no leading zero. */
  big(v: bigint): void {
    if (v < 0n || v >> 256n !== 0n) throw new RangeError(`${v} is not a 256-bit value`);
    if (v === 0n) return this.u8(0);
    const hex = v.toString(16);
    const n = (hex.length + 1) >> 1;
    this.room(n + 1);
    this.buf[this.length++] = n;
    // Two hex digits a byte, read by character code: no substring or parseInt per byte.
    let at = 0;
    if (hex.length & 1) this.buf[this.length++] = nibble(hex.charCodeAt(at++));
    while (at < hex.length) {
      this.buf[this.length++] = (nibble(hex.charCodeAt(at)) << 4) | nibble(hex.charCodeAt(at + 1));
      at += 2;
    }
  }

  /** A non-negative integer of any size, LEB128. */
  ubig(v: bigint): void {
    if (v < 0n) throw new RangeError(`${v} is negative`);
    while (v >= 0x80n) {
      this.u8(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    this.u8(Number(v));
  }

  /** A signed value of 64 bits, zig-zag encoded. */
  signed64(v: bigint): void {
    this.big(v < 0n ? (-v << 1n) - 1n : v << 1n);
  }

  /** An id below 2^64, 8 bytes big-endian. */
  id(v: bigint): void {
    if (v < 0n || v >> 64n !== 0n) throw new RangeError(`id ${v} is not below 2^64`);
    const out = new Uint8Array(8);
    let x = v;
    for (let i = 7; i >= 0; i--, x >>= 8n) out[i] = Number(x & 0xffn);
    this.bytes(out);
  }

  done(): Uint8Array {
    return this.buf.slice(0, this.length);
  }
}

export class ByteReader {
  at = 0;
  constructor(
    readonly buf: Uint8Array,
    /** Named in errors: the file being read. */
    readonly what: string,
  ) {}

  private need(n: number): void {
    if (this.at + n > this.buf.length)
      throw new KitFormatError(`${this.what} is cut short at byte ${this.at}`);
  }

  get ended(): boolean {
    return this.at === this.buf.length;
  }

  u8(): number {
    this.need(1);
    return this.buf[this.at++]!;
  }

  bytes(n: number): Uint8Array {
    this.need(n);
    const b = this.buf.subarray(this.at, this.at + n);
    this.at += n;
    return b;
  }

  uint(): number {
    let v = 0;
    let scale = 1;
    for (;;) {
      const b = this.u8();
      v += (b & 0x7f) * scale;
      if (b < 0x80) break;
      scale *= 0x80;
      if (scale > 2 ** 49) throw new KitFormatError(`${this.what}: a count at byte ${this.at} is too long`);
    }
    return v;
  }

  big(): bigint {
    const n = this.u8();
    if (n > 32) throw new KitFormatError(`${this.what}: a value of ${n} bytes at byte ${this.at - 1}`);
    const b = this.bytes(n);
    if (n > 0 && b[0] === 0)
      throw new KitFormatError(`${this.what}: a value with a leading zero at byte ${this.at - n}`);
    return bytesToBig(b);
  }

  ubig(): bigint {
    let v = 0n;
    for (let shift = 0n; ; shift += 7n) {
      if (shift > 70n) throw new KitFormatError(`${this.what}: a number at byte ${this.at} is too long`);
      const b = this.u8();
      v |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return v;
    }
  }

  signed64(): bigint {
    const z = this.big();
    const v = z & 1n ? -((z + 1n) >> 1n) : z >> 1n;
    if (!isSigned64(v)) throw new KitFormatError(`${this.what}: a signed value outside 64 bits`);
    return v;
  }

  id(): bigint {
    return bytesToBig(this.bytes(8));
  }
}

/** A lower-case hex digit's value (what bigint.toString(16) writes). */
function nibble(c: number): number {
  return c <= 57 ? c - 48 : c - 87;
}

export function bytesToBig(b: Uint8Array): bigint {
  // The bytes above a multiple of 8 one by one, then 64 bits at a time: a hash makes 4 BigInt
  // steps, not 32.
  const head = b.length & 7;
  let v = 0n;
  for (let i = 0; i < head; i++) v = (v << 8n) | BigInt(b[i]!);
  if (head === b.length) return v;
  const view = new DataView(b.buffer, b.byteOffset, b.length);
  for (let i = head; i < b.length; i += 8) v = (v << 64n) | view.getBigUint64(i);
  return v;
}

export function bigTo32(v: bigint): Uint8Array {
  const out = new Uint8Array(32);
  let x = v;
  for (let i = 31; i >= 0; i--, x >>= 8n) out[i] = Number(x & 0xffn);
  return out;
}

export function toHex(b: Uint8Array): string {
  let s = "";
  for (const x of b) s += (x < 16 ? "0" : "") + x.toString(16);
  return s;
}

export function bitLength(v: bigint): number {
  return v === 0n ? 0 : v.toString(2).length;
}
