import { describe, expect, it } from "vitest";
import { DacdError } from "../../src/errors.js";
import { bigintToBytes32, toHex64 } from "../../src/util/bytes.js";
import { prng } from "../../src/util/prng.js";
import { MemoryNodeStore } from "../../src/storage/memory-store.js";
import { createTopNodeCache } from "../../src/verifier/trees/cache/node-cache.js";
import { createEngine } from "../../src/verifier/hash/select.js";
import { emptySubtreeRoots } from "../../src/verifier/trees/update/compute-roots.js";
import { updateMerkle } from "../../src/verifier/trees/update/update-tree.js";
import { packedEmpties } from "../../src/verifier/trees/format/merkle-edge.js";
import { BINARY_RECORD_LENGTH } from "../../src/storage/records/node-record.js";
import { defaultTreeWalk } from "../../src/verifier/trees/update/tree-walk.js";
import { naiveMerkleRoot } from "../helpers/naive-trees.js";
import {
  compareWalks,
  randomBatches,
  updateWith,
  walkOf,
  type TreeUpdate,
  type Walk,
} from "../helpers/compare-walks.js";
import { hex, RecordingStore } from "../helpers/recording-store.js";
import { nativeAvailable } from "../helpers/native-required.js";

const engine = createEngine("auto");
const native = defaultTreeWalk();
const haveNative = nativeAvailable("the native tree walks", native !== null);

/** E[0..height] with the empty leaf 0, as the naive root takes it. */
const empties = (height: number) => emptySubtreeRoots(engine, new Uint8Array(32), height);

/** The Merkle update of the tree whose empty subtrees are `empty`, with the walk given. */
const merkle =
  (empty: readonly Uint8Array[]): TreeUpdate =>
  (store, root, rootGen, batchGen, leaves, walk) =>
    updateMerkle(engine, store, empty, root, rootGen, batchGen, leaves, "vault", undefined, walk);

/** One update with the given walk, everything it wrote and remembered. */
const update = (
  walk: Walk,
  store: RecordingStore,
  empty: readonly Uint8Array[],
  root: Uint8Array,
  rootGen: number,
  batchGen: number,
  changes: Map<bigint, bigint>,
) => updateWith(walk, merkle(empty), store, root, rootGen, batchGen, changes);

/** Both walks over the same batches (compareWalks); the last root against the naive one. */
async function compareOnBatches(
  height: number,
  steps: number,
  nextBatch: (step: number, state: ReadonlyMap<bigint, bigint>) => Map<bigint, bigint>,
) {
  const empty = await empties(height);
  const { state, root } = await compareWalks(merkle(empty), empty[height]!, steps, nextBatch);
  // The naive root (BigInt Pedersen over every leaf) is slow: checked once, at the end.
  expect(toHex64(root)).toBe(toHex64(bigintToBytes32(naiveMerkleRoot(height, state, 0n))));
}

/** Random batches of ids below 2^bits (randomBatches), from `seed`. */
function randomIds(seed: number, n: number, bits: number) {
  const rand = prng(seed);
  return randomBatches(rand, n, () => BigInt(Math.floor(rand() * 2 ** bits)));
}

