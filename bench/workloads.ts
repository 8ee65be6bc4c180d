import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { Session } from "node:inspector/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { computeClaimHash } from "../src/signer/claim.js";
import { EthSigner } from "../src/signer/eth-signer.js";
import { BULK_LOAD_WRITE_BUFFER } from "../src/storage/bulk-writer.js";
import { LevelStore, type LevelTuning } from "../src/storage/level-store.js";
import type { StoreIdentity } from "../src/storage/batch-record.js";
import type { PendingCommit } from "../src/storage/pending-commit.js";
import { toHex0x, toHex64 } from "../src/util/bytes.js";
import { prng } from "../src/util/prng.js";
import { buildMerkle, buildPatricia, type NodeSink } from "../src/verifier/trees/bulk/bulk-build.js";
import {
  computeRoots,
  emptyRoots,
  type RootGens,
  type Roots,
  type TreeState,
} from "../src/verifier/trees/update/compute-roots.js";
import {
  chainHashes,
  climbChains,
  hashWithConstant,
  type ChainClimb,
  type ClimbedChains,
  type HashEngine,
} from "../src/verifier/hash/engine.js";
import { encodeLeafRecord, hashLeaves } from "../src/verifier/trees/format/leaves.js";
import { keptTrees, makeProfile, type Profile, type TreeName, type TreeSpec } from "../src/model/profile.js";
import { createTopNodeCache, type TopNodeCache } from "../src/verifier/trees/cache/node-cache.js";
import type { NativeNodeCacheAddon } from "../src/verifier/trees/native/native-node-cache.js";
import type { NodeWrite } from "../src/storage/records/node-source.js";
import { NodeWrites } from "../src/storage/records/node-writes.js";
import { warmNodeCache, warmTopNodes } from "../src/verifier/warm-cache.js";
import { setRandomReads } from "../src/storage/level-binding.js";
import { verifySignAndStore, type StageContext } from "../src/poller/member/batch-stages.js";
import { chooseTreeWalk } from "../src/verifier/trees/update/tree-walk.js";
import { runtimeSettings } from "../src/config/runtime-settings.js";
import { LoadedIds, type LoadedState } from "./loaded-state.js";
import type { Leaf, LeafChanges, PositionLeaf, StateUpdate, VaultLeaf } from "../src/model/state-update.js";

/**
 * The W-spot and W-perp workloads of the performance issue: a large initial state built bottom-up,
 * then batches of mixed new and existing leaves, each timed from the parsed update to the stored
 * and signed claim (`verifySignAndStore`), with the native engine and the WASM engine on the same
 * store and the same batches.
 */

export interface WorkloadResult {
  batch_s_native: number;
  batch_s_wasm: number;
  hashes: number;
  storage_ops: number;
  bulk_load_s: number;
  /** Where the median native batch's time went (wall time with such calls in flight; they overlap). */
  native_breakdown_s: { reads: number; hashing: number; commit: number };
  /** With `beside`: the native batches timed with the other work running beside them. */
  batch_s_native_beside?: number[];
  /** With `beside`: the native batches timed alone (the same as batch_s_native's batches). */
  batch_s_native_alone?: number[];
  /** MB LevelDB's compaction wrote during each timed native batch (from its `leveldb.stats`). */
  compaction_mb: number[];
  /** With `kernels`: the median native batch per kernel, the kernels alternated batch by batch. */
  batch_s_by_kernel?: Record<string, number>;
  /** With `kernels`: the median CPU seconds (all threads) of a batch per kernel. */
  cpu_s_by_kernel?: Record<string, number>;
  /** Per timed native batch: records read from LevelDB (what the node cache did not hold). */
  records_read: number[];
  /** Per timed native batch: node lookups, from the node cache or LevelDB (tree statistics). */
  nodes_looked_up: number[];
  /** Per timed native batch: records written (nodes, leaves and the batch record). */
  records_written: number[];
  /** The node cache: levels below each tree's first branch, its node bound, its nodes once warm. */
  cache: { levels: number; max_nodes: number | null; nodes_warm: number };
  /** Seconds the node cache's warm-up took (the first one, from the loaded state). */
  warm_s: number;
  /** Where that warm-up took its nodes from: a snapshot (`snapshotFile`) or a walk of the trees. */
  warm_source: "snapshot" | "walk";
  /** Ids given out in sequence (`-seq` workloads). */
  sequential_ids: boolean;
  /**
   * Per timed native batch: its engine calls replayed right after it on the same engine (its
   * threads), all at once, on random values (replayHashing): what its hashing alone costs.
   */
  hash_only_s: number[];
}

/** Sizes: the full workload, or a tenth of it with --quick. */
export interface WorkloadSize {
  initial: Partial<Record<TreeName, number>>;
  batch: Partial<Record<TreeName, number>>;
  /**
   * Merkle trees' ids given out in sequence (`--sequential-ids`): the state holds ids 0 to n − 1
   * and a batch's new leaves come from the next ids. Unset: ids uniform over the tree's range.
   */
  sequentialIds?: boolean;
}

export const W_SPOT: WorkloadSize = {
  initial: { vault: 1_000_000, order: 500_000, rollup_vault: 200_000 },
  batch: { vault: 10_000, order: 5_000, rollup_vault: 2_000 },
};
export const W_PERP: WorkloadSize = {
  initial: { position: 500_000, order: 500_000 },
  batch: { position: 10_000, order: 10_000 },
};

