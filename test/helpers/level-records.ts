import { randomBytes } from "node:crypto";
import { NodeWrites } from "../../src/storage/records/node-writes.js";

/**
 * Records for LevelDB tests: record i of a batch, its key in a tree record's shape (0x00 ‖ batch ‖
 * kind ‖ 32 bytes) and a 120-byte value, each from (batch, i) alone. recordKey and recordValue use
 * nothing outside themselves, so that a test can hand their source to a child process.
 */
export const recordKey = (batch: number, i: number): Buffer => {
  const k = Buffer.alloc(38);
  k.writeUInt32BE(batch, 1);
  k[5] = 1;
  k.writeUInt32BE(i, 34);
  return k;
};

export const recordValue = (batch: number, i: number): Buffer => {
  const v = Buffer.alloc(120);
  for (let j = 0; j < v.length; j += 4)
    v.writeUInt32BE((Math.imul(i + 1, 2654435761) ^ Math.imul(j + batch, 40503)) >>> 0, j);
  return v;
};

/** A batch's first `count` records as puts for `db.batch`. */
export const recordPuts = (batch: number, count: number) =>
  Array.from({ length: count }, (_, i) => ({
    type: "put" as const,
    key: recordKey(batch, i),
    value: recordValue(batch, i),
  }));

/**
 * `count` node records of random hashes and contents, record i `length(i)` bytes long, as one
 * batch's write set, with the hashes and records in order for the test to ask for and compare.
 */
export function randomNodeWrites(
  count: number,
  length: (i: number) => number,
): { nodes: NodeWrites; hashes: Uint8Array[]; values: Uint8Array[] } {
  const nodes = new NodeWrites();
  const hashes: Uint8Array[] = [];
  const values: Uint8Array[] = [];
  for (let i = 0; i < count; i++) {
    const hash = new Uint8Array(randomBytes(32));
    const value = new Uint8Array(randomBytes(length(i)));
    hashes.push(hash);
    values.push(value);
    nodes.add(hash, 0, value, 0, value.length);
  }
  return { nodes, hashes, values };
}
