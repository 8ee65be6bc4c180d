import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LevelStore } from "../../src/storage/level-store.js";
import { MemoryNodeStore } from "../../src/storage/memory-store.js";
import { bigintToBytes32, bytesToBigint, toHex64 } from "../../src/util/bytes.js";
import { computeRoots, emptyRoots, type TreeState } from "../../src/verifier/trees/update/compute-roots.js";
import type { NodeSource, NodeWrite } from "../../src/storage/records/node-source.js";
import { writeBinaryRecord } from "../../src/storage/records/node-record.js";
import { defaultTreeWalk, type TreeWalk } from "../../src/verifier/trees/update/tree-walk.js";
import { WasmEngine } from "../../src/verifier/hash/wasm-engine.js";
import { createEngine } from "../../src/verifier/hash/select.js";
import type { TreeSpec } from "../../src/model/profile.js";
import type { LeafChanges } from "../../src/model/state-update.js";
import { naiveMerkleRoot, naivePatriciaRoot } from "../helpers/naive-trees.js";
import { prng } from "../../src/util/prng.js";
import { walkLeaves } from "../../src/verifier/trees/read/walk-leaves.js";
import { hashPairs } from "../../src/verifier/trees/format/leaves.js";
import { readLeaf } from "../../src/verifier/trees/read/read-leaf.js";
import { nativeAvailable } from "../helpers/native-required.js";

const engine = new WasmEngine();
// Reading back and checking proofs takes many hashes: the fastest engine built here.
const checker = createEngine("auto");
const merkle: TreeSpec = { name: "order", kind: "merkle", height: 12, leaf: "order" };
const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");

/**
 * Node records in memory under their gen and hash, as the store keys them (MemoryNodeStore finds a
 * node by its hash alone): a walk that names a child by the wrong gen does not find it.
 */
class GenStore {
  private readonly nodes = new Map<string, Uint8Array>();

  getNodes(hashes: readonly Uint8Array[], gens: ArrayLike<number>): Promise<(Uint8Array | undefined)[]> {
    return Promise.resolve(hashes.map((h, i) => this.nodes.get(`${gens[i]}/${hex(h)}`)));
  }

  putNodes(writes: Iterable<NodeWrite>, gen: number): void {
    for (const w of writes) this.nodes.set(`${gen}/${hex(w.hash)}`, w.record.slice());
  }
}

/** The gens of the batches the tests compute: unique across them, as batch ids are in a store. */
let lastGen = 0;
const patricia: TreeSpec = { name: "order", kind: "patricia", height: 251, leaf: "order" };

/**
 * Runs `steps` random batches (inserts, overwrites, deletions to 0) against the store-backed
 * incremental tree, each from a randomly chosen earlier state (deep prev_batch_id jumps), and checks
 * every root against a naive recomputation of that state's full leaf set, and the gens the tree
 * names: each batch's records are stored under its own gen.
 */
async function differential(
  spec: TreeSpec,
  seed: number,
  steps: number,
  idBits: number,
  store: {
    getNodes: NodeSource["getNodes"];
    put: (w: Awaited<ReturnType<typeof computeRoots>>, gen: number) => Promise<void>;
  },
  walk: TreeWalk = defaultTreeWalk(),
) {
  const rand = prng(seed);
  // Each state: its trees' roots and root gens, its leaves, and the gen of the batch that last set
  // each non-empty leaf.
  const states: { prev: TreeState | null; leaves: Map<bigint, bigint>; leafGens: Map<bigint, number> }[] = [
    { prev: null, leaves: new Map(), leafGens: new Map() },
  ];
  const randomId = (): bigint => {
    // Cluster ids sometimes so that subtrees fill up, and spread them otherwise.
    if (rand() < 0.5) return BigInt(Math.floor(rand() * 16));
    let id = 0n;
    for (let b = 0; b < idBits; b += 16) id = (id << 16n) | BigInt(Math.floor(rand() * 65536));
    return id & ((1n << BigInt(idBits)) - 1n);
  };
  for (let step = 0; step < steps; step++) {
    // Mostly build on the latest state, sometimes jump back several batches.
    const from = rand() < 0.7 ? states.length - 1 : Math.floor(rand() * states.length);
    const base = states[from]!;
    const leaves = new Map(base.leaves);
    const leafGens = new Map(base.leafGens);
    const gen = ++lastGen;
    const changes: LeafChanges = new Map();
    const n = 1 + Math.floor(rand() * 12);
    const existing = [...leaves.keys()];
    for (let i = 0; i < n; i++) {
      const r = rand();
      const id =
        r < 0.3 && existing.length > 0 ? existing[Math.floor(rand() * existing.length)]! : randomId();
      const value = r < 0.45 ? 0n : BigInt(1 + Math.floor(rand() * 1e9));
      changes.set(id, value);
      leaves.set(id, value);
      if (value === 0n) leafGens.delete(id);
      else leafGens.set(id, gen);
    }
    const result = await computeRoots(
      engine,
      store,
      [spec],
      base.prev,
      { order: changes },
      gen,
      undefined,
      walk,
    );
    await store.put(result, gen);
    const rootGen = result.rootGens.order!;
    // The new root is the batch's, unless the tree is empty.
    expect(rootGen, `seed ${seed} step ${step}: root gen`).toBe(leafGens.size === 0 ? 0 : gen);
    states.push({ prev: { roots: result.roots, gens: result.rootGens }, leaves, leafGens });
    const want =
      spec.kind === "merkle"
        ? naiveMerkleRoot(spec.height, leaves, 0n)
        : naivePatriciaRoot(spec.height, leaves);
    expect(toHex64(result.roots.order!), `seed ${seed} step ${step}`).toBe(toHex64(bigintToBytes32(want)));
    if (spec.kind === "merkle")
      await readBack(spec, store, result.roots.order!, rootGen, leaves, [randomId(), randomId()], leafGens);
    else await readGens(spec, store, result.roots.order!, rootGen, leafGens);
  }
}

