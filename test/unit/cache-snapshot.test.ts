import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEngine } from "../../src/verifier/hash/select.js";
import type { TreeSpec } from "../../src/model/profile.js";
import type { LeafChanges } from "../../src/model/state-update.js";
import { LevelStore } from "../../src/storage/level-store.js";
import type { NodeSource } from "../../src/storage/records/node-source.js";
import { computeRoots, type TreeState } from "../../src/verifier/trees/update/compute-roots.js";
import { createTopNodeCache, type TopNodeCache } from "../../src/verifier/trees/cache/node-cache.js";
import {
  nativeNodeCacheAddon,
  type NativeNodeCacheAddon,
} from "../../src/verifier/trees/native/native-node-cache.js";
import {
  openCacheSnapshot,
  partialPath,
  snapshotPath,
  SnapshotRefused,
  writeCacheSnapshot,
} from "../../src/verifier/trees/cache/cache-snapshot.js";
import { CacheSnapshotWriter } from "../../src/verifier/cache-snapshot-writer.js";
import {
  loadCacheSnapshot,
  placeBranchTops,
  warmNodeCache,
  warmTopNodes,
} from "../../src/verifier/warm-cache.js";
import { toHex64 } from "../../src/util/bytes.js";
import { prng } from "../../src/util/prng.js";
import type { Logger } from "../../src/logging.js";
import { hex } from "../helpers/recording-store.js";
import { nativeAvailable } from "../helpers/native-required.js";

/**
 * The node cache saved to a file and loaded at the next start (cache-snapshot.ts): real stores on
 * disk, real files. Two Merkle trees: one of ids given out in sequence (its cached levels start
 * below the root) and one of ids spread over its range.
 */
const engine = createEngine("auto");
const addon = nativeNodeCacheAddon();
const haveAddon = nativeAvailable("the native addon", addon !== null);
const LEVELS = 10;
const trees: TreeSpec[] = [
  { name: "vault", kind: "merkle", height: 31, leaf: "order" },
  { name: "order", kind: "merkle", height: 31, leaf: "order" },
];
const kinds = [...(haveAddon ? ([["native", addon]] as const) : []), ["JavaScript", null]] as const;

interface State {
  dir: string;
  store: LevelStore;
  prev: TreeState;
  batch: number;
  ids: bigint[];
}

function changesOf(rand: () => number, state: State | null, n: number): Record<string, LeafChanges> {
  const vault: LeafChanges = new Map();
  const order: LeafChanges = new Map();
  const base = state ? state.ids.length : 0;
  for (let i = 0; i < n; i++) {
    vault.set(BigInt(base + i), 1n + BigInt(Math.floor(rand() * 1e9)));
    order.set(BigInt(Math.floor(rand() * 2 ** 31)), 1n + BigInt(Math.floor(rand() * 1e9)));
  }
  // Existing leaves changed too.
  if (state) for (let i = 0; i < n / 2; i++) vault.set(state.ids[Math.floor(rand() * state.ids.length)]!, 5n);
  return { vault, order };
}

/** Verifies and commits the next batch of `changes`. */
async function commit(state: State, changes: Record<string, LeafChanges>): Promise<void> {
  const id = state.batch + 1;
  const done = await computeRoots(engine, state.store, trees, id === 1 ? null : state.prev, changes, id);
  await state.store.commitBatch(
    {
      batch_id: id,
      prev_batch_id: id - 1,
      sequence_number: id,
      roots: Object.fromEntries(trees.map((t) => [t.name, toHex64(done.roots[t.name]!)])),
      root_gens: Object.fromEntries(trees.map((t) => [t.name, done.rootGens[t.name]!])),
      heights: Object.fromEntries(trees.map((t) => [t.name, t.height])),
      claim_hash: "",
      signature: "",
      member_key: "",
      verified_at: "",
    },
    done.newNodes,
    done.newLeaves,
  );
  state.batch = id;
  state.prev = { roots: done.roots, gens: done.rootGens };
  state.ids.push(...changes.vault!.keys());
}

