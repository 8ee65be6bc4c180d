import { readFileSync } from "node:fs";
import { stat } from "node:fs/promises";
import { createEngine } from "../src/verifier/hash/select.js";
import { WasmEngine } from "../src/verifier/hash/wasm-engine.js";
import { directorySize } from "../src/storage/store-size.js";
import { setMappedTables } from "../src/storage/level-binding.js";
import type { LevelTuning } from "../src/storage/level-store.js";
import { readLoadedState, writeLoadedState } from "./loaded-state.js";
import { cgroupMemory, joinCgroup, type BenchCgroup, type CgroupMemory } from "./memory-cgroup.js";
import { cgroupMemoryLimit, type MemoryLimit } from "../src/config/memory-limit.js";
import { LevelStore } from "../src/storage/level-store.js";
import type { HashEngine } from "../src/verifier/hash/engine.js";
import { createTopNodeCache } from "../src/verifier/trees/cache/node-cache.js";
import { snapshotPath } from "../src/verifier/trees/cache/cache-snapshot.js";
import { CacheSnapshotWriter } from "../src/verifier/cache-snapshot-writer.js";
import { warmTopNodes } from "../src/verifier/warm-cache.js";
import { describePlan, memoryBudget, planMemory, type MemoryPlan } from "../src/config/memory-plan.js";
import {
  loadWorkload,
  runWorkload,
  loadAltVerifier,
  workloadTrees,
  type WorkloadResult,
  type WorkloadSize,
} from "./workloads.js";

/**
 * One state of W-scale (bench/scale.ts) in one of its two phases, each in a process of its own, as
 * a member loads a state with `dacd escape load` and signs in the daemon: "load" bulk-loads the
 * state and leaves it (LoadedState) in `statePath`; "batches" opens it and runs each native batch
 * when the parent says so, so that the parent can alternate the batches of two states that share
 * the machine. Each process's peak RSS is its own. Talks over the fork IPC channel: it sends
 * `{ type: "waiting" }` and runs its next step on `{ type: "go" }`; the last step sends
 * `{ type: "loaded" }` or `{ type: "result" }`.
 */

/**
 * Batches the signing process verifies untimed after its cache's warm-up: the first batches of a
 * fresh process grow its heap, a page fault per new page, which a member pays once after a start.
 */
const WARM_UP_BATCHES = 2;

export interface ScaleStateConfig {
  label: string;
  phase: "load" | "batches";
  /** Where the load leaves the state for the batches. */
  statePath: string;
  size: WorkloadSize;
  nativeRuns: number;
  /** Unset: the memory plan's, from the budget this process runs under (as a member sizes it). */
  cacheLevels?: number;
  level: LevelTuning;
  /** The memory cgroup the signing process joins first (bench/memory-cgroup.ts). */
  cgroup?: BenchCgroup;
  /**
   * The limit (MiB) the signing process will run under, once its cgroup is limited: the load plans
   * the node cache it warms and saves from it, as the signing process will.
   */
  limitMib?: number;
  /** LevelDB's memory-mapped tables in this process (setMappedTables); unset: LevelDB's number. */
  mappedTables?: number;
  kernel?: string;
  /** Another build's `dist` whose verifier takes half the timed batches, in pairs (`--alt-build`). */
  altBuild?: string;
}

/** What the load's process measured. */
export interface ScaleLoadResult {
  bulk_load_s: number;
  /** The node cache's warm-up by walking the loaded trees (a first start after an import). */
  walk_s: number;
  /** The snapshot of that cache the signing process starts from. */
  snapshot_bytes: number;
  store_bytes_after_load: number;
  peak_rss_mib_load: number;
  rss_kinds_at_peak_mib_load: RssKinds;
}

/** What the batches' process measured. */
export interface ScaleBatchesResult {
  workload: WorkloadResult;
  store_bytes_after_batches: number;
  peak_rss_mib_batches: number;
  rss_kinds_at_peak_mib_batches: RssKinds;
  /** The kernel's maximum RSS of the process that signs (its whole life). */
  max_rss_mib: number;
  /** Its cgroup's memory after the batches and at its peak, when it ran in one. */
  cgroup?: CgroupMemory;
  /** What the signing process planned from its budget and its store (memory-plan.ts). */
  memory_plan: MemoryPlan;
}

