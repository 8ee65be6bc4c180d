import { describe, expect, it } from "vitest";
import { isMerkleEdge, merkleEdgeLength } from "../../src/trees/merkle-edge.js";
import {
  BINARY_RECORD_LENGTH,
  EDGE_RECORD_LENGTH,
  edgeLength,
  edgePath,
  firstHash,
  isBinaryRecord,
  isEdgeRecord,
  secondHash,
  writeBinaryRecord,
  writeEdgeRecord,
} from "../../src/trees/node-record.js";

const filled = (v: number): Uint8Array => new Uint8Array(32).fill(v);

describe("node records (trees/node-record.ts)", () => {
  it("writes a binary record and reads its two children back; its length tells its kind", () => {
    const out = new Uint8Array(3 + BINARY_RECORD_LENGTH);
    const packed = new Uint8Array(96);
    packed.set(filled(7), 32);
    packed.set(filled(9), 64);
    writeBinaryRecord(out, 3, packed, 32, packed, 64);
    const rec = out.subarray(3);
    expect(isBinaryRecord(rec)).toBe(true);
    expect(isEdgeRecord(rec)).toBe(false);
    expect(firstHash(rec)).toEqual(filled(7));
    expect(secondHash(rec)).toEqual(filled(9));
  });

  it("writes an edge record from a number or from path bytes, the same bytes either way", () => {
    const a = new Uint8Array(EDGE_RECORD_LENGTH);
    writeEdgeRecord(a, 0, filled(5), 0, 12, 0xabcn);
    const pathBytes = new Uint8Array(32);
    pathBytes[30] = 0x0a;
    pathBytes[31] = 0xbc;
    const b = new Uint8Array(EDGE_RECORD_LENGTH);
    writeEdgeRecord(b, 0, filled(5), 0, 12, pathBytes);
    expect(b).toEqual(a);
    expect(isEdgeRecord(a)).toBe(true);
    expect(isBinaryRecord(a)).toBe(false);
    expect(firstHash(a)).toEqual(filled(5));
    expect(edgePath(a)).toBe(0xabcn);
    expect(edgeLength(a)).toBe(12);
  });

  it("a Merkle edge is never binary-sized, and starts as an edge record does", () => {
    for (let h = 1; h <= 64; h++) expect(merkleEdgeLength(h)).not.toBe(BINARY_RECORD_LENGTH);
    expect(merkleEdgeLength(8)).toBe(EDGE_RECORD_LENGTH);
    expect(merkleEdgeLength(9)).toBe(EDGE_RECORD_LENGTH + 32);
    const rec = new Uint8Array(merkleEdgeLength(9));
    writeEdgeRecord(rec, 0, filled(1), 0, 9, 300n);
    expect(isMerkleEdge(rec, 9)).toBe(true);
    expect(edgeLength(rec)).toBe(9);
    expect(edgePath(rec)).toBe(300n);
  });
});
