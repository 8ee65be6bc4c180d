import { describe, expect, it } from "vitest";
import {
  addSmall,
  bigintToBytes32,
  bitAt,
  bitLength,
  bytesToBigint,
  copy32,
  copyLowBits,
} from "../../src/util/bytes.js";
import { prng } from "../../src/util/prng.js";
import { randomBig } from "../helpers/chain-store.js";

describe("32-byte big-endian conversions", () => {
  it("round-trips values at every 64-bit boundary and refuses what does not fit", () => {
    for (const v of [
      0n,
      1n,
      255n,
      2n ** 64n - 1n,
      2n ** 64n,
      2n ** 128n + 5n,
      2n ** 251n + 17n,
      2n ** 256n - 1n,
    ]) {
      const b = bigintToBytes32(v);
      expect(b.length).toBe(32);
      expect(bytesToBigint(b)).toBe(v);
      expect(Buffer.from(b).toString("hex")).toBe(v.toString(16).padStart(64, "0"));
    }
    expect(() => bigintToBytes32(-1n)).toThrow(RangeError);
    expect(() => bigintToBytes32(2n ** 256n)).toThrow(RangeError);
  });

  it("reads any length at any offset, also inside a larger buffer", () => {
    const next = prng(11);
    const backing = new Uint8Array(100).map(() => Math.floor(next() * 256));
    const view = backing.subarray(3, 90);
    for (const [offset, length] of [
      [0, 32],
      [5, 32],
      [55, 32],
      [0, 0],
      [1, 1],
      [7, 8],
      [2, 31],
      [10, 33],
      [0, 64],
    ]) {
      const hex = Buffer.from(view.subarray(offset!, offset! + length!)).toString("hex");
      expect(bytesToBigint(view, offset, length)).toBe(hex ? BigInt("0x" + hex) : 0n);
    }
  });

  it("gives the bit length of every power of two and its neighbours", () => {
    expect(bitLength(0n)).toBe(0);
    for (let k = 0; k < 256; k++) {
      const p = 1n << BigInt(k);
      expect(bitLength(p)).toBe(k + 1);
      if (k > 0) expect(bitLength(p - 1n)).toBe(k);
      if (k > 1) expect(bitLength(p + 1n)).toBe(k + 1);
    }
  });

  it("reads every bit of a 32-byte value at an offset as BigInt shifts do", () => {
    const next = prng(13);
    for (let r = 0; r < 4; r++) {
      const v = randomBig(next, 256);
      const buf = new Uint8Array(39);
      buf.set(bigintToBytes32(v), 7);
      for (let k = 0; k < 256; k++) expect(bitAt(buf, 7, k)).toBe(Number((v >> BigInt(k)) & 1n));
    }
  });

  it("copies the low bits of one 32-byte value into another, keeping the rest", () => {
    const next = prng(12);
    for (const bits of [0, 1, 7, 8, 9, 63, 64, 200, 251, 255, 256]) {
      const a = randomBig(next, 256);
      const b = randomBig(next, 256);
      const dst = new Uint8Array(40);
      dst.set(bigintToBytes32(a), 5);
      const src = new Uint8Array(33);
      src.set(bigintToBytes32(b), 1);
      copyLowBits(dst, 5, src, 1, bits);
      const mask = (1n << BigInt(bits)) - 1n;
      expect(bytesToBigint(dst, 5)).toBe((a & ~mask) | (b & mask));
    }
  });

  it("adds a small number with carries, without touching its input (even a Buffer)", () => {
    const h = Buffer.from(bigintToBytes32(2n ** 64n - 1n));
    const sum = addSmall(h, 251);
    expect(bytesToBigint(sum)).toBe(2n ** 64n - 1n + 251n);
    expect(bytesToBigint(h)).toBe(2n ** 64n - 1n);
    expect(bytesToBigint(addSmall(bigintToBytes32(0n), 7))).toBe(7n);
  });

  it("copies exactly 32 bytes between any offsets, touching nothing around them", () => {
    const next = prng(12);
    const src = new Uint8Array(80).map(() => Math.floor(next() * 256));
    for (const [dstOff, srcOff] of [
      [0, 0],
      [1, 7],
      [13, 40],
      [47, 3],
    ]) {
      const dst = new Uint8Array(80).fill(0xaa);
      copy32(dst, dstOff!, src, srcOff!);
      const want = new Uint8Array(80).fill(0xaa);
      want.set(src.subarray(srcOff!, srcOff! + 32), dstOff!);
      expect(Buffer.from(dst).toString("hex")).toBe(Buffer.from(want).toString("hex"));
    }
  });
});