export type ScaleMessage =
  | { type: "waiting"; next: string }
  | { type: "loaded"; result: ScaleLoadResult }
  | { type: "result"; result: ScaleBatchesResult }
  | { type: "go" };

/**
 * At a phase's peak, MiB: anonymous memory and file pages (LevelDB's mapped tables, code), and of
 * the anonymous memory, V8's heap and the memory outside it that JavaScript objects hold (Buffers);
 * the rest is native (LevelDB's table cache and memtables, the node cache, the addon, malloc's
 * free memory).
 */
export interface RssKinds {
  anon: number;
  file: number;
  v8_heap: number;
  external: number;
}

/**
 * RssAnon and RssFile + RssShmem from /proc/self/status (Linux; zeros elsewhere), V8's heap and
 * external memory, MiB.
 */
function rssKinds(): RssKinds {
  let text = "";
  try {
    text = readFileSync("/proc/self/status", "utf8");
  } catch {
    // Not Linux: the kinds stay zero.
  }
  const mib = (name: string): number =>
    Math.round(Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? 0) / 1024);
  const v8 = process.memoryUsage();
  return {
    anon: mib("RssAnon"),
    file: mib("RssFile") + mib("RssShmem"),
    v8_heap: Math.round(v8.heapTotal / 2 ** 20),
    external: Math.round(v8.external / 2 ** 20),
  };
}

/** The signing process's memory plan for the store in `dir` under `limit` (as a member sizes it). */
async function planFor(
  config: ScaleStateConfig,
  dir: string,
  limit: MemoryLimit | undefined,
): Promise<MemoryPlan> {
  return planMemory(memoryBudget(undefined, limit), await directorySize(dir), 3, {
    nodeCacheLevels: config.cacheLevels,
    storeMappedTables: config.mappedTables,
    storeMaxOpenFiles: config.level.maxOpenFiles,
  });
}

/**
 * What a member's first start after an import does, and its clean stop after: the node cache the
 * signing process will plan, warmed by walking the loaded trees, then saved where the signing
 * process (a restarted daemon) loads it from.
 */
async function walkAndSave(
  config: ScaleStateConfig,
  dir: string,
  engine: HashEngine,
  log: (s: string) => void,
): Promise<{ walkS: number; bytes: number }> {
  const limit =
    config.limitMib !== undefined
      ? { bytes: config.limitMib * 2 ** 20, source: "the signing process's cgroup" }
      : cgroupMemoryLimit();
  const plan = await planFor(config, dir, limit);
  const store = await LevelStore.open(dir, config.level);
  try {
    const { trees } = workloadTrees("spot");
    const cache = createTopNodeCache(
      plan.node_cache_levels,
      undefined,
      config.cacheLevels === undefined ? plan.node_cache_nodes : undefined,
    );
    const t = performance.now();
    const nodes = await warmTopNodes(cache, store, engine, trees);
    const walkS = (performance.now() - t) / 1000;
    // Saved as a daemon's clean stop saves it.
    const file = snapshotPath(dir);
    const writer = new CacheSnapshotWriter(
      cache,
      store,
      trees.map((t) => t.name),
      file,
      {
        info: () => undefined,
        warn: (fields: unknown) =>
          log(`node cache snapshot not written: ${String((fields as { err?: unknown }).err)}`),
      },
    );
    writer.markWarm();
    await writer.stop();
    const bytes = (await stat(file)).size;
    log(
      `cache warm-up by walking ${walkS.toFixed(1)} s, ${nodes} nodes; snapshot ${Math.round(bytes / 2 ** 20)} MiB`,
    );
    return { walkS, bytes };
  } finally {
    await store.close();
  }
}

