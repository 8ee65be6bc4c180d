import { describe, expect, it } from "vitest";
import { MemoryNodeStore } from "../../src/storage/memory-store.js";
import { bigintToBytes32, toHex64 } from "../../src/util/bytes.js";
import { prng } from "../../src/util/prng.js";
import { emptyRoots } from "../../src/verifier/trees/update/compute-roots.js";
import { createEngine } from "../../src/verifier/hash/select.js";
import { updateMerkle, updateMerkleWhileHashing } from "../../src/verifier/trees/update/update-tree.js";
import type { NodeSource } from "../../src/storage/records/node-source.js";

const engine = createEngine("auto");
const HEIGHT = 20;

/** A store that counts lookups, so a test can tell that the old paths were read. */
function countingStore(inner: MemoryNodeStore): NodeSource & { lookups: number } {
  const store = {
    lookups: 0,
    getNodes: (hashes: readonly Uint8Array[], gens: ArrayLike<number>) => {
      store.lookups += hashes.length;
      return inner.getNodes(hashes, gens);
    },
  };
  return store;
}

/** A promise that settles only when the test says so. */
function later<T>(): { promise: Promise<T>; resolve(v: T): void; reject(e: Error): void } {
  let resolve!: (v: T) => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

describe("updateMerkleWhileHashing", () => {
  it("reads the old paths before the leaf hashes arrive and ends at the same root", async () => {
    const rand = prng(7);
    const empty = await emptyRoots(engine, "order", HEIGHT);
    const memory = new MemoryNodeStore();
    const leaves = new Map<bigint, bigint>();
    const randomId = () => BigInt(Math.floor(rand() * 2 ** HEIGHT));
    // A first state, so that the second update has old paths (binary nodes and edges) to read.
    const first = new Map<bigint, Uint8Array>();
    for (let i = 0; i < 300; i++) {
      const id = randomId();
      const v = BigInt(1 + Math.floor(rand() * 1e9));
      leaves.set(id, v);
      first.set(id, bigintToBytes32(v));
    }
    const base = await updateMerkle(engine, memory, empty, empty[HEIGHT]!, 0, 1, first, "t");
    expect(base.rootGen).toBe(1);
    memory.putNodes(base.newNodes);

    // Overwrites, deletions and new leaves (some splitting old edges), in no particular order.
    const ids: bigint[] = [];
    const values: bigint[] = [];
    const existing = [...leaves.keys()];
    for (let i = 0; i < 120; i++) {
      const id = i % 3 === 0 ? existing[Math.floor(rand() * existing.length)]! : randomId();
      if (ids.includes(id)) continue;
      const v = i % 5 === 0 ? 0n : BigInt(1 + Math.floor(rand() * 1e9));
      ids.push(id);
      values.push(v);
      leaves.set(id, v);
    }
    const store = countingStore(memory);
    const hashes = later<Uint8Array[]>();
    const update = updateMerkleWhileHashing(
      engine,
      store,
      empty,
      base.root,
      base.rootGen,
      2,
      ids,
      hashes.promise,
      "t",
    );
    // Let the update run as far as it can without the hashes: it reads every old path.
    await new Promise((r) => setTimeout(r, 50));
    expect(store.lookups).toBeGreaterThan(ids.length);
    hashes.resolve(values.map((v) => bigintToBytes32(v)));
    const { root, rootGen, newNodes } = await update;
    expect(toHex64(root)).not.toBe(toHex64(base.root));
    expect(rootGen).toBe(2);

    // The same leaves with their hashes given up front (updateMerkle) give the same root; the
    // trees' differential tests (trees.test.ts) check that path against a naive recomputation.
    const direct = await updateMerkle(
      engine,
      memory,
      empty,
      base.root,
      base.rootGen,
      2,
      new Map(ids.map((id, i) => [id, bigintToBytes32(values[i]!)])),
      "t",
    );
    expect(toHex64(direct.root)).toBe(toHex64(root));
    expect(direct.rootGen).toBe(rootGen);
    // The same records, children's gens included.
    const written = (w: Iterable<{ hash: Uint8Array; record: Uint8Array }>) =>
      [...w].map((n) => `${toHex64(n.hash)} ${Buffer.from(n.record).toString("hex")}`).sort();
    expect(written(direct.newNodes)).toEqual(written(newNodes));
  });

  it("fails with the hashing's error, even when the hashing fails while the paths are read", async () => {
    const empty = await emptyRoots(engine, "order", HEIGHT);
    const memory = new MemoryNodeStore();
    const base = await updateMerkle(
      engine,
      memory,
      empty,
      empty[HEIGHT]!,
      0,
      1,
      new Map([[5n, bigintToBytes32(9n)]]),
      "t",
    );
    memory.putNodes(base.newNodes);
    const slowStore: NodeSource = {
      getNodes: async (hashes, gens) => {
        await new Promise((r) => setTimeout(r, 30));
        return memory.getNodes(hashes, gens);
      },
    };
    const hashes = later<Uint8Array[]>();
    const update = updateMerkleWhileHashing(
      engine,
      slowStore,
      empty,
      base.root,
      base.rootGen,
      2,
      [5n, 6n],
      hashes.promise,
      "t",
    );
    // Rejected before any read has come back: the rejection must wait for the update, not escape
    // as an unhandled rejection (vitest fails a test on one).
    hashes.reject(new Error("leaf 6: hashing failed"));
    await expect(update).rejects.toThrow("leaf 6: hashing failed");
  });
});
