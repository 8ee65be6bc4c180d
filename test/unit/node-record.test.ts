import { describe, expect, it } from "vitest";
import {
  edgeLeafGen,
  isMerkleEdge,
  merkleEdgeLength,
  setEdgeLeafGen,
} from "../../src/verifier/trees/format/merkle-edge.js";
import {
  BINARY_RECORD_LENGTH,
  childGen,
  EDGE_HEAD_LENGTH,
  EDGE_RECORD_LENGTH,
  edgeLength,
  edgePath,
  firstHash,
  isBinaryRecord,
  isEdgeRecord,
  readGen,
  secondHash,
  writeBinaryRecord,
  writeEdgeRecord,
  writeGen,
} from "../../src/storage/records/node-record.js";

const filled = (v: number): Uint8Array => new Uint8Array(32).fill(v);

describe("node records (storage/records/node-record.ts)", () => {
  it("writes a binary record and reads its two children and their gens back; its length tells its kind", () => {
    expect(BINARY_RECORD_LENGTH).toBe(72);
    const out = new Uint8Array(3 + BINARY_RECORD_LENGTH);
    const packed = new Uint8Array(96);
    packed.set(filled(7), 32);
    packed.set(filled(9), 64);
    writeBinaryRecord(out, 3, packed, 32, 0x01020304, packed, 64, 0xfffffffe);
    const rec = out.subarray(3);
    expect(isBinaryRecord(rec)).toBe(true);
    expect(isEdgeRecord(rec)).toBe(false);
    expect(firstHash(rec)).toEqual(filled(7));
    expect(secondHash(rec)).toEqual(filled(9));
    expect(childGen(rec, 0)).toBe(0x01020304);
    expect(childGen(rec, 1)).toBe(0xfffffffe);
    // The gens close the record, big-endian, left then right.
    expect([...rec.subarray(64)]).toEqual([1, 2, 3, 4, 0xff, 0xff, 0xff, 0xfe]);
  });

  it("reads and writes a gen as a big-endian u32", () => {
    const buf = new Uint8Array(6);
    writeGen(buf, 1, 0xdeadbeef);
    expect([...buf]).toEqual([0, 0xde, 0xad, 0xbe, 0xef, 0]);
    expect(readGen(buf, 1)).toBe(0xdeadbeef);
    writeGen(buf, 2, 0);
    expect(readGen(buf, 2)).toBe(0);
  });

  it("writes an edge record from a number or from path bytes, the same bytes either way", () => {
    expect(EDGE_RECORD_LENGTH).toBe(69);
    const a = new Uint8Array(EDGE_RECORD_LENGTH);
    writeEdgeRecord(a, 0, filled(5), 0, 77, 12, 0xabcn);
    const pathBytes = new Uint8Array(32);
    pathBytes[30] = 0x0a;
    pathBytes[31] = 0xbc;
    const b = new Uint8Array(EDGE_RECORD_LENGTH);
    writeEdgeRecord(b, 0, filled(5), 0, 77, 12, pathBytes);
    expect(b).toEqual(a);
    expect(isEdgeRecord(a)).toBe(true);
    expect(isBinaryRecord(a)).toBe(false);
    expect(firstHash(a)).toEqual(filled(5));
    expect(edgePath(a)).toBe(0xabcn);
    expect(edgeLength(a)).toBe(12);
    expect(childGen(a, 0)).toBe(77);
    expect(readGen(a, EDGE_HEAD_LENGTH)).toBe(77);
  });

  it("a Merkle edge is never binary-sized, and starts as an edge record does", () => {
    for (let h = 1; h <= 64; h++) expect(merkleEdgeLength(h)).not.toBe(BINARY_RECORD_LENGTH);
    expect(merkleEdgeLength(8)).toBe(EDGE_RECORD_LENGTH);
    expect(merkleEdgeLength(9)).toBe(EDGE_RECORD_LENGTH + 32);
    const rec = new Uint8Array(merkleEdgeLength(9));
    // The head as an edge's (its gen slot is a checkpoint's first bytes here, written 0); the
    // leaf's gen closes the record, after the checkpoints.
    writeEdgeRecord(rec, 0, filled(1), 0, 0, 9, 300n);
    setEdgeLeafGen(rec, 41);
    expect(isMerkleEdge(rec, 9)).toBe(true);
    expect(edgeLength(rec)).toBe(9);
    expect(edgePath(rec)).toBe(300n);
    expect(edgeLeafGen(rec)).toBe(41);
    expect(childGen(rec, 0)).toBe(41);
    expect(readGen(rec, rec.length - 4)).toBe(41);
  });
});
