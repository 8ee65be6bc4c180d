import { fork, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LevelTuning } from "../src/storage/level-store.js";
import type { ScaleBatchesResult, ScaleLoadResult, ScaleMessage, ScaleStateConfig } from "./scale-state.js";
import { createMemoryCgroup, limitCgroup, removeCgroup, type BenchCgroup } from "./memory-cgroup.js";
import { scaledSize } from "./scale-options.js";
import { median } from "./dump-beside.js";
import type { WorkloadSize } from "./workloads.js";

/**
 * W-scale (`npm run bench -- --scale`): the W-spot batches on the W-spot state and on a state
 * `factor` times larger. Each state is loaded by a child process of its own and its batches run in
 * another (bench/scale-state.ts), as a member loads with `dacd escape load` and signs in the daemon,
 * so that each process's peak RSS is its own. The states are loaded one after the other, each
 * alone; then the batches alternate between them, one at a time, so that both meet the same machine.
 */

/** One state's figures: its load's process and its batches' process. */
export type ScaleStateResult = { label: string; leaves: number } & ScaleLoadResult & ScaleBatchesResult;

/** The JSON's `w_scale`: the large state's figures, beside the base state's batch in the same run. */
export interface WScale {
  factor: number;
  vaults: number;
  bulk_load_s: number;
  store_bytes: number;
  store_bytes_after_batches: number;
  bytes_per_leaf: number;
  batch_s: number;
  batch_s_1m_same_run: number;
  /** The large state's signing process: its maximum RSS (the kernel's), and its sampled peak. */
  peak_rss_mib: number;
  peak_rss_mib_batches: number;
  compaction_bytes_per_batch: number;
  /** The table files LevelDB memory-mapped in each state's process (`--mapped-tables`). */
  mapped_tables: number;
  /** Both states' figures, the base state first. */
  states: ScaleStateResult[];
  /** The memory cgroup limit each signing process ran under; absent when none could be made. */
  cgroup_mib?: number;
  /** Why the signing processes ran without a cgroup, when they did. */
  cgroup_error?: string;
  /** The large state's node cache warm-up in its signing process (a restart: from the snapshot), seconds. */
  warm_s: number;
  /** The large state's node cache warm-up by walking its trees (a first start after the load), seconds. */
  walk_s: number;
  /** The large state's records per batch (medians): read from LevelDB, looked up, written. */
  records_read_per_batch: number;
  nodes_looked_up_per_batch: number;
  records_written_per_batch: number;
}

class StateProcess {
  private readonly child: ChildProcess;
  private readonly queue: ScaleMessage[] = [];
  private wake?: () => void;
  private exited?: string;
  /** Resolves once the process has exited. */
  readonly gone: Promise<void>;

  /** `tmp`: the process's TMPDIR, where its store goes (removed by the parent, whatever happens). */
  constructor(config: ScaleStateConfig, tmp: string) {
    this.child = fork(join(import.meta.dirname, "scale-state.js"), [JSON.stringify(config)], {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
      env: { ...process.env, TMPDIR: tmp },
    });
    this.child.on("message", (m: ScaleMessage) => {
      this.queue.push(m);
      this.wake?.();
    });
    this.gone = new Promise((resolve) =>
      this.child.on("exit", (code, signal) => {
        this.exited = `${config.label} ${config.phase} process exited (${signal ?? code})`;
        this.wake?.();
        resolve();
      }),
    );
  }

  /** The next message, or an error once the process has ended without one. */
  async next(): Promise<ScaleMessage> {
    for (;;) {
      const m = this.queue.shift();
      if (m) return m;
      if (this.exited) throw new Error(this.exited);
      await new Promise<void>((r) => (this.wake = r));
    }
  }

  /** Lets the process run its next step; resolves with the message that ends that step. */
  async step(): Promise<ScaleMessage> {
    this.child.send({ type: "go" } satisfies ScaleMessage);
    return this.next();
  }

  /** Ends the process if it still runs; resolves once it has exited. */
  async kill(): Promise<void> {
    if (this.exited) return;
    this.child.kill();
    await this.gone;
  }
}