async function main(config: ScaleStateConfig): Promise<void> {
  const send = (m: ScaleMessage): void => void process.send!(m);
  // The parent gone (killed): nothing is left to take turns with; it removes the store's directory.
  process.once("disconnect", () => process.exit(1));
  const goes: (() => void)[] = [];
  process.on("message", (m: ScaleMessage) => {
    if (m.type === "go") goes.shift()?.();
  });
  const turn = (next: string): Promise<void> =>
    new Promise((resolve) => {
      goes.push(resolve);
      send({ type: "waiting", next });
    });

  let peak = 0;
  let kinds = rssKinds();
  const sample = (): void => {
    const rss = process.memoryUsage.rss();
    if (rss <= peak) return;
    peak = rss;
    kinds = rssKinds();
  };
  const sampler = setInterval(sample, 100);
  const log = (s: string): void => void process.stderr.write(`[${config.label}] ${s}\n`);
  const mib = (b: number): number => Math.round(b / 2 ** 20);

  // First of all, so that everything the process maps or allocates is charged to the cgroup.
  if (config.cgroup) joinCgroup(config.cgroup.procs);
  let plan: MemoryPlan | undefined;
  let level = config.level;
  let cache: { levels: number; nodes?: number } | undefined;
  if (config.phase === "batches") {
    const state = await readLoadedState(config.statePath);
    plan = await planFor(config, state.dir, cgroupMemoryLimit());
    log(describePlan(plan));
    level = {
      ...config.level,
      maxOpenFiles: plan.store_max_open_files,
      cacheSize: plan.store_block_cache_mib * 2 ** 20,
    };
    cache = {
      levels: plan.node_cache_levels,
      nodes: config.cacheLevels === undefined ? plan.node_cache_nodes : undefined,
    };
  }
  const mapped = plan?.store_mapped_tables ?? config.mappedTables;
  if (mapped !== undefined && setMappedTables(mapped) !== "set") {
    if (config.mappedTables !== undefined)
      throw new Error("mapped tables: dacd's build of LevelDB's binding is not loaded");
    log(
      `the plan's ${mapped} mapped tables need dacd's build of LevelDB's binding (not loaded): LevelDB keeps its own number`,
    );
  }
  await turn(config.phase === "load" ? "bulk load" : "cache warm-up");
  const native = createEngine("native", { threads: "auto", kernel: config.kernel });
  if (config.phase === "load") {
    const loaded = await loadWorkload("spot", { size: config.size, native, level: config.level, log });
    await writeLoadedState(config.statePath, loaded);
    const storeBytes = await directorySize(loaded.dir);
    const saved = await walkAndSave(config, loaded.dir, native, log);
    sample();
    await native.close?.();
    clearInterval(sampler);
    send({
      type: "loaded",
      result: {
        bulk_load_s: loaded.bulkLoadS,
        walk_s: saved.walkS,
        snapshot_bytes: saved.bytes,
        store_bytes_after_load: storeBytes,
        peak_rss_mib_load: mib(peak),
        rss_kinds_at_peak_mib_load: kinds,
      },
    });
  } else {
    let afterBatches = 0;
    const loadedState = await readLoadedState(config.statePath);
    const workload = await runWorkload("spot", {
      quick: false,
      size: config.size,
      loaded: loadedState,
      snapshotFile: snapshotPath(loadedState.dir),
      native,
      wasm: new WasmEngine(),
      nativeRuns: config.nativeRuns,
      ...(config.altBuild ? { alt: await loadAltVerifier(config.altBuild) } : {}),
      wasmRuns: 0,
      cacheLevels: cache!.levels,
      cacheNodes: cache!.nodes,
      level,
      log,
      warmUpBatches: WARM_UP_BATCHES,
      gate: (i) => turn(`batch ${i + 1}`),
      beforeCleanup: async (dir) => {
        await turn("finish");
        afterBatches = await directorySize(dir);
      },
    });
    await native.close?.();
    clearInterval(sampler);
    send({
      type: "result",
      result: {
        workload,
        store_bytes_after_batches: afterBatches,
        peak_rss_mib_batches: mib(peak),
        rss_kinds_at_peak_mib_batches: kinds,
        max_rss_mib: mib(process.resourceUsage().maxRSS * 1024),
        ...(config.cgroup ? { cgroup: cgroupMemory(config.cgroup) } : {}),
        memory_plan: plan!,
      },
    });
  }
  process.removeAllListeners("disconnect");
  process.disconnect();
}

if (process.send) await main(JSON.parse(process.argv[2]!) as ScaleStateConfig);
