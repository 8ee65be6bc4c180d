import { afterEach, describe, expect, it } from "vitest";
import { DacdError } from "../../src/errors.js";
import { bigintToBytes32, toHex64 } from "../../src/util/bytes.js";
import { prng } from "../../src/util/prng.js";
import { MemoryNodeStore } from "../../src/storage/memory-store.js";
import { TopNodeCache } from "../../src/verifier/node-cache.js";
import { createEngine } from "../../src/verifier/hash/select.js";
import { emptySubtreeRoots, updateMerkle } from "../../src/verifier/merkle.js";
import { packedEmpties } from "../../src/verifier/merkle-edge.js";
import type { NodeWrites } from "../../src/verifier/node-writes.js";
import { nativeTreeWalks } from "../../src/verifier/tree-walk.js";
import { naiveMerkleRoot } from "../helpers/naive-trees.js";
import { hex, RecordingStore } from "../helpers/recording-store.js";

const engine = createEngine("auto");
const native = nativeTreeWalks({});

/** E[0..height] with the empty leaf 0, as the naive root takes it. */
const empties = (height: number) => emptySubtreeRoots(engine, new Uint8Array(32), height);

interface StepResult {
  root: string;
  rootBytes: Uint8Array;
  out: NodeWrites;
  written: string[];
  remembered: string[];
}

/** One update with the given walk, everything it wrote and remembered, in a comparable form. */
async function update(
  walk: "js" | "native",
  store: RecordingStore,
  empty: readonly Uint8Array[],
  root: Uint8Array,
  changes: Map<bigint, bigint>,
): Promise<StepResult> {
  process.env.DACD_TREE_WALK = walk;
  store.remembered = [];
  const leaves = new Map([...changes].map(([id, v]) => [id, bigintToBytes32(v)]));
  const r = await updateMerkle(engine, store, empty, root, leaves, "vault");
  return {
    root: hex(r.root),
    rootBytes: r.root,
    out: r.newNodes,
    written: [...r.newNodes].map((w) => `${hex(w.hash)} ${hex(w.record)}`).sort(),
    remembered: [...store.remembered].sort(),
  };
}

/**
 * Runs the same batches through both walks, each on a store of its own, and checks that they write
 * and remember the same records and reach the same roots; the last root against the naive one.
 * `nextBatch` draws a batch's changes from the state so far (value 0 deletes a leaf).
 */
async function compareWalks(
  height: number,
  seed: number,
  steps: number,
  nextBatch: (step: number, rand: () => number, state: ReadonlyMap<bigint, bigint>) => Map<bigint, bigint>,
) {
  const rand = prng(seed);
  const empty = await empties(height);
  const jsStore = new RecordingStore();
  const nativeStore = new RecordingStore();
  let jsRoot = empty[height]!;
  let nativeRoot = empty[height]!;
  const state = new Map<bigint, bigint>();
  for (let step = 0; step < steps; step++) {
    const changes = nextBatch(step, rand, state);
    for (const [id, v] of changes) state.set(id, v);
    const a = await update("js", jsStore, empty, jsRoot, changes);
    const b = await update("native", nativeStore, empty, nativeRoot, changes);
    expect(b.root, `step ${step}`).toBe(a.root);
    expect(b.written, `step ${step}: new records`).toEqual(a.written);
    expect(b.remembered, `step ${step}: remembered nodes`).toEqual(a.remembered);
    jsStore.memory.putNodes(a.out);
    nativeStore.memory.putNodes(b.out);
    jsRoot = a.rootBytes;
    nativeRoot = b.rootBytes;
  }
  // The naive root (BigInt Pedersen over every leaf) is slow: checked once, at the end.
  expect(toHex64(nativeRoot)).toBe(toHex64(bigintToBytes32(naiveMerkleRoot(height, state, 0n))));
}

/** n random changes: new ids from `randomId`, existing leaves overwritten or deleted. */
function randomBatch(n: number, randomId: (rand: () => number) => bigint) {
  return (step: number, rand: () => number, state: ReadonlyMap<bigint, bigint>) => {
    const changes = new Map<bigint, bigint>();
    const existing = [...state.keys()];
    const size = step === 0 ? n * 4 : 1 + Math.floor(rand() * n);
    while (changes.size < size) {
      const id =
        rand() < 0.35 && existing.length > 0
          ? existing[Math.floor(rand() * existing.length)]!
          : randomId(rand);
      changes.set(id, rand() < 0.3 && step > 0 ? 0n : BigInt(1 + Math.floor(rand() * 1e9)));
    }
    return changes;
  };
}