export async function runScale(opts: {
  base: WorkloadSize;
  factor: number;
  nativeRuns: number;
  /** Unset: each signing process plans its cache from its budget (memory-plan.ts). */
  cacheLevels?: number;
  /** The larger state's cache levels; unset: `cacheLevels`. */
  largeCacheLevels?: number;
  /** The memory cgroup limit of each signing process (MiB); 0: none. */
  cgroupMib: number;
  level: LevelTuning;
  mappedTables?: number;
  kernel?: string;
  /** Another build's `dist`: its verifier takes half of each state's timed batches, in pairs. */
  altBuild?: string;
  log: (s: string) => void;
}): Promise<WScale> {
  const large = scaledSize(opts.base, opts.factor);
  const label = (s: WorkloadSize): string => `${((s.initial.vault ?? 0) / 1e6).toFixed(1)}M vaults`;
  // The stores go under one directory of the parent's, so that a failed run leaves nothing behind.
  const tmp = await mkdtemp(join(tmpdir(), "dacd-bench-scale-"));
  const configs = [opts.base, large].map((size): Omit<ScaleStateConfig, "phase"> => ({
    label: label(size),
    statePath: join(tmp, `${label(size).replace(/[^\w.]+/g, "-")}.state.json`),
    size,
    nativeRuns: opts.nativeRuns,
    cacheLevels: size === large ? (opts.largeCacheLevels ?? opts.cacheLevels) : opts.cacheLevels,
    level: opts.level,
    mappedTables: opts.mappedTables,
    kernel: opts.kernel,
    altBuild: opts.altBuild,
  }));
  const states: StateProcess[] = [];
  const cgroups: BenchCgroup[] = [];
  // Interrupted (Ctrl-C, kill): the children and their stores (GBs at full size) go too.
  const interrupted = (signal: NodeJS.Signals): void => {
    opts.log(`scale: ${signal}, removing the state processes and ${tmp}`);
    void Promise.all(states.map((state) => state.kill()))
      .then(() => rm(tmp, { recursive: true, force: true }))
      .finally(() => process.exit(130));
  };
  process.once("SIGINT", interrupted).once("SIGTERM", interrupted);
  try {
    // Loaded one at a time: each bulk load has the machine (but this helper's) alone.
    const loads: ScaleLoadResult[] = [];
    // Each state's cgroup is made first, without a limit, and its load runs in it too: the table
    // pages the load leaves in the page cache are then charged to the cgroup the member signs in,
    // as they are to a unit that loaded its store, rather than to the bench's own cgroup.
    let cgroupError: string | undefined = opts.cgroupMib > 0 ? undefined : "--cgroup-mib 0";
    const stateCgroups = configs.map((config, i): BenchCgroup | undefined => {
      if (cgroupError) return undefined;
      const made = createMemoryCgroup(`dacd-bench-${process.pid}-${i}`);
      if ("error" in made) {
        cgroupError = made.error;
        opts.log(`scale: no memory cgroup for ${config.label}: ${cgroupError}`);
        return undefined;
      }
      cgroups.push(made);
      return made;
    });
    for (const [i, config] of configs.entries()) {
      const loader = new StateProcess(
        {
          ...config,
          phase: "load",
          cgroup: stateCgroups[i],
          ...(stateCgroups[i] ? { limitMib: opts.cgroupMib } : {}),
        },
        tmp,
      );
      states.push(loader);
      await loader.next(); // waiting for "bulk load"
      opts.log(`scale: loading ${config.label}`);
      const m = await loader.step();
      if (m.type !== "loaded") throw new Error(`scale: expected the load's figures, got ${m.type}`);
      loads.push(m.result);
      await loader.gone;
    }
    // Then the batches' processes, each in its state's cgroup, now limited to the budget, their
    // caches warmed one at a time.
    const batches = configs.map((config, i) => {
      const cgroup = stateCgroups[i];
      if (cgroup) limitCgroup(cgroup, opts.cgroupMib);
      return new StateProcess({ ...config, phase: "batches", cgroup }, tmp);
    });
    states.push(...batches);
    for (const state of batches) {
      await state.next(); // waiting for "cache warm-up"
      await state.step(); // warmed; waiting for batch 1
    }
    for (let i = 0; i < opts.nativeRuns; i++) for (const state of batches) await state.step();
    const results: ScaleStateResult[] = [];
    for (const [i, state] of batches.entries()) {
      const m = await state.step(); // the store's size after the batches, then cleanup
      if (m.type !== "result") throw new Error(`scale: expected a result, got ${m.type}`);
      const config = configs[i]!;
      const leaves = Object.values(config.size.initial).reduce((a, b) => a + b, 0);
      results.push({ label: config.label, leaves, ...loads[i]!, ...m.result });
    }
    const [small, big] = results as [ScaleStateResult, ScaleStateResult];
    const compaction = big.workload.compaction_mb;
    return {
      factor: opts.factor,
      vaults: large.initial.vault ?? 0,
      bulk_load_s: big.bulk_load_s,
      store_bytes: big.store_bytes_after_load,
      store_bytes_after_batches: big.store_bytes_after_batches,
      bytes_per_leaf: big.store_bytes_after_load / big.leaves,
      batch_s: big.workload.batch_s_native,
      batch_s_1m_same_run: small.workload.batch_s_native,
      peak_rss_mib: big.max_rss_mib,
      peak_rss_mib_batches: big.peak_rss_mib_batches,
      // leveldb.stats counts MiB written by finished flushes and merges.
      compaction_bytes_per_batch: Math.round(
        (compaction.reduce((a, b) => a + b, 0) / Math.max(1, compaction.length)) * 2 ** 20,
      ),
      mapped_tables: big.memory_plan.store_mapped_tables,
      states: results,
      ...(!cgroupError && cgroups.length === batches.length ? { cgroup_mib: opts.cgroupMib } : {}),
      ...(cgroupError ? { cgroup_error: cgroupError } : {}),
      warm_s: big.workload.warm_s,
      walk_s: big.walk_s,
      records_read_per_batch: median(big.workload.records_read),
      nodes_looked_up_per_batch: median(big.workload.nodes_looked_up),
      records_written_per_batch: median(big.workload.records_written),
    };
  } finally {
    process.off("SIGINT", interrupted).off("SIGTERM", interrupted);
    await Promise.all(states.map((state) => state.kill()));
    await Promise.all(cgroups.map((cg) => removeCgroup(cg)));
    await rm(tmp, { recursive: true, force: true });
  }
}