/** Walks a tree from its root and gen: every leaf is reached, under the gen of the batch that set it. */
async function readGens(
  spec: TreeSpec,
  store: { getNodes: NodeSource["getNodes"] },
  root: Uint8Array,
  rootGen: number,
  leafGens: ReadonlyMap<bigint, number>,
): Promise<void> {
  const walked: [bigint, number][] = [];
  const problems: string[] = [];
  const walk = walkLeaves(checker, spec, root, rootGen, {
    getNodes: (h, g) => store.getNodes(h, g),
    chunk: 5,
    onProblem: (p) =>
      problems.push(JSON.stringify(p, (_k, v: unknown) => (typeof v === "bigint" ? `${v}` : v))),
  });
  for await (const block of walk) for (const t of block) walked.push([t.index, t.gen]);
  expect(problems).toEqual([]);
  expect(walked).toEqual([...leafGens].sort(([a], [b]) => (a < b ? -1 : 1)));
}

/**
 * Reads a Merkle state back from the store the way dump and proof do: the walk yields exactly the
 * non-empty leaves, and each looked-up leaf (members and ids that were never set, which often end
 * inside an edge record) comes with siblings that hash up to the root.
 */
async function readBack(
  spec: TreeSpec,
  store: { getNodes: NodeSource["getNodes"] },
  root: Uint8Array,
  rootGen: number,
  leaves: ReadonlyMap<bigint, bigint>,
  extraIds: bigint[],
  leafGens?: ReadonlyMap<bigint, number>,
): Promise<void> {
  const nonEmpty = [...leaves].filter(([, v]) => v !== 0n).sort(([a], [b]) => (a < b ? -1 : 1));
  const walked: [bigint, bigint][] = [];
  const walkedGens: [bigint, number][] = [];
  const walk = walkLeaves(checker, spec, root, rootGen, {
    getNodes: (h, g) => store.getNodes(h, g),
    chunk: 3,
  });
  for await (const block of walk)
    for (const t of block) {
      walked.push([t.index, bytesToBigint(t.hash)]);
      walkedGens.push([t.index, t.gen]);
    }
  expect(walked).toEqual(nonEmpty);
  if (leafGens) expect(walkedGens).toEqual([...leafGens].sort(([a], [b]) => (a < b ? -1 : 1)));
  const ids = [...leaves.keys(), ...extraIds];
  const found = await Promise.all(ids.map((id) => readLeaf(checker, store, spec, root, rootGen, id)));
  ids.forEach((id, i) => expect(bytesToBigint(found[i]!.leafHash)).toBe(leaves.get(id) ?? 0n));
  if (leafGens)
    ids.forEach((id, i) => expect(found[i]!.leafGen, `gen of leaf ${id}`).toBe(leafGens.get(id) ?? 0));
  // Every proof hashed up to the root together, one engine call per level.
  let hashes = found.map((f) => f.leafHash);
  for (let k = 0; k < spec.height; k++) {
    const right = ids.map((id) => ((id >> BigInt(k)) & 1n) === 1n);
    const sibs = found.map((f) => f.siblings![k]!);
    hashes = await hashPairs(
      checker,
      hashes.map((h, i) => (right[i] ? sibs[i]! : h)),
      hashes.map((h, i) => (right[i] ? h : sibs[i]!)),
    );
  }
  hashes.forEach((h, i) => expect(toHex64(h), `proof of leaf ${ids[i]}`).toBe(toHex64(root)));
}