/** Deterministic data for the workloads, on the shared seeded PRNG. */
class Rng {
  private readonly next: () => number;
  constructor(seed: number) {
    this.next = prng(seed);
  }
  u32(): number {
    return Math.floor(this.next() * 4294967296);
  }
  bits(n: number): bigint {
    let v = 0n;
    for (let i = 0; i < n; i += 32) v = (v << 32n) | BigInt(this.u32());
    return v & ((1n << BigInt(n)) - 1n);
  }
  below(n: number): number {
    return this.u32() % n;
  }
}

function randomLeaf(rng: Rng, spec: TreeSpec): Leaf {
  if (spec.leaf === "vault") {
    return {
      key: rng.bits(250) + 1n,
      token: rng.bits(250) + 1n,
      balance: rng.bits(62) + 1n,
    } satisfies VaultLeaf;
  }
  if (spec.leaf === "position") {
    const n = 1 + rng.below(4);
    const ids = new Set<bigint>();
    while (ids.size < n) ids.add(rng.bits(120));
    const assets = [...ids]
      .sort((a, b) => (a < b ? -1 : 1))
      .map((assetId) => ({ assetId, balance: rng.bits(63) - (1n << 62n), fundingIndex: rng.bits(40) }));
    return {
      publicKey: rng.bits(250) + 1n,
      collateral: rng.bits(63) - (1n << 62n),
      assets,
    } satisfies PositionLeaf;
  }
  return rng.bits(spec.name === "order" && spec.height === 64 ? 63 : 62) + 1n;
}

/** Leaf ids: dense random picks in the tree (Patricia order ids are spread over 251 bits). */
function randomId(rng: Rng, spec: TreeSpec): bigint {
  return rng.bits(Math.min(spec.height, spec.kind === "patricia" ? 250 : spec.height));
}

/** Whether `spec`'s ids are given out in sequence (Patricia order ids are hashes: never). */
function sequential(size: WorkloadSize, spec: TreeSpec): boolean {
  return size.sequentialIds === true && spec.kind !== "patricia";
}

/**
 * A new leaf's id where ids go in sequence after the state's `count`: one of the next ids, as many
 * as the batch's new leaves or 2% of the state, whichever is more (so later batches meet some of
 * them again, as an update).
 */
function nextSequentialId(rng: Rng, count: number, newLeaves: number): bigint {
  return BigInt(count + rng.below(Math.max(Math.ceil(count / 50), newLeaves)));
}

/** Counts hashes and the wall time during which at least one engine call is running. */
class CountingEngine implements HashEngine {
  hashes = 0;
  readonly busy = new BusyClock();
  /** While a timed batch runs, its calls, for replayHashing; undefined: none are recorded. */
  calls: EngineCall[] | undefined;
  /** Settable, so that batches can alternate between engines (one per forced kernel). */
  constructor(public inner: HashEngine) {}
  get name(): string {
    return this.inner.name;
  }
  async hashMany(xs: Uint8Array, ys: Uint8Array): Promise<Uint8Array> {
    this.hashes += xs.length / 32;
    this.calls?.push({ kind: "pairs", n: xs.length / 32 });
    return this.busy.time(async () => this.inner.hashMany(xs, ys));
  }
  async hashConst(vs: Uint8Array, c: Uint8Array, constantIsY: boolean): Promise<Uint8Array> {
    this.hashes += vs.length / 32;
    this.calls?.push({ kind: "one-sided", n: vs.length / 32, c: c.slice(), constantIsY });
    return this.busy.time(async () => hashWithConstant(this.inner, vs, c, constantIsY));
  }
  async climbChains(job: ChainClimb): Promise<ClimbedChains> {
    this.hashes += chainHashes(job);
    // Copied: a walk may reuse its buffers once the call is done.
    this.calls?.push({
      kind: "climb",
      job: {
        ...job,
        starts: job.starts.slice(),
        paths: job.paths.slice(),
        from: job.from.slice(),
        to: job.to.slice(),
      },
    });
    return this.busy.time(async () => climbChains(this.inner, job));
  }
}

/** One engine call of a batch, as CountingEngine records it for the replay (its size, not its values). */
type EngineCall =
  | { kind: "pairs"; n: number }
  | { kind: "one-sided"; n: number; c: Uint8Array; constantIsY: boolean }
  | { kind: "climb"; job: ChainClimb };

/** The most pairs one replayed call takes from the random input; a larger call is replayed in parts. */
const REPLAY_MAX = 1 << 18;

/** n pairs of field elements (below 2^251, so below the prime), packed as hashMany takes them. */
function randomFieldPairs(rng: Rng, n: number): { xs: Uint8Array; ys: Uint8Array } {
  const fill = (): Uint8Array => {
    const out = new Uint8Array(n * 32);
    const view = new DataView(out.buffer);
    for (let i = 0; i < out.length; i += 4) view.setUint32(i, rng.u32());
    for (let i = 0; i < out.length; i += 32) out[i]! &= 0x07;
    return out;
  };
  return { xs: fill(), ys: fill() };
}

/**
 * Seconds `engine` takes for a batch's hashing alone: its calls again, of the same kinds and sizes
 * (chain climbs as they were), on random values, all handed over at once so that the engine's
 * threads are never kept waiting by a store read or by the walk.
 */
