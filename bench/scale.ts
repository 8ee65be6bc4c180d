import { fork, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LevelTuning } from "../src/storage/level-store.js";
import type { ScaleMessage, ScaleStateConfig, ScaleStateResult } from "./scale-state.js";
import { LEVELDB_MAPPED_TABLES } from "../src/storage/level-binding.js";
import { scaledSize } from "./scale-options.js";
import { median } from "./dump-beside.js";
import type { WorkloadSize } from "./workloads.js";

/**
 * W-scale (`npm run bench -- --scale`): the W-spot batches on the W-spot state and on a state
 * `factor` times larger, each state in a child process of its own (bench/scale-state.ts) so that
 * each one's peak RSS is its own. The states are loaded one after the other, each alone; then the
 * batches alternate between them, one at a time, so that both meet the same machine.
 */

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
  peak_rss_mib: number;
  peak_rss_mib_batches: number;
  compaction_bytes_per_batch: number;
  /** The table files LevelDB memory-mapped in each state's process (`--mapped-tables`). */
  mapped_tables: number;
  /** Both states' figures, the base state first. */
  states: ScaleStateResult[];
}

class StateProcess {
  private readonly child: ChildProcess;
  private readonly queue: ScaleMessage[] = [];
  private wake?: () => void;
  private exited?: string;

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
    this.child.on("exit", (code, signal) => {
      this.exited = `${config.label} state process exited (${signal ?? code})`;
      this.wake?.();
    });
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
    const gone = new Promise((r) => this.child.once("exit", r));
    this.child.kill();
    await gone;
  }
}

export async function runScale(opts: {
  base: WorkloadSize;
  factor: number;
  nativeRuns: number;
  cacheLevels: number;
  level: LevelTuning;
  mappedTables?: number;
  kernel?: string;
  log: (s: string) => void;
}): Promise<WScale> {
  const large = scaledSize(opts.base, opts.factor);
  const label = (s: WorkloadSize): string => `${((s.initial.vault ?? 0) / 1e6).toFixed(1)}M vaults`;
  const configs = [opts.base, large].map((size): ScaleStateConfig => ({
    label: label(size),
    size,
    nativeRuns: opts.nativeRuns,
    cacheLevels: opts.cacheLevels,
    level: opts.level,
    mappedTables: opts.mappedTables,
    kernel: opts.kernel,
  }));
  const states: StateProcess[] = [];
  // The stores go under one directory of the parent's, so that a failed run leaves nothing behind.
  const tmp = await mkdtemp(join(tmpdir(), "dacd-bench-scale-"));
  // Interrupted (Ctrl-C, kill): the children and their stores (GBs at full size) go too.
  const interrupted = (signal: NodeJS.Signals): void => {
    opts.log(`scale: ${signal}, removing the state processes and ${tmp}`);
    void Promise.all(states.map((state) => state.kill()))
      .then(() => rm(tmp, { recursive: true, force: true }))
      .finally(() => process.exit(130));
  };
  process.once("SIGINT", interrupted).once("SIGTERM", interrupted);
  try {
    // Started and loaded one at a time: each bulk load has the machine (but this helper's) alone.
    for (const config of configs) {
      const state = new StateProcess(config, tmp);
      states.push(state);
      await state.next(); // waiting for "bulk load"
      opts.log(`scale: loading ${config.label}`);
      await state.step(); // loaded; waiting for batch 1
    }
    for (let i = 0; i < opts.nativeRuns; i++) for (const state of states) await state.step();
    const results: ScaleStateResult[] = [];
    for (const state of states) {
      const m = await state.step(); // the store's size after the batches, then cleanup
      if (m.type !== "result") throw new Error(`scale: expected a result, got ${m.type}`);
      results.push(m.result);
    }
    const [small, big] = results as [ScaleStateResult, ScaleStateResult];
    const compaction = big.workload.compaction_mb;
    return {
      factor: opts.factor,
      vaults: large.initial.vault ?? 0,
      bulk_load_s: big.workload.bulk_load_s,
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
      mapped_tables: opts.mappedTables ?? LEVELDB_MAPPED_TABLES,
      states: results,
    };
  } finally {
    process.off("SIGINT", interrupted).off("SIGTERM", interrupted);
    await Promise.all(states.map((state) => state.kill()));
    await rm(tmp, { recursive: true, force: true });
  }
}

/** A phase's peak RSS, with its anonymous (V8's heap and external memory among it) and file-backed parts. */
const rssCell = (s: ScaleStateResult, phase: "load" | "batches"): string => {
  const k = s.rss_kinds_at_peak_mib[phase];
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
  return [
    `\nW-scale: W-spot batches (10k/5k/2k leaves) on two states, one process each, batches alternated; LevelDB maps up to ${w.mapped_tables} tables`,
    "| state | leaves | bulk load s | store MB after load | store MB after batches | bytes/leaf | median batch s | compaction MiB/batch, mean | peak RSS MiB, load | peak RSS MiB, batches | max RSS MiB |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
    ...rows,
    `batch at ${w.factor}× the state: ${(w.batch_s / w.batch_s_1m_same_run).toFixed(2)}× the base state's batch (target ≤ 1.25×); ` +
      `bulk load ${(w.bulk_load_s / 60).toFixed(1)} min (target ≤ 8); peak RSS ${w.peak_rss_mib} MiB (target ≤ 2048)`,
  ];
}