describe.skipIf(!native)("the native Merkle walk", () => {
  afterEach(() => {
    delete process.env.DACD_TREE_WALK;
  });

  it("writes and remembers exactly what the JavaScript walk does, batch after batch (height 31)", async () => {
    await compareWalks(
      31,
      91,
      12,
      randomBatch(30, (rand) => BigInt(Math.floor(rand() * 2 ** 31))),
    );
  });

  it("agrees on a small, dense tree (subtrees emptied, edges split and climbing past deleted neighbours)", async () => {
    await compareWalks(
      10,
      92,
      25,
      randomBatch(60, (rand) => BigInt(Math.floor(rand() * 1024))),
    );
  });

  it("agrees where new leaves split old edges at every height, checkpoints included (height 64)", async () => {
    // Lone leaves first, then for each a neighbour that meets it at height k + 1: the new leaf splits
    // the old leaf's edge at height k, which the old leaf's chain climbs through from its checkpoint.
    const lone = Array.from({ length: 64 }, (_, k) => (BigInt(k + 1) * 0x9e3779b97f4a7c15n) % (1n << 64n));
    await compareWalks(64, 93, 3, (step, rand) => {
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
  });

  it("reads and remembers through the node cache's packed calls as the JavaScript walk through its own", async () => {
    const height = 31;
    const empty = await empties(height);
    const walks = (["js", "native"] as const).map((walk) => {
      const memory = new MemoryNodeStore();
      const cache = new TopNodeCache(12);
      return { walk, memory, cache, view: cache.over(memory), root: empty[height]! };
    });
    const rand = prng(94);
    const batch = randomBatch(300, (r) => BigInt(Math.floor(r() * 2 ** 31)));
    const state = new Map<bigint, bigint>();
    for (let step = 0; step < 6; step++) {
      const changes = batch(step, rand, state);
      for (const [id, v] of changes) state.set(id, v);
      const leaves = new Map([...changes].map(([id, v]) => [id, bigintToBytes32(v)]));
      const written: string[][] = [];
      for (const w of walks) {
        process.env.DACD_TREE_WALK = w.walk;
        const r = await updateMerkle(engine, w.view, empty, w.root, leaves, "vault");
        written.push([...r.newNodes].map((n) => `${hex(n.hash)} ${hex(n.record)}`).sort());
        w.memory.putNodes(r.newNodes);
        w.root = r.root;
      }
      expect(hex(walks[1]!.root), `step ${step}`).toBe(hex(walks[0]!.root));
      expect(written[1], `step ${step}: new records`).toEqual(written[0]);
      expect(walks[1]!.cache.size, `step ${step}: cached nodes`).toBe(walks[0]!.cache.size);
      // Every node of the new tree's top levels is in both caches, with the same record.
      for (const line of written[0]!) {
        const hash = Buffer.from(line.slice(0, 64), "hex");
        expect(hex(walks[1]!.cache.get(hash) ?? new Uint8Array())).toBe(
          hex(walks[0]!.cache.get(hash) ?? new Uint8Array()),
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
      new Map([
        [3n, 1n],
        [9n, 2n],
        [1n << 30n, 3n],
      ]),
    );
    const again = new Map([[4n, 8n]]);
    // The root's record missing, then cut to 40 bytes, then an edge record of the wrong height.
    const edge = built.out.record([...built.out].findIndex((w) => w.record.length > 64));
    const wrongHeight = edge.slice();
    wrongHeight[64] = 7;
    for (const corrupt of [undefined, new Uint8Array(40), wrongHeight]) {
      const broken = new RecordingStore();
      broken.memory.putNodes(built.out);
      broken.memory.putNodes([{ hash: built.rootBytes, record: corrupt ?? new Uint8Array(0) }]);
      const lookup = broken.getNodes.bind(broken);
      if (!corrupt) broken.getNodes = async (h) => (await lookup(h)).map((r) => (r?.length ? r : undefined));
      const errors: string[] = [];
      for (const walk of ["js", "native"] as const) {
        const err = await update(walk, broken, empty, built.rootBytes, again).then(
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
      native!.merkleCreate(h, 0, idBytes, root, e);
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
  });
});