async function replayHashing(
  engine: HashEngine,
  input: { xs: Uint8Array; ys: Uint8Array },
  calls: readonly EngineCall[],
): Promise<number> {
  const inParts = (n: number, call: (bytes: number) => unknown): unknown[] => {
    const parts = [];
    for (let left = n; left > 0; left -= REPLAY_MAX) parts.push(call(Math.min(left, REPLAY_MAX) * 32));
    return parts;
  };
  const t = performance.now();
  await Promise.all(
    calls.flatMap((c) =>
      c.kind === "pairs"
        ? inParts(c.n, (b) => engine.hashMany(input.xs.subarray(0, b), input.ys.subarray(0, b)))
        : c.kind === "one-sided"
          ? inParts(c.n, (b) => hashWithConstant(engine, input.xs.subarray(0, b), c.c, c.constantIsY))
          : [climbChains(engine, c.job)],
    ),
  );
  return (performance.now() - t) / 1000;
}

/**
 * Wall time during which at least one call of a kind is in flight: the trees run concurrently, so
 * summing each call's duration would count overlapping waits twice.
 */
class BusyClock {
  ms = 0;
  private inFlight = 0;
  private since = 0;
  async time<T>(fn: () => Promise<T>): Promise<T> {
    if (this.inFlight++ === 0) this.since = performance.now();
    try {
      return await fn();
    } finally {
      if (--this.inFlight === 0) this.ms += performance.now() - this.since;
    }
  }
  reset(): void {
    this.ms = 0;
  }
}

/** The batch the bulk load stands for: its records are written under its id (storage/keys.ts). */
const LOAD_BATCH = 0;

/**
 * Builds the initial state bottom-up into the store as batch 0; returns the roots and their gens,
 * the existing ids and how long generating the random ids and leaves took (the bench's own work, which the
 * bulk-load figure leaves out: a member loads leaves it is given).
 */
async function bulkLoad(
  store: LevelStore,
  engine: HashEngine,
  profile: Profile,
  trees: TreeSpec[],
  size: WorkloadSize,
  rng: Rng,
): Promise<{
  roots: Roots;
  gens: RootGens;
  ids: Map<TreeName, LoadedIds>;
  generatingS: number;
  detail: string;
}> {
  let generatingMs = 0;
  const counting = new CountingEngine(engine);
  engine = counting;
  const writeWait = new BusyClock();
  const generating = <T>(fn: () => T): T => {
    const t = performance.now();
    const out = fn();
    generatingMs += performance.now() - t;
    return out;
  };
  const roots: Roots = {};
  const gens: RootGens = {};
  const ids = new Map<TreeName, LoadedIds>();
  // Records go to LevelDB in key order at the end (BulkWriter), as `dacd escape load` writes them.
  const writer = store.bulkWriter();
  const sink: NodeSink = (nodes) => writeWait.time(() => writer.putNodes(nodes));
  for (const spec of trees) {
    const count = size.initial[spec.name] ?? 0;
    // A dump holds its leaves in id order (`dacd escape load` only checks it), so sorting the random
    // ids is the bench's own work, not timed; the set is garbage once they are sorted.
    const sorted = generating(() => {
      if (sequential(size, spec)) return Array.from({ length: count }, (_, i) => BigInt(i));
      const picked = new Set<bigint>();
      while (picked.size < count) picked.add(randomId(rng, spec));
      const bits = spec.kind === "patricia" ? 250 : spec.height;
      return bits <= 64
        ? Array.from(BigUint64Array.from(picked).sort())
        : [...picked].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    });
    // Packed: a million BigInts would be a million objects on the heap, and every major garbage
    // collection during the timed batches would trace them.
    const bits = spec.kind === "patricia" ? 250 : spec.height;
    generating(() =>
      ids.set(
        spec.name,
        LoadedIds.sampled(sorted, bits, (n) => rng.below(n)),
      ),
    );
    const hashes = new Uint8Array(sorted.length * 32);
    const CHUNK = 50_000;
    for (let i = 0; i < sorted.length; i += CHUNK) {
      const leaves = generating(() => sorted.slice(i, i + CHUNK).map(() => randomLeaf(rng, spec)));
      const hs = await hashLeaves(engine, spec.leaf, leaves);
      hs.forEach((h, k) => hashes.set(h, (i + k) * 32));
      const records: NodeWrite[] = [];
      leaves.forEach((leaf, k) => {
        const record = encodeLeafRecord(spec.leaf, leaf);
        if (record) records.push({ hash: hs[k]!, record });
      });
      await writeWait.time(() => writer.putLeaves(records));
    }
    roots[spec.name] =
      spec.kind === "merkle"
        ? await buildMerkle(
            engine,
            await emptyRoots(engine, spec.leaf, spec.height),
            { ids: sorted, hashes },
            sink,
            { gen: LOAD_BATCH },
          )
        : await buildPatricia(engine, spec.height, { ids: sorted, hashes }, sink, { gen: LOAD_BATCH });
    // The root's record is the load's (an empty tree has none: gen 0 either way).
    gens[spec.name] = LOAD_BATCH;
  }
  const spilledMs = writeWait.ms;
  await writeWait.time(() => writer.finish(LOAD_BATCH));
  await store.meta.ensureIdentity({
    profile: profile.name,
    heights: Object.fromEntries(trees.map((t) => [t.name, t.height])),
  });
  const claim = computeClaimHash(profile, roots, 0);
  await store.commitBatch(
    {
      batch_id: LOAD_BATCH,
      prev_batch_id: -1,
      sequence_number: 0,
      roots: Object.fromEntries(Object.entries(roots).map(([k, v]) => [k, toHex64(v)])),
      root_gens: Object.fromEntries(Object.entries(gens).map(([k, v]) => [k, v!])),
      heights: Object.fromEntries(trees.map((t) => [t.name, t.height])),
      claim_hash: toHex0x(claim),
      signature: "",
      member_key: "",
      verified_at: new Date().toISOString(),
    },
    new NodeWrites(),
    new NodeWrites(),
  );
  const detail = `hashing ${(counting.busy.ms / 1000).toFixed(1)} s (${counting.hashes} hashes), spilling ${(spilledMs / 1000).toFixed(1)} s, writing in key order ${((writeWait.ms - spilledMs) / 1000).toFixed(1)} s`;
  return { roots, gens, ids, generatingS: generatingMs / 1000, detail };
}

