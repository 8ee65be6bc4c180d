import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LevelStore } from "../../src/storage/level-store.js";
import { NodeWrites } from "../../src/storage/records/node-writes.js";
import { READ_PART_MIN } from "../../src/storage/tree-record-repository.js";
import { placeholderRecord } from "../helpers/batch-record.js";
import { randomNodeWrites } from "../helpers/level-records.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";

const GEN = 5;
let store: LevelStore;
const { nodes, hashes, values } = randomNodeWrites(6000, (i) => 1 + (i % 100));

beforeAll(async () => {
  store = await LevelStore.open(await tempDir("dacd-tree-reads-"));
  await store.commitBatch(placeholderRecord(GEN), nodes, new NodeWrites());
  await store.compact();
});
afterAll(async () => {
  await store.close();
  await removeTempDirs();
});

describe("the store's tree reads, split into ranges looked up side by side", () => {
  // Around each count where the read is cut into one more range (every READ_PART_MIN lookups, up to
  // one per thread of libuv's pool here), and around sixteen ranges, the launcher's pool.
  const m = READ_PART_MIN;
  it.each([
    1,
    m - 1,
    m,
    2 * m - 1,
    2 * m,
    2 * m + 1,
    3 * m,
    4 * m - 1,
    4 * m,
    4 * m + 1,
    16 * m - 1,
    16 * m,
    6000,
  ])("answer %i lookups in the order asked, present and absent mixed", async (count) => {
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
  });
});