describe.skipIf(!haveNative)("the native Merkle walk", () => {
  // Seconds on a quiet machine, more on a busy one: 60 s rather than the unit project's 20.
  it("writes and remembers exactly what the JavaScript walk does, batch after batch (height 31)", async () => {
    await compareOnBatches(31, 12, randomIds(91, 30, 31));
  }, 60_000);

  it("agrees on a small, dense tree (subtrees emptied, edges split and climbing past deleted neighbours)", async () => {
    await compareOnBatches(10, 25, randomIds(92, 60, 10));
  });

  // Seconds on a quiet machine, more on a busy one: 60 s rather than the unit project's 20.
  it("agrees where new leaves split old edges at every height, checkpoints included (height 64)", async () => {
    // Lone leaves first, then for each a neighbour that meets it at height k + 1: the new leaf splits
    // the old leaf's edge at height k, which the old leaf's chain climbs through from its checkpoint.
    const lone = Array.from({ length: 64 }, (_, k) => (BigInt(k + 1) * 0x9e3779b97f4a7c15n) % (1n << 64n));
    const rand = prng(93);
    await compareOnBatches(64, 3, (step) => {
      if (step === 0) return new Map(lone.map((id) => [id, BigInt(1 + Math.floor(rand() * 1e9))]));
      const changes = new Map<bigint, bigint>();
      lone.forEach((id, k) => {
        const neighbour = id ^ (1n << BigInt(step === 1 ? k : 63 - k));
        if (!lone.includes(neighbour)) changes.set(neighbour, BigInt(1 + k));
        // In the second batch some old leaves go too, so that split chains end at new heights.
        if (step === 2 && k % 3 === 0) changes.set(id, 0n);
      });
      return changes;
    });
  }, 60_000);

  it("reads and remembers through the node cache's packed calls as the JavaScript walk through its own", async () => {
    const height = 31;
    const empty = await empties(height);
    const walks = (["js", "native"] as const).map((walk) => {
      const memory = new MemoryNodeStore();
      const cache = createTopNodeCache(12, null); // the JavaScript cache: its packed calls
      return { walk, memory, cache, view: cache.over(memory), root: empty[height]!, rootGen: 0 };
    });
    const batch = randomIds(94, 300, 31);
    const state = new Map<bigint, bigint>();
    for (let step = 0; step < 6; step++) {
      const changes = batch(step, state);
      for (const [id, v] of changes) state.set(id, v);
      const leaves = new Map([...changes].map(([id, v]) => [id, bigintToBytes32(v)]));
      const written: string[][] = [];
      const batchGen = step + 1;
      for (const w of walks) {
        const r = await updateMerkle(
          engine,
          w.view,
          empty,
          w.root,
          w.rootGen,
          batchGen,
          leaves,
          "vault",
          undefined,
          walkOf(w.walk),
        );
        written.push([...r.newNodes].map((n) => `${hex(n.hash)} ${hex(n.record)}`).sort());
        w.memory.putNodes(r.newNodes);
        w.root = r.root;
        w.rootGen = r.rootGen;
      }
      expect(hex(walks[1]!.root), `step ${step}`).toBe(hex(walks[0]!.root));
      expect(walks[1]!.rootGen, `step ${step}: root gen`).toBe(walks[0]!.rootGen);
      expect(written[1], `step ${step}: new records`).toEqual(written[0]);
      expect(walks[1]!.cache.size, `step ${step}: cached nodes`).toBe(walks[0]!.cache.size);
      // Every node of the new tree's top levels is in both caches, with the same record, under the
      // batch's gen.
      for (const line of written[0]!) {
        const hash = Buffer.from(line.slice(0, 64), "hex");
        expect(hex(walks[1]!.cache.get(hash, batchGen) ?? new Uint8Array())).toBe(
          hex(walks[0]!.cache.get(hash, batchGen) ?? new Uint8Array()),
        );
      }
    }
  });

  it("reports a missing or corrupt record as the JavaScript walk does, naming the tree and node", async () => {
    const height = 31;
    const empty = await empties(height);
    const store = new RecordingStore();
    const built = await update(
      "js",
      store,
      empty,
      empty[height]!,
      0,
      1,
      new Map([
        [3n, 1n],
        [9n, 2n],
        [1n << 30n, 3n],
      ]),
    );
    const again = new Map([[4n, 8n]]);
    // The root's record missing, then cut to 40 bytes, then an edge record of the wrong height.
    const edge = built.out.record([...built.out].findIndex((w) => w.record.length !== BINARY_RECORD_LENGTH));
    const wrongHeight = edge.slice();
    wrongHeight[64] = 7;
    for (const corrupt of [undefined, new Uint8Array(40), wrongHeight]) {
      const broken = new RecordingStore();
      broken.memory.putNodes(built.out);
      broken.memory.putNodes([{ hash: built.rootBytes, record: corrupt ?? new Uint8Array(0) }]);
      const lookup = broken.getNodes.bind(broken);
      if (!corrupt)
        broken.getNodes = async (h, g) => (await lookup(h, g)).map((r) => (r?.length ? r : undefined));
      const errors: string[] = [];
      for (const walk of ["js", "native"] as const) {
        const err = await update(walk, broken, empty, built.rootBytes, built.rootGen, 2, again).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err, walk).toBeInstanceOf(DacdError);
        errors.push((err as Error).message);
      }
      expect(errors[1]).toBe(errors[0]);
      expect(errors[0]).toMatch(
        new RegExp(
          `^vault tree: node at height 31, index 0 \\(${hex(built.rootBytes)}\\) (is not|has a record)`,
        ),
      );
    }
  });

  it("refuses malformed input and calls out of order at the addon's boundary with errors, not crashes", async () => {
    const height = 8;
    const empty = packedEmpties(await empties(height));
    const ids = (...xs: bigint[]) => {
      const out = new Uint8Array(xs.length * 32);
      xs.forEach((x, i) => out.set(bigintToBytes32(x), i * 32));
      return out;
    };
    const root = empty.subarray(height * 32);
    const create = (idBytes: Uint8Array, h = height, e = empty) =>
      native!.merkleCreate(h, 0, idBytes, root, 0, 1, e);
    expect(() => create(ids(5n, 3n))).toThrow(/not strictly ascending/);
    expect(() => create(ids(5n, 5n))).toThrow(/not strictly ascending/);
    expect(() => create(ids(256n))).toThrow(/does not fit a tree of height 8/);
    expect(() => create(ids(1n), 9)).toThrow(/E\[0..height\]/);
    expect(() => create(ids())).toThrow(/bad tree update/);
    // An empty tree: nothing to read. Then records nobody asked for, a build with too few leaf
    // hashes, levels before the build, and the result before the levels.
    const h = create(ids(1n, 2n));
    expect(native!.merkleStep(h)).toBeNull();
    expect(() => native!.merkleSupply(h, new Uint8Array(64), new Uint32Array([64]))).toThrow(
      /one record per/,
    );
    expect(() => native!.merkleBuild(h, new Uint8Array(32))).toThrow(/one leaf hash/);
    expect(() => native!.merkleResult(h)).toThrow(/before every level is hashed/);
    const job = native!.merkleBuild(h, new Uint8Array(64).fill(1));
    expect(job).not.toBeNull();
    expect(() => native!.merkleNextLevel(h)).toThrow(/before the chains were climbed/);
    native!.merkleFree(h);
    expect(() => native!.merkleStep(h)).toThrow(/not a live Merkle update/);
    // Another walk's handle is refused, not read as this one's.
    const other = native!.patriciaCreate(
      height,
      0,
      ids(1n),
      new Uint8Array(32).fill(1),
      new Uint8Array(32),
      0,
      1,
    );
    expect(() => native!.merkleStep(other)).toThrow(/not a live Merkle update/);
    expect(() => native!.patriciaStep(h)).toThrow(/not a live Patricia update/);
    native!.patriciaFree(other);
  });
});