function makeChanges(rng: Rng, trees: TreeSpec[], size: WorkloadSize, ids: Map<TreeName, LoadedIds>) {
  const changes: Partial<Record<TreeName, LeafChanges>> = {};
  for (const spec of trees) {
    const n = size.batch[spec.name] ?? 0;
    const existing = ids.get(spec.name)!;
    const m: LeafChanges = new Map();
    const count = size.initial[spec.name] ?? 0;
    const newId = sequential(size, spec)
      ? () => nextSequentialId(rng, count, Math.ceil(n / 2))
      : () => randomId(rng, spec);
    // Half new leaves, half existing ones.
    while (m.size < n / 2) m.set(newId(), randomLeaf(rng, spec));
    while (m.size < n) m.set(existing.at(rng.below(existing.length)), randomLeaf(rng, spec));
    changes[spec.name] = m;
  }
  return changes;
}

/**
 * A profile of this thread through the inspector, started now: CPU time by function ("cpu"), or
 * sampled allocations by stack, including what the collector has already freed ("heap").
 */
export async function startProfile(kind: "cpu" | "heap"): Promise<{ stopInto(path: string): Promise<void> }> {
  const session = new Session();
  session.connect();
  if (kind === "cpu") {
    await session.post("Profiler.enable");
    await session.post("Profiler.setSamplingInterval", { interval: 200 });
    await session.post("Profiler.start");
  } else {
    await session.post("HeapProfiler.enable");
    await session.post("HeapProfiler.startSampling", {
      samplingInterval: 4096,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    } as never);
  }
  return {
    async stopInto(path) {
      const { profile } =
        kind === "cpu"
          ? await session.post("Profiler.stop")
          : await session.post("HeapProfiler.stopSampling");
      session.disconnect();
      await writeFile(path, JSON.stringify(profile));
    },
  };
}

/**
 * Whether batch `i` of an alternated run is the other side's (--alt-build, --alt-node-cache,
 * dump-beside): in pairs, A B B A A B B A, so that neither side always takes the same place in
 * anything that recurs every second batch (identical builds alternated one by one showed a steady
 * gap between the even and the odd batches), nor always comes second while the machine drifts.
 */
export const otherTurn = (i: number): boolean => i % 4 === 1 || i % 4 === 2;

const breakdownText = (b?: { reads: number; hashing: number; commit: number }): string =>
  b ? `(reads ${b.reads.toFixed(3)}, hashing ${b.hashing.toFixed(3)}, commit ${b.commit.toFixed(3)})` : "";

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/**
 * Another build's `computeRoots` and its verify-sign-store of a parsed batch (`verifySignAndStore`
 * in `dist/src/poller/member/batch-stages.js`; `verifyParsedAndStore` in `dist/src/verifier` before
 * signing became its own stage), to compare two versions of the verifier in one process: batches
 * alternate between the builds on the same store, so that both meet the same state of the machine,
 * whose speed drifts by ±25% within minutes. The engine, the store and the top-level cache are this
 * build's for both.
 */
export interface AltVerifier {
  readonly computeRoots: typeof computeRoots;
  readonly verifySignAndStore: typeof verifySignAndStore;
}

/** Imports the verifier of the build whose `dist` directory is `distDir`. */
export async function loadAltVerifier(distDir: string): Promise<AltVerifier> {
  const src = join(resolve(distDir), "src");
  // Builds from before the verifier moved into src/verifier kept these in src/trees and src/pipeline.
  const moved = existsSync(join(src, "verifier", "verify-batch.js"));
  const url = (now: string, before: string): string => pathToFileURL(join(src, moved ? now : before)).href;
  const staged = join(src, "poller", "member", "batch-stages.js");
  const [roots, verify] = await Promise.all([
    import(url("verifier/trees/update/compute-roots.js", "trees/compute-roots.js")) as Promise<{
      computeRoots: typeof computeRoots;
    }>,
    existsSync(staged)
      ? (import(pathToFileURL(staged).href) as Promise<{ verifySignAndStore: typeof verifySignAndStore }>)
      : (import(url("verifier/verify-batch.js", "pipeline/verify-batch.js")) as Promise<{
          verifyParsedAndStore: typeof verifySignAndStore;
        }>),
  ]);
  return {
    computeRoots: roots.computeRoots,
    verifySignAndStore:
      "verifySignAndStore" in verify ? verify.verifySignAndStore : verify.verifyParsedAndStore,
  };
}

/** The workload's trees, as a daemon of its profile keeps them. */
export function workloadTrees(kind: "spot" | "perp"): {
  profile: Profile;
  trees: TreeSpec[];
  validateRollup?: true;
} {
  const profile = makeProfile(kind === "spot" ? "spot" : "perpetual");
  const validateRollup = profile.rollup ? true : undefined;
  return { profile, trees: keptTrees(profile, validateRollup), validateRollup };
}

/**
 * Bulk-loads a state of `size` into a new directory under the temporary directory, as `dacd escape
 * load` loads (its memtable size), and closes it. The directory is removed if the load fails.
 */