describe("incremental trees equal a naive full recomputation", () => {
  const memory = new GenStore();
  const inMemory = {
    getNodes: memory.getNodes.bind(memory),
    put: async (r: Awaited<ReturnType<typeof computeRoots>>, gen: number) => memory.putNodes(r.newNodes, gen),
  };
  let dir: string;
  let level: LevelStore;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "dacd-trees-"));
    level = await LevelStore.open(dir);
  });
  afterAll(async () => {
    await level.close();
    await rm(dir, { recursive: true, force: true });
  });
  const onDisk = () => ({
    getNodes: level.getNodes.bind(level),
    put: (r: Awaited<ReturnType<typeof computeRoots>>, gen: number) =>
      level.commitBatch(
        {
          batch_id: gen,
          prev_batch_id: -1,
          sequence_number: 0,
          roots: {},
          root_gens: {},
          heights: {},
          claim_hash: "",
          signature: "",
          member_key: "",
          verified_at: "",
        },
        r.newNodes,
        r.newLeaves,
      ),
  });

  // The native walks where the addon is built (the default), and the JavaScript ones they fall back
  // to: each tree kind over three seeds with the default walk and two with the JavaScript one.
  const walks = (seeds: number[]) => [
    ...seeds.map((s) => [s, "auto"]),
    ...seeds.slice(0, 2).map((s) => [s, "js"]),
  ];
  const walkNamed = (walk: string): TreeWalk => (walk === "js" ? null : defaultTreeWalk());
  it.each(walks([1, 2, 3]))("Merkle height 12, in memory, seed %i, %s walk", (seed, walk) =>
    differential(merkle, seed as number, 15, 12, inMemory, walkNamed(walk as string)),
  );
  // The naive recomputation (JS BigInt Pedersen) makes each step of a tall tree slow: fewer steps.
  // Seconds on a quiet machine, more on a busy one: 60 s rather than the unit project's 20.
  it("Merkle height 40 (long single-leaf chains), in memory", async () => {
    await differential({ ...merkle, height: 40 }, 9, 8, 40, inMemory);
  }, 60_000);
  it.each(walks([4, 5, 6]))("Patricia height 251, in memory, seed %i, %s walk", (seed, walk) =>
    differential(patricia, seed as number, 25, 251, inMemory, walkNamed(walk as string)),
  );
  it("Merkle and Patricia on LevelDB", async () => {
    await differential(merkle, 7, 10, 12, onDisk());
    await differential(patricia, 8, 20, 251, onDisk());
  });

  it("continues a store written before edge records (lone leaves under chains of binary nodes)", async () => {
    const spec: TreeSpec = { ...merkle, height: 20 };
    const memory = new GenStore();
    const rand = prng(21);
    const leaves = new Map<bigint, bigint>();
    while (leaves.size < 30) leaves.set(BigInt(Math.floor(rand() * 2 ** 20)), BigInt(1 + leaves.size));
    const leafGens = new Map([...leaves.keys()].map((id) => [id, 1]));
    // The old form: every non-empty node a binary record, however many leaves it holds, all
    // written by batch 1 (an empty child's gen is 0).
    const empty = await emptyRoots(checker, spec.leaf, spec.height);
    const build = async (h: number, ids: bigint[]): Promise<Uint8Array> => {
      if (ids.length === 0) return empty[h]!;
      if (h === 0) return bigintToBytes32(leaves.get(ids[0]!)!);
      const bit = BigInt(h - 1);
      const left = ids.filter((i) => ((i >> bit) & 1n) === 0n);
      const right = ids.filter((i) => ((i >> bit) & 1n) === 1n);
      const l = await build(h - 1, left);
      const r = await build(h - 1, right);
      const [hash] = await hashPairs(checker, [l], [r]);
      const record = new Uint8Array(72);
      writeBinaryRecord(record, 0, l, 0, left.length > 0 ? 1 : 0, r, 0, right.length > 0 ? 1 : 0);
      memory.putNodes([{ hash: hash!, record }], 1);
      return hash!;
    };
    let prev: TreeState = {
      roots: { order: await build(spec.height, [...leaves.keys()]) },
      gens: { order: 1 },
    };
    const store = { getNodes: memory.getNodes.bind(memory) };
    await readBack(spec, store, prev.roots.order!, 1, leaves, [], leafGens);
    for (let step = 0; step < 4; step++) {
      const gen = 2 + step;
      const existing = [...leaves.keys()];
      const changes: LeafChanges = new Map();
      for (let i = 0; i < 8; i++) {
        const id =
          i % 2 ? existing[Math.floor(rand() * existing.length)]! : BigInt(Math.floor(rand() * 2 ** 20));
        changes.set(id, i % 4 === 1 ? 0n : BigInt(1000 + step * 10 + i));
      }
      for (const [id, v] of changes) {
        leaves.set(id, v as bigint);
        if (v === 0n) leafGens.delete(id);
        else leafGens.set(id, gen);
      }
      const r = await computeRoots(engine, store, [spec], prev, { order: changes }, gen);
      memory.putNodes(r.newNodes, gen);
      prev = { roots: r.roots, gens: r.rootGens };
      expect(prev.gens.order).toBe(gen);
      expect(toHex64(prev.roots.order!), `step ${step}`).toBe(
        toHex64(bigintToBytes32(naiveMerkleRoot(20, leaves, 0n))),
      );
      await readBack(spec, store, prev.roots.order!, gen, leaves, [], leafGens);
    }
  });

  it("matches the spec's Patricia example: leaves {1: 75, 2: 25} at height 251", async () => {
    const r = await computeRoots(
      engine,
      new MemoryNodeStore(),
      [patricia],
      null,
      {
        order: new Map([
          [1n, 75n],
          [2n, 25n],
        ]),
      },
      1,
    );
    expect(r.rootGens.order).toBe(1);
    expect(toHex64(r.roots.order!)).toBe("06728b2316b72c82bdee91c665affeff1eeb39a3f7bff9690a0098c183f5e6e5");
    expect(
      bytesToBigint(
        bigintToBytes32(
          naivePatriciaRoot(
            251,
            new Map([
              [1n, 75n],
              [2n, 25n],
            ]),
          ),
        ),
      ),
    ).toBe(0x06728b2316b72c82bdee91c665affeff1eeb39a3f7bff9690a0098c183f5e6e5n);
  });

  it("refuses leaf ids that do not fit the tree, Merkle and Patricia alike", async () => {
    const small: TreeSpec = { name: "order", kind: "patricia", height: 8, leaf: "order" };
    for (const spec of [small, { ...small, kind: "merkle" } as const]) {
      const outside = new Map([
        [3n, 5n],
        [256n, 7n],
      ]);
      await expect(
        computeRoots(engine, new MemoryNodeStore(), [spec], null, { order: outside }, 1),
        spec.kind,
      ).rejects.toThrow(/does not fit a tree of height 8/);
    }
  });

  it("matches the spec's empty vault tree root and empty position leaf", async () => {
    const vault: TreeSpec = { name: "vault", kind: "merkle", height: 31, leaf: "vault" };
    const r = await computeRoots(engine, new MemoryNodeStore(), [vault], null, {}, 1);
    expect(toHex64(r.roots.vault!)).toBe("0075364111a7a336756626d19fc8ec8df6328a5e63681c68ffaa312f6bf98c5c");
    // Nothing changed: the empty tree has no record, its gen is 0.
    expect(r.rootGens.vault).toBe(0);
    const pos: TreeSpec = { name: "position", kind: "merkle", height: 0 + 1, leaf: "position" };
    const p = await computeRoots(
      engine,
      new MemoryNodeStore(),
      [pos],
      null,
      { position: new Map([[0n, { publicKey: 0n, collateral: 0n, assets: [] }]]) },
      1,
    );
    // Height 1 with one empty leaf set explicitly: the root is H(E0, E0) with E0 the spec's constant.
    const { pedersen } = await import("@scure/starknet");
    const e0 = 0x028109b4e56fad0455aa4b316045c93937b1e7e4e0fc663db375b9e67c80c620n;
    expect(bytesToBigint(p.roots.position!)).toBe(BigInt(pedersen(e0, e0)));
  });
});

// 480k hashes: seconds with the native engine, about a minute on WASM, so only where the addon is built.
const fast = createEngine("auto");
const fastEngine = nativeAvailable("the native Pedersen engine", fast.name.startsWith("native"));
describe.skipIf(!fastEngine)("large batches", () => {
  it("handle more new nodes than a function call takes arguments (regression: push(...nodes))", async () => {
    const spec: TreeSpec = { name: "order", kind: "merkle", height: 63, leaf: "order" };
    // Consecutive ids: a dense subtree, one binary record per inner node (sparse leaves would
    // mostly become single edge records).
    const changes: LeafChanges = new Map();
    while (changes.size < 120_000) changes.set(BigInt(changes.size), 1n + BigInt(changes.size));
    const r = await computeRoots(
      fast,
      new MemoryNodeStore(),
      [spec, { ...spec, name: "vault" }],
      null,
      { order: changes, vault: changes },
      1,
    );
    expect(r.newNodes.length).toBeGreaterThan(200_000);
    expect(r.roots.order).toEqual(r.roots.vault);
  });
});