async function newState(seed: number, batches: number): Promise<State> {
  const dir = await mkdtemp(join(tmpdir(), "dacd-cache-snapshot-"));
  const state: State = {
    dir,
    store: await LevelStore.open(dir),
    prev: { roots: {}, gens: {} } as TreeState,
    batch: 0,
    ids: [],
  };
  const rand = prng(seed);
  await commit(state, changesOf(rand, null, 3000));
  for (let b = 1; b < batches; b++) await commit(state, changesOf(rand, state, 200));
  return state;
}

/** Every positioned node of a cache, as its export gives them (tree by tree). */
function exported(cache: TopNodeCache): string {
  return trees.map((t) => [...cache.snapshotChunks(t.name, 1 << 16)].map((c) => hex(c)).join("")).join("|");
}

async function walked(state: State, kindAddon: NativeNodeCacheAddon | null): Promise<TopNodeCache> {
  const cache = createTopNodeCache(LEVELS, kindAddon);
  await warmTopNodes(cache, state.store, engine, trees);
  return cache;
}

async function loaded(state: State, kindAddon: NativeNodeCacheAddon | null, file: string) {
  const cache = createTopNodeCache(LEVELS, kindAddon);
  await placeBranchTops(cache, state.store, engine, trees);
  const result = await loadCacheSnapshot(cache, state.store, trees, file);
  return { cache, ...result };
}

async function snapshotOf(cache: TopNodeCache, state: State, file: string, batchId = state.batch) {
  const record = (await state.store.getBatch(batchId))!;
  return writeCacheSnapshot(cache, file, {
    batchId,
    roots: record.roots,
    trees: trees.map((t) => t.name),
  });
}

/** One more batch through `cache` (reads counted) and without a cache: roots and records of both. */
async function nextBatch(state: State, cache: TopNodeCache | null, seed: number) {
  let reads = 0;
  const counted: NodeSource = {
    getNodes: (hs, gens) => {
      reads += hs.length;
      return state.store.getNodes(hs, gens);
    },
  };
  const changes = changesOf(prng(seed), state, 300);
  const source = cache ? cache.over(counted) : counted;
  const done = await computeRoots(engine, source, trees, state.prev, changes, state.batch + 1);
  const records = [...done.newNodes].map((w) => hex(w.hash) + hex(w.record)).sort();
  return { roots: trees.map((t) => toHex64(done.roots[t.name]!)), records, reads };
}

describe("the node cache's entries", () => {
  const h = (n: number): Uint8Array => new Uint8Array(32).fill(n);
  for (const [kind, kindAddon] of kinds)
    it(`import keeps a later node at its position, replaces an earlier one, and refuses a cut entry (${kind} cache)`, () => {
      const from = createTopNodeCache(4, kindAddon);
      from.remember("vault", 2, 1, h(1), 5, h(11));
      from.remember("vault", 2, 2, h(2), 5, h(12));
      from.remember("vault", 3, 7, h(3), 6, h(13).subarray(0, 9));
      const entries = Buffer.concat([...from.snapshotChunks("vault", 1 << 16)].map((c) => Buffer.from(c)));
      expect(entries.length).toBe(3 * 42 + 32 + 32 + 9);
      const into = createTopNodeCache(4, kindAddon);
      into.remember("vault", 2, 1, h(4), 10, h(14));
      into.remember("vault", 2, 2, h(5), 3, h(15));
      expect(into.importEntries("vault", entries, 100)).toBe(3);
      expect(into.get(h(4), 10)).toEqual(h(14));
      expect(into.get(h(1), 5)).toBeUndefined();
      expect(into.get(h(2), 5)).toEqual(h(12));
      expect(into.get(h(3), 6)).toEqual(h(13).subarray(0, 9));
      // Gens above the snapshot's batch stay out.
      const capped = createTopNodeCache(4, kindAddon);
      expect(capped.importEntries("vault", entries, 5)).toBe(3);
      expect(capped.get(h(3), 6)).toBeUndefined();
      expect(capped.size).toBe(2);
      expect(() =>
        createTopNodeCache(4, kindAddon).importEntries("vault", entries.subarray(0, 50), 100),
      ).toThrow(/cut short/);
    });
});