export async function loadWorkload(
  kind: "spot" | "perp",
  opts: { size: WorkloadSize; native: HashEngine; level?: LevelTuning; log: (s: string) => void; rng?: Rng },
): Promise<LoadedState> {
  const { profile, trees } = workloadTrees(kind);
  const dir = await mkdtemp(join(tmpdir(), `dacd-bench-${kind}-`));
  try {
    const store = await LevelStore.open(dir, { writeBufferSize: BULK_LOAD_WRITE_BUFFER, ...opts.level });
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    const rng = opts.rng ?? new Rng(kind === "spot" ? 1 : 2);
    const loaded = await bulkLoad(store, opts.native, profile, trees, opts.size, rng).finally(() =>
      store.close(),
    );
    const bulkLoadS = (performance.now() - t0) / 1000 - loaded.generatingS;
    const cpu = process.cpuUsage(cpu0);
    opts.log(
      `${kind}: bulk load ${bulkLoadS.toFixed(1)} s: ${loaded.detail}, cpu ${((cpu.user + cpu.system) / 1e6 - loaded.generatingS).toFixed(1)} s (and ${loaded.generatingS.toFixed(1)} s generating the random leaves, not counted)`,
    );
    return { dir, roots: loaded.roots, gens: loaded.gens, ids: loaded.ids, bulkLoadS };
  } catch (e) {
    await rm(dir, { recursive: true, force: true });
    throw e;
  }
}

/**
 * The bytes this process has had read from storage (`read_bytes` in /proc/self/io), pread and
 * faulted-in pages alike; 0 where the kernel does not count them. A lookup that finds its table's
 * page in the page cache reads nothing here, so this tells lookups served by memory from those
 * that waited on the disk (a host that reclaims cold page cache sends the latter up).
 */
