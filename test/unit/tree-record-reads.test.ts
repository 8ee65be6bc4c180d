import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LevelStore } from "../../src/storage/level-store.js";
import { NodeWrites } from "../../src/storage/records/node-writes.js";
import { placeholderRecord } from "../helpers/batch-record.js";

const GEN = 5;
let dir: string;
let store: LevelStore;
const hashes: Uint8Array[] = [];
const values: Uint8Array[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "dacd-tree-reads-"));
  store = await LevelStore.open(dir);
  const nodes = new NodeWrites();
  for (let i = 0; i < 6000; i++) {
    const hash = new Uint8Array(randomBytes(32));
    const value = new Uint8Array(randomBytes(1 + (i % 100)));
    hashes.push(hash);
    values.push(value);
    nodes.add(hash, 0, value, 0, value.length);
  }
  await store.commitBatch(placeholderRecord(GEN), nodes, new NodeWrites());
  await store.compact();
});
afterAll(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe("the store's tree reads, split into ranges looked up side by side", () => {
  // Around each count where the read is cut into one more range (every 1024 lookups, up to four).
  it.each([1, 1023, 1024, 2047, 2048, 2049, 3071, 3072, 4095, 4096, 4097, 6000])(
    "answer %i lookups in the order asked, present and absent mixed",
    async (count) => {
      // Every third lookup asks for a record the store does not hold; the rest in a shuffled order.
      const picked = Array.from({ length: count }, (_, k) => (k * 7919) % hashes.length);
      const asked = picked.map((i, k) => (k % 3 === 2 ? new Uint8Array(randomBytes(32)) : hashes[i]!));
      const got = await store.getNodes(
        asked,
        asked.map(() => GEN),
      );
      expect(got).toHaveLength(count);
      for (let k = 0; k < count; k++) {
        if (k % 3 === 2) expect(got[k]).toBeUndefined();
        else expect(got[k]).toEqual(values[picked[k]!]);
      }
    },
  );
});