/** A phase's peak RSS, with its anonymous (V8's heap and external memory among it) and file-backed parts. */
const rssCell = (s: ScaleStateResult, phase: "load" | "batches"): string => {
  const k = phase === "load" ? s.rss_kinds_at_peak_mib_load : s.rss_kinds_at_peak_mib_batches;
  const peak = phase === "load" ? s.peak_rss_mib_load : s.peak_rss_mib_batches;
  return `${peak} (anon ${k.anon}: V8 ${k.v8_heap}, external ${k.external}; file ${k.file})`;
};

/** The W-scale table, one row per state. */
export function scaleTable(w: WScale): string[] {
  const mb = (b: number): string => (b / 1e6).toFixed(0);
  const rows = w.states.map((s) => {
    const c = s.workload.compaction_mb;
    return (
      `| ${s.label} | ${s.leaves.toLocaleString("en")} | ${s.workload.bulk_load_s.toFixed(1)} | ` +
      `${mb(s.store_bytes_after_load)} | ${mb(s.store_bytes_after_batches)} | ` +
      `${(s.store_bytes_after_load / s.leaves).toFixed(0)} | ${s.workload.batch_s_native.toFixed(3)} | ` +
      `${(c.reduce((a, b) => a + b, 0) / Math.max(1, c.length)).toFixed(0)} (median ${median(c).toFixed(0)}) | ` +
      `${rssCell(s, "load")} | ${rssCell(s, "batches")} | ${s.max_rss_mib} |`
    );
  });
  const cg = (s: ScaleStateResult): string =>
    s.cgroup
      ? `cgroup v${s.cgroup.version} ${s.cgroup.limit_mib} MiB: peak ${s.cgroup.peak_mib ?? "?"}, anon ${s.cgroup.anon_mib}, file ${s.cgroup.file_mib} (mapped ${s.cgroup.mapped_file_mib})`
      : "no cgroup";
  const notes = w.states.map(
    (s) =>
      `${s.label}: ${cg(s)}; records per batch read ${median(s.workload.records_read)}, looked up ${median(s.workload.nodes_looked_up)}, ` +
      `written ${median(s.workload.records_written)}; cache ${s.workload.cache.levels} levels, ${s.workload.cache.nodes_warm} nodes warm in ${s.workload.warm_s.toFixed(1)} s ` +
      `from a ${s.workload.warm_source} (${(s.snapshot_bytes / 2 ** 20).toFixed(0)} MiB; by walking the trees after the load: ${s.walk_s.toFixed(1)} s)`,
  );
  return [
    `\nW-scale: W-spot batches (10k/5k/2k leaves) on two states, each loaded by a process and signed by another, batches alternated; LevelDB maps up to ${w.mapped_tables} tables`,
    "| state | leaves | bulk load s | store MB after load | store MB after batches | bytes/leaf | median batch s | compaction MiB/batch, mean | peak RSS MiB, load | peak RSS MiB, batches | max RSS MiB |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
    ...rows,
    `batch at ${w.factor}× the state: ${(w.batch_s / w.batch_s_1m_same_run).toFixed(2)}× the base state's batch (target ≤ 1.3×); ` +
      `bulk load ${(w.bulk_load_s / 60).toFixed(1)} min (target ≤ 8); peak RSS ${w.peak_rss_mib} MiB (target: no OOM in the cgroup, anonymous ≤ 1536 MiB)`,
    `node cache warm-up at ${w.factor}× the state: ${w.warm_s.toFixed(1)} s from the snapshot a stop leaves (target ≤ 30), ${w.walk_s.toFixed(1)} s by walking the trees`,
    ...notes,
    ...(w.cgroup_error ? [`the signing processes ran without a memory cgroup: ${w.cgroup_error}`] : []),
  ];
}