function storageReadBytes(): number {
  try {
    return Number(/^read_bytes: (\d+)$/m.exec(readFileSync("/proc/self/io", "utf8"))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** Both builds' medians, and in how many pairs (batch i, batch i + 1) this build was faster. */
function compareBuilds(kind: string, mine: number[], alt: number[]): string {
  const pairs = Math.min(mine.length, alt.length);
  let faster = 0;
  for (let p = 0; p < pairs; p++) if (mine[p]! < alt[p]!) faster++;
  const [m, a] = [median(mine), median(alt)];
  return (
    `${kind}: this build's median ${m.toFixed(3)} s, the alt build's ${a.toFixed(3)} s ` +
    `(${(m / a).toFixed(3)}×), this build faster in ${faster} of ${pairs} pairs`
  );
}

export async function runWorkload(
  kind: "spot" | "perp",
  opts: {
    quick: boolean;
    native: HashEngine;
    wasm: HashEngine;
    nativeRuns: number;
    wasmRuns: number;
    cacheLevels: number;
    /** The node cache's bound in nodes (the memory plan's); unset: none. */
    cacheNodes?: number;
    /** Compact the whole store after the bulk load (timed apart). */
    compactAfterLoad?: boolean;
    /** LevelDB's tunables (unset: LevelDB's defaults). */
    level?: LevelTuning;
    /** Where to write a profile of the third native batch, if anywhere, and of what. */
    profile?: { kind: "cpu" | "heap"; path: string };
    log: (s: string) => void;
    /** Told when the workload enters each phase (for the RSS report). */
    phase?: (name: "bulk load" | "cache warm-up" | "batches" | "wasm batches") => void;
    /** Another build's verifier, for every second native batch (AltVerifier). */
    alt?: AltVerifier;
    /**
     * Every second native batch with the node cache in JavaScript rather than in the addon; each
     * batch then gets a cache of its kind warmed from the batch before (untimed), so both kinds
     * start every batch from the same state.
     */
    altNodeCache?: boolean;
    /**
     * Work to run beside native batch i (e.g. a dump of the same store): started before the batch
     * is timed, stopped by the returned function after it; undefined runs the batch alone.
     */
    beside?: (i: number, store: LevelStore) => Promise<(() => Promise<void>) | undefined>;
    /** The state and batch sizes instead of the workload's own (e.g. a larger state, bench/scale.ts). */
    size?: WorkloadSize;
    /** Merkle trees' ids in sequence (WorkloadSize.sequentialIds) where `size` is unset. */
    sequentialIds?: boolean;
    /**
     * Native engines to alternate batch by batch (one per forced kernel); each gets `nativeRuns`
     * batches, and the result gains their medians (batch_s_by_kernel).
     */
    kernels?: { name: string; engine: HashEngine }[];
    /** A state loaded already (loadWorkload), by another process: its batches only. */
    loaded?: LoadedState;
    /** The node cache's snapshot of the loaded state: the first warm-up loads it (warmNodeCache). */
    snapshotFile?: string;
    /** Awaited after the bulk load and the reopening, with the store's directory. */
    afterLoad?: (dir: string) => Promise<void>;
    /** Batches verified untimed before the timed ones, after the cache's warm-up. */
    warmUpBatches?: number;
    /** Awaited before native batch i (e.g. to take turns with another process). */
    gate?: (i: number) => Promise<void>;
    /** Awaited after the last batch, before the store is closed and removed. */
    beforeCleanup?: (dir: string) => Promise<void>;
  },
): Promise<WorkloadResult> {
  const full = kind === "spot" ? W_SPOT : W_PERP;
  const scale = opts.size ? 1 : opts.quick ? 0.1 : 1;
  const size: WorkloadSize = {
    initial: Object.fromEntries(
      Object.entries((opts.size ?? full).initial).map(([k, v]) => [k, Math.round(v * scale)]),
    ),
    batch: Object.fromEntries(
      Object.entries((opts.size ?? full).batch).map(([k, v]) => [k, Math.round(v * scale)]),
    ),
    sequentialIds: opts.size?.sequentialIds ?? opts.sequentialIds,
  };
  const { profile, trees, validateRollup } = workloadTrees(kind);
  // A state another process loaded continues with another seed: the load's would draw the loaded
  // leaves' ids again as new ones.
  const rng = new Rng((kind === "spot" ? 1 : 2) + (opts.loaded ? 100 : 0));
  let loaded = opts.loaded;
  if (!loaded) {
    opts.phase?.("bulk load");
    loaded = await loadWorkload(kind, { size, native: opts.native, level: opts.level, log: opts.log, rng });
  }
  const { dir, roots: initialRoots, gens: initialGens, ids, bulkLoadS } = loaded;
  // Opened as the daemon opens it.
  const store = await LevelStore.open(dir, opts.level ?? {});
  try {
    await opts.afterLoad?.(dir);

    // The load's buffers are garbage now. A member loads with `dacd escape load` and starts the
    // daemon as another process, so the daemon's RSS does not include them: collect them here.
    (globalThis as { gc?: () => void }).gc?.();

    if (opts.compactAfterLoad) {
      // What a loader could do once: let LevelDB merge the freshly loaded tables now rather than
      // in the background during the first batches.
      const tc = performance.now();
      await store.compact();
      opts.log(`${kind}: compaction after the load ${((performance.now() - tc) / 1000).toFixed(1)} s`);
    }

    // Count what the measured verifications cost: hashes and store operations.
    let reads = 0;
    let writes = 0;
    let writtenBytes = 0;
    let cpuS = 0;
    const readClock = new BusyClock();
    const commitClock = new BusyClock();
    const counted = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop === "getNodes") {
          return (hashes: readonly Uint8Array[], gens: ArrayLike<number>) => {
            reads += hashes.length;
            return readClock.time(() => target.getNodes(hashes, gens));
          };
        }
        // The commit clock times what is left when the batch is signed (the records not yet put,
        // the write and its fsync); records put as each tree finished overlap its hashing. This
        // build's verifier calls startCommit; an --alt-build of an older one may call commitBatch.
        const countWrites = (nodes: NodeWrites, leaves: NodeWrites): void => {
          writes += nodes.length + leaves.length + 1;
          for (const list of [nodes, leaves]) writtenBytes += 33 * list.length + list.recordBytes;
        };
        if (prop === "startCommit") {
          return (record: never, nodes: NodeWrites, leaves: NodeWrites, pending?: PendingCommit) => {
            countWrites(nodes, leaves);
            const durable = commitClock.time(
              () => target.startCommit(record, nodes, leaves, pending).durable,
            );
            return { durable };
          };
        }
        if (prop === "commitBatch") {
          return (record: never, nodes: NodeWrites, leaves: NodeWrites, pending?: PendingCommit) => {
            countWrites(nodes, leaves);
            return commitClock.time(() => target.commitBatch(record, nodes, leaves, pending));
          };
        }
        // An --alt-build from before the store was split into repositories calls these by their old names.
        if (prop === "batchInFlight") return (id: number) => target.commits.inFlight(id);
        if (prop === "ensureIdentity")
          return (identity: StoreIdentity) => target.meta.ensureIdentity(identity);
        const v = Reflect.get(target, prop, receiver) as unknown;
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const signer = new EthSigner(new Uint8Array(32).fill(7));
    // Each pipeline keeps its own top levels, as a daemon would, warmed first from the bulk-loaded
    // state, as a daemon warms its cache at start (app.ts). The pipelines run one after the other,
    // so that only one cache is alive at a time, as in a daemon.
    const native = new CountingEngine(opts.native);
    let warmS: number | undefined;
    let warmNodes = 0;
    let warmSource: "snapshot" | "walk" = "walk";
    const warmedCache = async (
      fromBatch: number,
      addon?: NativeNodeCacheAddon | null,
    ): Promise<TopNodeCache> => {
      const cache = createTopNodeCache(opts.cacheLevels, addon, opts.cacheNodes);
      const t = performance.now();
      // The first warm-up, from the loaded state, starts as a restarted daemon does: from the snapshot.
      const first = warmS === undefined && opts.snapshotFile !== undefined;
      const warmed = first
        ? await warmNodeCache(cache, store, opts.native, trees, opts.snapshotFile)
        : { nodes: await warmTopNodes(cache, store, opts.native, trees, fromBatch), source: "walk" as const };
      const s = (performance.now() - t) / 1000;
      if (warmS === undefined) [warmS, warmNodes, warmSource] = [s, cache.size, warmed.source];
      const why = "refused" in warmed && warmed.refused ? ` (snapshot not used: ${warmed.refused})` : "";
      opts.log(
        `${kind}: cache warm-up ${s.toFixed(1)} s, ${warmed.nodes} nodes, from a ${warmed.source}${why}`,
      );
      setRandomReads(); // as a daemon does once its cache is warm (app.ts)
      return cache;
    };
    const treeWalk = chooseTreeWalk(runtimeSettings().treeWalk);
    const ctxFor = (engine: HashEngine, topNodes: TopNodeCache): StageContext => ({
      profile,
      engine,
      store: counted,
      signer,
      options: { validateOrders: true, validateRollup },
      topNodes,
      treeWalk,
    });
    opts.phase?.("cache warm-up");
    let nativeCache: TopNodeCache | undefined = await warmedCache(0);
    const nativeTimes: number[] = [];
    const altTimes: number[] = [];
    const besideTimes: number[] = [];
    const breakdowns: { total: number; reads: number; hashing: number; commit: number }[] = [];
    let hashes = 0;
    let storageOps = 0;
    let prevId = 0;
    let prevState: TreeState = { roots: initialRoots, gens: initialGens };
    /** The updates the WASM pipeline verifies afterwards, each as a sibling of a native batch. */
    const siblings: { id: number; update: StateUpdate }[] = [];
    opts.phase?.("batches");
    const kernels = opts.kernels ?? [];
    const kernelTimes = new Map<string, number[]>(kernels.map((k) => [k.name, []]));
    const kernelCpu = new Map<string, number[]>(kernels.map((k) => [k.name, []]));
    const nativeRuns = opts.nativeRuns * Math.max(1, kernels.length);
    const compactionMb: number[] = [];
    const recordsRead: number[] = [];
    const recordsWritten: number[] = [];
    const lookups: number[] = [];
    const hashOnly: number[] = [];
    // Its own generator, so that the batches' changes stay those of runs without it.
    const hashOnlyInput = randomFieldPairs(new Rng(0x4a5), REPLAY_MAX);
    // A process's first batches after its start grow its heap, a page fault per new page, which a
    // member pays once, not per batch: where asked, they run untimed first.
    const warmUp = opts.warmUpBatches ?? 0;
    for (let w = 0; w < warmUp; w++) {
      const changes = makeChanges(rng, trees, size, ids);
      const id = 2 * w + 1;
      const stated = await computeRoots(opts.native, store, trees, prevState, changes, id);
      const update: StateUpdate = { prevBatchId: prevId, changes, statedRoots: stated.roots };
      await verifySignAndStore(ctxFor(native, nativeCache), id, update);
      opts.log(`${kind}: warm-up batch ${w + 1} verified (untimed)`);
      prevId = id;
      prevState = { roots: stated.roots, gens: stated.rootGens };
    }
    const runs = Math.max(nativeRuns, opts.wasmRuns);
    for (let i = 0; i < runs; i++) {
      const changes = makeChanges(rng, trees, size, ids);
      // The stated roots come from a dry run (nothing stored), as an honest operator would state them.
      // Half the batches (otherTurn) are the other build's, dry run included, when one is given.
      const alt = opts.alt && otherTurn(i) ? opts.alt : undefined;
      const altCache = opts.altNodeCache === true && otherTurn(i);
      if (opts.altNodeCache && i < nativeRuns) {
        nativeCache = undefined;
        (globalThis as { gc?: () => void }).gc?.();
        nativeCache = await warmedCache(prevId, altCache ? null : undefined);
      }
      const other = alt !== undefined || altCache;
      const verifier = alt ?? { computeRoots, verifySignAndStore };
      const nativeId = 2 * (warmUp + i) + 1;
      const stated = await verifier.computeRoots(opts.native, store, trees, prevState, changes, nativeId);
      const update: StateUpdate = { prevBatchId: prevId, changes, statedRoots: stated.roots };
      if (i < opts.wasmRuns) siblings.push({ id: nativeId + 1, update });
      const forced = kernels.length > 0 ? kernels[i % kernels.length]! : undefined;
      if (i < nativeRuns) {
        await opts.gate?.(i);
        native.inner = forced?.engine ?? opts.native;
        native.hashes = 0;
        native.calls = other ? undefined : [];
        reads = 0;
        writes = 0;
        writtenBytes = 0;
        for (const clock of [native.busy, readClock, commitClock]) clock.reset();
        const profiler = i === 2 && opts.profile ? await startProfile(opts.profile.kind) : undefined;
        const stopBeside = await opts.beside?.(i, store);
        const t = performance.now();
        const cpuBefore = process.cpuUsage();
        const mergedBefore = store.compactionWrittenMb();
        const faultsBefore = process.resourceUsage().minorPageFault;
        const majorBefore = process.resourceUsage().majorPageFault;
        const storageBefore = storageReadBytes();
        const { detail } = await verifier.verifySignAndStore(ctxFor(native, nativeCache), nativeId, update);
        const total = (performance.now() - t) / 1000;
        if (!other && !stopBeside) {
          recordsRead.push(reads);
          recordsWritten.push(writes);
          lookups.push(Object.values(detail.trees ?? {}).reduce((sum, t) => sum + t.nodes_read, 0));
        }
        await stopBeside?.();
        // LevelDB's flushes and merges that finished during the batch, on its background thread.
        const merged = store.compactionWrittenMb() - mergedBefore;
        compactionMb.push(merged);
        if (forced && !other && !stopBeside) kernelTimes.get(forced.name)!.push(total);
        // Every thread's CPU time: near cores × wall time means the batch is CPU-bound.
        const used = process.cpuUsage(cpuBefore);
        cpuS = (used.user + used.system) / 1e6;
        if (forced && !other && !stopBeside) kernelCpu.get(forced.name)!.push(cpuS);
        if (profiler) await profiler.stopInto(opts.profile!.path);
        (other ? altTimes : stopBeside ? besideTimes : nativeTimes).push(total);
        const breakdown = {
          total,
          reads: readClock.ms / 1000,
          hashing: native.busy.ms / 1000,
          commit: commitClock.ms / 1000,
        };
        if (!other && !stopBeside) breakdowns.push(breakdown);
        hashes = native.hashes;
        storageOps = reads + writes;
        if (!other && !stopBeside && native.calls)
          hashOnly.push(await replayHashing(native.inner, hashOnlyInput, native.calls));
        native.calls = undefined;
        opts.log(
          `${kind}: batch ${i + 1}: ${alt ? "alt build " : ""}${altCache ? "JavaScript node cache " : ""}${stopBeside ? "beside " : ""}${forced ? `${forced.name} ` : ""}native ${total.toFixed(3)} s ${breakdownText(breakdown)} ` +
            `${reads} reads, ${writes} writes (${(writtenBytes / 2 ** 20).toFixed(1)} MiB), cpu ${cpuS.toFixed(2)} s, ` +
            `LevelDB compaction wrote ${merged} MB, ${process.resourceUsage().minorPageFault - faultsBefore} page faults and ` +
            `${process.resourceUsage().majorPageFault - majorBefore} from storage, ` +
            `${((storageReadBytes() - storageBefore) / 2 ** 20).toFixed(1)} MiB read from storage`,
        );
      } else {
        await verifier.verifySignAndStore(ctxFor(native, nativeCache), nativeId, update);
      }
      prevId = nativeId;
      prevState = { roots: stated.roots, gens: stated.rootGens };
    }
    native.inner = opts.native;
    if (opts.alt) opts.log(compareBuilds(kind, nativeTimes, altTimes));
    if (opts.altNodeCache)
      opts.log(compareBuilds(`${kind} (alt: the node cache in JavaScript)`, nativeTimes, altTimes));
    // Collected now, before the WASM pipeline builds its own (the bench runs node with --expose-gc),
    // so that the peak RSS is what one pipeline holds, as in a daemon.
    nativeCache = undefined;
    (globalThis as { gc?: () => void }).gc?.();

    // The same verifications with the WASM engine: each update again, as a sibling of its native
    // batch on the same previous state (the store keeps every batch's nodes), with a cache warmed
    // from the same bulk-loaded state.
    const wasmTimes: number[] = [];
    if (siblings.length > 0) {
      opts.phase?.("wasm batches");
      const wasmCache = await warmedCache(0);
      for (const [i, { id, update }] of siblings.entries()) {
        const t = performance.now();
        await verifySignAndStore(ctxFor(opts.wasm, wasmCache), id, update);
        wasmTimes.push((performance.now() - t) / 1000);
        opts.log(`${kind}: batch ${i + 1}: wasm ${wasmTimes.at(-1)!.toFixed(2)} s`);
      }
    }
    await opts.beforeCleanup?.(dir);
    const mid = [...breakdowns].sort((a, b) => a.total - b.total)[(breakdowns.length - 1) >> 1];
    return {
      native_breakdown_s: {
        reads: mid?.reads ?? NaN,
        hashing: mid?.hashing ?? NaN,
        commit: mid?.commit ?? NaN,
      },
      batch_s_native: median(nativeTimes),
      batch_s_wasm: median(wasmTimes),
      hashes,
      storage_ops: storageOps,
      bulk_load_s: bulkLoadS,
      ...(opts.beside ? { batch_s_native_beside: besideTimes, batch_s_native_alone: nativeTimes } : {}),
      compaction_mb: compactionMb,
      records_read: recordsRead,
      nodes_looked_up: lookups,
      records_written: recordsWritten,
      cache: {
        levels: opts.cacheLevels,
        max_nodes: opts.cacheNodes === undefined || opts.cacheNodes === Infinity ? null : opts.cacheNodes,
        nodes_warm: warmNodes,
      },
      warm_s: warmS ?? NaN,
      warm_source: warmSource,
      sequential_ids: size.sequentialIds === true,
      hash_only_s: hashOnly,
      ...(kernels.length > 0
        ? {
            batch_s_by_kernel: Object.fromEntries([...kernelTimes].map(([k, ts]) => [k, median(ts)])),
            cpu_s_by_kernel: Object.fromEntries([...kernelCpu].map(([k, ts]) => [k, median(ts)])),
          }
        : {}),
    };
  } finally {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * For other benches (catchup.ts): the workload's initial state bulk-loaded into `store` as batch 0
 * (a tenth of it with `quick`), and a generator of the workload's batches' leaf changes, half new
 * leaves and half existing ones, on the same seeded data as runWorkload.
 */
export async function loadWorkloadState(
  kind: "spot" | "perp",
  store: LevelStore,
  engine: HashEngine,
  quick: boolean,
): Promise<{
  profile: Profile;
  trees: TreeSpec[];
  roots: Roots;
  bulkLoadS: number;
  nextChanges: () => Partial<Record<TreeName, LeafChanges>>;
}> {
  const full = kind === "spot" ? W_SPOT : W_PERP;
  const scale = quick ? 0.1 : 1;
  const size: WorkloadSize = {
    initial: Object.fromEntries(Object.entries(full.initial).map(([k, v]) => [k, Math.round(v * scale)])),
    batch: Object.fromEntries(Object.entries(full.batch).map(([k, v]) => [k, Math.round(v * scale)])),
  };
  const { profile, trees } = workloadTrees(kind);
  const rng = new Rng(kind === "spot" ? 1 : 2);
  const t0 = performance.now();
  const loaded = await bulkLoad(store, engine, profile, trees, size, rng);
  const bulkLoadS = (performance.now() - t0) / 1000 - loaded.generatingS;
  return {
    profile,
    trees,
    roots: loaded.roots,
    bulkLoadS,
    nextChanges: () => makeChanges(rng, trees, size, loaded.ids),
  };
}