describe("the node cache's snapshot", () => {
  let state: State;
  let other: State;
  let dir: string;
  beforeAll(async () => {
    state = await newState(1, 4);
    other = await newState(2, 4);
    dir = await mkdtemp(join(tmpdir(), "dacd-cache-snapshot-files-"));
  }, 300_000);
  afterAll(async () => {
    for (const s of [state, other]) {
      await s?.store.close();
      if (s) await rm(s.dir, { recursive: true, force: true });
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  for (const [kind, kindAddon] of kinds)
    it(`a warm-up at a node bound keeps every tree's full top levels, then fills the bound from the next level (${kind} cache)`, async () => {
      const all = await walked(state, kindAddon);
      const entries = (cache: TopNodeCache) =>
        trees.flatMap((t) => {
          // Each chunk is copied before the next is asked for (the buffer is reused).
          const chunks: Buffer[] = [];
          for (const c of cache.snapshotChunks(t.name, 1 << 16)) chunks.push(Buffer.from(c));
          const bytes = Buffer.concat(chunks);
          const out: { tree: string; depth: number; entry: string }[] = [];
          for (let at = 0; at < bytes.length; at += 42 + bytes[at + 41]!)
            out.push({
              tree: t.name,
              depth: bytes[at]!,
              entry: bytes.subarray(at, at + 42 + bytes[at + 41]!).toString("hex"),
            });
          return out;
        });
      const full = entries(all);
      // Bound: every node above depth 6 of both trees and half of those at depth 6 (more trees'
      // full levels than the bound's levelsEveryTreeHolds).
      const above = full.filter((e) => e.depth < 6);
      const atSix = full.filter((e) => e.depth === 6);
      expect(atSix.length).toBeGreaterThan(40);
      const bound = above.length + Math.floor(atSix.length / 2);
      const cache = createTopNodeCache(LEVELS, kindAddon, bound);
      await warmTopNodes(cache, state.store, engine, trees);
      const kept = entries(cache);
      expect(cache.size).toBe(bound);
      expect(kept.length).toBe(bound);
      const keptSet = new Set(kept.map((e) => e.entry));
      for (const e of above) expect(keptSet.has(e.entry), `${e.tree} depth ${e.depth}`).toBe(true);
      expect(kept.filter((e) => e.depth === 6)).toHaveLength(bound - above.length);
      expect(kept.filter((e) => e.depth > 6)).toEqual([]);
      // Every kept node is one the unbounded walk keeps at the same position.
      const fullSet = new Set(full.map((e) => e.entry));
      for (const e of kept) expect(fullSet.has(e.entry)).toBe(true);
    });

  for (const [kind, kindAddon] of kinds)
    it(`round trip (${kind} cache): the loaded cache holds what a walk of the same store holds`, async () => {
      const walk = await walked(state, kindAddon);
      expect(walk.size).toBeGreaterThan(1000);
      // The sequential tree's levels start below its root: the snapshot keeps that top.
      expect(walk.topOf("vault").depth).toBeGreaterThan(10);
      const file = join(dir, `round-trip-${kind}`);
      await snapshotOf(walk, state, file);
      const { cache, nodes, batchesBehind } = await loaded(state, kindAddon, file);
      expect(nodes).toBe(walk.size);
      expect(batchesBehind).toBe(0);
      expect(exported(cache)).toBe(exported(walk));
      // The same lookups answered: a batch reads the same records from the store through either.
      const viaWalk = await nextBatch(state, walk, 7);
      const viaSnapshot = await nextBatch(state, cache, 7);
      expect(viaSnapshot.reads).toBe(viaWalk.reads);
      expect(viaSnapshot.reads).toBeLessThan((await nextBatch(state, null, 7)).reads / 2);
    }, 120_000);

  it.skipIf(!haveAddon)(
    "the native cache's snapshot loads into the JavaScript cache, entry for entry",
    async () => {
      const native = await walked(state, addon);
      const file = join(dir, "native-to-js");
      await snapshotOf(native, state, file);
      const { cache } = await loaded(state, null, file);
      expect(cache.isNative).toBe(false);
      expect(exported(cache)).toBe(exported(native));
    },
  );

  it("loaded, a batch gives the same roots and records as without a cache, after batches since the snapshot", async () => {
    const later = await newState(3, 2);
    try {
      const file = join(dir, "older");
      await snapshotOf(await walked(later, addon), later, file);
      for (let b = 0; b < 3; b++) await commit(later, changesOf(prng(40 + b), later, 200));
      const { cache, batchesBehind } = await loaded(later, addon, file);
      expect(batchesBehind).toBe(3);
      const plain = await nextBatch(later, null, 9);
      const cached = await nextBatch(later, cache, 9);
      expect(cached.roots).toEqual(plain.roots);
      expect(cached.records).toEqual(plain.records);
      expect(cached.reads).toBeLessThan(plain.reads);
    } finally {
      await later.store.close();
      await rm(later.dir, { recursive: true, force: true });
    }
  }, 120_000);

  it("leaves out entries of a gen later than its batch, and of a tree whose top moved", async () => {
    const cache = await walked(state, addon);
    const h = (n: number): Uint8Array => new Uint8Array(32).fill(n);
    // A node of a batch not yet stored when the write began.
    cache.remember("order", 3, 1, h(7), state.batch + 1, h(8));
    const file = join(dir, "later-gen");
    await snapshotOf(cache, state, file);
    const { cache: back } = await loaded(state, addon, file);
    expect(back.get(h(7), state.batch + 1)).toBeUndefined();
    expect(back.size).toBe(cache.size - 1);
    // The vault tree's top as if it had moved since: its entries are not loaded, the order tree's are.
    const moved = createTopNodeCache(LEVELS, addon);
    await placeBranchTops(moved, state.store, engine, trees);
    moved.setTop("vault", 2, 0n);
    expect((await loadCacheSnapshot(moved, state.store, trees, file)).moved).toEqual(["vault"]);
    expect(exported(moved).split("|")).toEqual(["", exported(back).split("|")[1]]);
    // At a start, such a tree is walked instead.
    const started = createTopNodeCache(LEVELS, addon);
    await placeBranchTops(started, state.store, engine, trees);
    const record = (await state.store.getBatch(state.batch))!;
    const stale = join(dir, "moved-top");
    const atRoot = createTopNodeCache(LEVELS, addon);
    await warmTopNodes(atRoot, state.store, engine, [trees[1]!]);
    // A snapshot whose vault tree was cached from its root (as a first start on an empty store leaves it).
    await writeCacheSnapshot(atRoot, stale, {
      batchId: state.batch,
      roots: record.roots,
      trees: trees.map((t) => t.name),
    });
    const warmed = await warmNodeCache(started, state.store, engine, trees, stale);
    expect(warmed).toMatchObject({ source: "snapshot", walked: ["vault"] });
    expect(exported(started)).toBe(exported(await walked(state, addon)));
  });

  it("a flipped byte is refused by the checksum, and the warm-up walks instead", async () => {
    const file = join(dir, "damaged");
    await snapshotOf(await walked(state, addon), state, file);
    const bytes = await readFile(file);
    bytes[Math.floor(bytes.length / 2)]! ^= 0x10;
    await writeFile(file, bytes);
    await expect(openCacheSnapshot(file)).rejects.toThrow(/damaged \(its checksum does not match\)/);
    const cache = createTopNodeCache(LEVELS, addon);
    const warmed = await warmNodeCache(cache, state.store, engine, trees, file);
    expect(warmed).toMatchObject({ source: "walk", refused: expect.stringMatching(/checksum/) });
    expect(exported(cache)).toBe(exported(await walked(state, addon)));
  });

  it("a snapshot of another store (its batch's roots differ) is refused, and one of other trees", async () => {
    const file = join(dir, "other-store");
    await snapshotOf(await walked(other, addon), other, file);
    const cache = createTopNodeCache(LEVELS, addon);
    await placeBranchTops(cache, state.store, engine, trees);
    await expect(loadCacheSnapshot(cache, state.store, trees, file)).rejects.toThrow(
      new SnapshotRefused(
        `the snapshot's vault root of batch 4 is not the store's (a snapshot of another store)`,
      ),
    );
    expect(cache.size).toBe(0);
    const warmed = await warmNodeCache(cache, state.store, engine, trees, file);
    expect(warmed.source).toBe("walk");
    await expect(loadCacheSnapshot(cache, state.store, trees.slice(0, 1), file)).rejects.toThrow(
      /holds the trees vault, order, this member keeps vault$/,
    );
    await expect(loadCacheSnapshot(cache, state.store, trees, join(dir, "none"))).rejects.toThrow(
      /^no snapshot$/,
    );
  });

  it("a write abandoned half-way leaves no partial file and the old snapshot as it was", async () => {
    const cache = await walked(state, addon);
    const file = join(dir, "abandoned");
    await snapshotOf(cache, state, file);
    const before = await readFile(file);
    const abort = new AbortController();
    const record = (await state.store.getBatch(state.batch))!;
    const writing = writeCacheSnapshot(
      cache,
      file,
      { batchId: state.batch - 1, roots: record.roots, trees: trees.map((t) => t.name) },
      { signal: abort.signal, chunkBytes: 1 },
    );
    while (!existsSync(partialPath(file))) await new Promise((r) => setImmediate(r));
    abort.abort(new Error("stopping"));
    await expect(writing).rejects.toThrow("stopping");
    expect(existsSync(partialPath(file))).toBe(false);
    expect((await readFile(file)).equals(before)).toBe(true);
  });

  it("the daemon's writer: a stop abandons a background write and saves the cache once, whole", async () => {
    const cache = await walked(state, addon);
    const dataDir = join(dir, "data");
    const lines: string[] = [];
    const log = {
      info: (_: unknown, m: string) => void lines.push(m),
      warn: (_: unknown, m: string) => void lines.push(m),
    } as unknown as Pick<Logger, "info" | "warn">;
    const writer = new CacheSnapshotWriter(
      cache,
      state.store,
      trees.map((t) => t.name),
      snapshotPath(dataDir),
      log,
    );
    // Not warm: nothing is written.
    writer.writeInBackground();
    expect(writer.pending).toBeUndefined();
    writer.markWarm();
    writer.writeInBackground();
    expect(writer.pending).toBeDefined();
    await writer.stop();
    expect(existsSync(partialPath(writer.file))).toBe(false);
    expect(lines).toEqual(["node cache snapshot written"]);
    const { nodes } = await loaded(state, addon, writer.file);
    expect(nodes).toBe(cache.size);
    // Stopped: no more writes.
    writer.writeInBackground();
    expect(writer.pending).toBeUndefined();
  });

  it.skipIf(!haveAddon)(
    "an addon built before the snapshot calls: the cache works, without a snapshot",
    async () => {
      const a = addon!;
      const older: NativeNodeCacheAddon = {
        nodeCacheCreate: a.nodeCacheCreate,
        nodeCacheForget: a.nodeCacheForget,
        nodeCacheGet: a.nodeCacheGet,
        nodeCacheRemember: a.nodeCacheRemember,
        nodeCacheRememberPacked: a.nodeCacheRememberPacked,
        nodeCacheSize: a.nodeCacheSize,
      };
      const cache = createTopNodeCache(LEVELS, older);
      expect(cache.isNative).toBe(true);
      expect(cache.canSnapshot).toBe(false);
      const warmed = await warmNodeCache(cache, state.store, engine, trees, join(dir, "round-trip-native"));
      expect(warmed).toMatchObject({ source: "walk", refused: expect.stringMatching(/older native addon/) });
      expect(warmed.nodes).toBeGreaterThan(1000);
      await expect(snapshotOf(cache, state, join(dir, "older-addon"))).rejects.toThrow(SnapshotRefused);
    },
  );
});
