import { describe, expect, it } from "vitest";
import { ByteChunks } from "../../src/util/byte-chunks.js";

describe("ByteChunks", () => {
  it("hands out zeroed arrays that never share bytes, across chunk boundaries", () => {
    const chunks = new ByteChunks();
    const taken: Uint8Array[] = [];
    // 97-byte records (a Merkle edge of height 9..16) fill several 64 KiB chunks.
    for (let i = 0; i < 2000; i++) {
      const a = chunks.take(97);
      expect(a.length).toBe(97);
      expect(a.every((b) => b === 0)).toBe(true);
      a.fill((i % 255) + 1);
      taken.push(a);
    }
    // Each still holds its own mark: no later array overlapped an earlier one.
    taken.forEach((a, i) => expect(a.every((b) => b === (i % 255) + 1)).toBe(true));
    expect(new Set(taken.map((a) => a.buffer)).size).toBe(Math.ceil(2000 / Math.floor(65536 / 97)));
  });

  it("gives an array of its own to a request larger than a chunk", () => {
    const chunks = new ByteChunks();
    const small = chunks.take(10);
    const big = chunks.take(70_000);
    expect(big.length).toBe(70_000);
    expect(big.buffer).not.toBe(small.buffer);
    expect(chunks.take(10).buffer).toBe(small.buffer);
  });
});
