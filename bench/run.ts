import { readFileSync } from "node:fs";
import os from "node:os";
import { writeFile } from "node:fs/promises";
import type { LevelTuning } from "../src/storage/level-store.js";
import { keepInitialOldSpaceToMainThread } from "../src/util/heap-flags.js";
import { setMappedTables } from "../src/storage/level-binding.js";
import { loadNativePedersen } from "../src/verifier/hash/native-engine.js";
import { createEngine } from "../src/verifier/hash/select.js";
import { WasmEngine } from "../src/verifier/hash/wasm-engine.js";
import { cgroupMemoryLimit } from "../src/config/memory-limit.js";
import { memoryBudget, planMemory } from "../src/config/memory-plan.js";
import { join } from "node:path";
import { dumpBeside, median } from "./dump-beside.js";
import { printCatchup, runCatchup } from "./catchup.js";
import { benchEngines } from "./engines.js";
import { runReferenceImport } from "./reference-import.js";
import { loadAltVerifier, runWorkload, W_SPOT, type WorkloadResult } from "./workloads.js";
import { parseKernelOption, parseScaleFactor, shrunkSize } from "./scale-options.js";
import { runScale, scaleTable } from "./scale.js";
import { escapeKitTable, runEscapeKitBench, type KitLayout } from "./escape-kit.js";
import { escapePageTable, runEscapePageBench } from "./escape-page.js";

keepInitialOldSpaceToMainThread();

/**
 * `npm run bench [-- --quick] [-- --json FILE] [-- --wasm-runs N] [-- --cache-levels N]`: engine speeds and the W-spot and
 * W-perp workloads, printed as a table. Figures from one run on one machine; compare the ratios.
 * `--native-runs N` sets the native batches (default 5; 0 with `--wasm-runs 0` times the bulk load alone).
 * `--compact-after-load` compacts the whole store once after each bulk load (timed apart).
 * `--max-open-files N` caps LevelDB's open table files (up to `--mapped-tables` of them memory-mapped).
 * `--pool-threshold N`: hashMany/hashConst calls of fewer pairs stay on the calling thread (default 256);
 * `--climb-threshold N`: chain climbs of fewer hashes do (default 2048).
 * `--level JSON` sets any of LevelDB's tunables (LevelTuning), e.g. `'{"writeBufferSize":67108864}'`.
 * `--alt-build DIST` alternates the native batches between this build's verifier and another build's
 * (its `dist` directory, e.g. of a `git worktree` of another commit, built), and prints both medians
 * (with `--scale`, in each state's signing process).
 * `--alt-node-cache` alternates them between the node cache in the addon and in JavaScript
 * (DACD_NODE_CACHE=js), each batch with a cache of its kind warmed beforehand, and prints both medians.
 * For profiling: `--only spot|perp` runs one workload and no engine table; `--cpu-profile PREFIX`
 * writes a CPU profile of the third native batch to PREFIX-<workload>.cpuprofile, `--heap-profile
 * PREFIX` its sampled allocations to PREFIX-<workload>.heapprofile (open either in Chrome's DevTools
 * or summarise with bench/profile-summary.ts).
 * `--only reference-import` times alone the import of a reference member's state archive of 1M
 * vaults and 500k orders (bench/reference-import.ts; `--reference-import` adds it to a full run;
 * `--ref-vaults N`, `--ref-orders N` change the size).
 * `--only dump-beside` (after `npm run build`): the W-spot batches alternate between alone and with a
 * full `dacd dump` of the same store streaming beside them through the control socket
 * (bench/dump-beside.ts; default 8 native batches, no WASM ones); prints both medians and the ratio.
 * `--catchup` (alone): dacd's member catching up on 50 W-spot batches (`--catchup-batches N`) served
 * as JSON by a local HTTP gateway, from the W-spot state (bench/catchup.ts); `--catchup-cache DIR`
 * keeps the prepared state and batches in DIR for the next run; `--cache-levels N` sets the member's
 * `node_cache_levels`.
 * `--kernel ifma|adx|portable` forces the native kernel; `--kernel all` alternates every kernel this
 * CPU runs batch by batch in W-spot (`--native-runs` batches each) and prints each one's median.
 * `--scale` runs W-scale alone (bench/scale.ts): the W-spot batches on the W-spot state and on one
 * `--scale-factor F` times larger (default 10: 10M vaults), each loaded by a process of its own and
 * signed by another; `--scale-cache-levels N` gives the larger state's signing process a node cache
 * of N levels instead of `--cache-levels`.
 * `--mapped-tables N` sets how many table files LevelDB memory-maps (`store_mapped_tables`).
 * `--only escape-kit` (after `npm run build`): `dacd escape-kit` of a state of `--kit-vaults N`
 * vaults (default 1,000,000) in a process of its own, with ids sequential and spread
 * (`--kit-layouts`), format 2 unless `--kit-format 1`: time, peak RSS, bytes and files a vault
 * (bench/escape-kit.ts). `--kit-beside-member`: each kit built through the control socket of a
 * `dacd run` signing on the same store, fed a batch of `--kit-batch-vaults N` (1000) vaults every
 * `--kit-batch-every-s S` (2) by a local gateway (`--kit-beside-batches N` prepared; default enough
 * for twice the target time; the daemon's memory_budget_mib `--kit-daemon-budget-mib N`, default
 * 1024): also the daemon's peak RSS during the build, the batches it signed,
 * the longest time without a signature (bench/kit-beside.ts). `--kit-store DIR` keeps each loaded
 * store under DIR and reuses it on the next run (a member beside the kit signs into a copy).
 * `--only escape-page` (after `npm run build`; Chromium at /usr/bin/chromium): the escape page's time
 * from a stark key to call data, CPU throttled 4×, on `--page-kit DIR` or on a kit built here of
 * `--kit-vaults N` vaults (default 1,000,000), ids `--page-layout spread|sequential` (default
 * spread), `--page-runs N` times (bench/escape-page.ts).
 * `--sequential-ids` gives the Merkle trees' ids out in sequence (W-spot, W-perp, W-scale), where
 * they are otherwise uniform over each tree's range. Without it the default run has W-spot-seq and
 * W-perp-seq beside W-spot and W-perp: the same with ids in sequence (`--only w-spot-seq` alone).
 * The node cache is sized as a member sizes it (memory-plan.ts): from `--budget-mib N`, else the
 * bench's cgroup limit less headroom, else the default budget (`--cache-levels N` overrides). Each
 * workload reports the records it read from LevelDB, looked up and wrote per batch, and the cache's
 * warm-up. `--scale` puts each signing process in a memory cgroup of `--cgroup-mib N` (default
 * 2048; 0: none; needs root), sizes it from that budget, and reports the cgroup's anonymous and
 * file memory (`w_scale.cgroup_mib`, absent when no cgroup could be made). Each load warms the
 * cache by walking its trees and saves it (`w_scale.walk_s`); the signing process starts from that
 * snapshot, as a restarted member does (`w_scale.warm_s`).
 */
function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const quick = process.argv.includes("--quick");
const sequentialIds = process.argv.includes("--sequential-ids") || undefined;
const jsonPath = arg("--json");
const besideDump = arg("--only") === "dump-beside";
const wasmRuns = Number(arg("--wasm-runs") ?? (besideDump ? 0 : 3));
const nativeRuns = Number(arg("--native-runs") ?? (besideDump ? 8 : 5));
/**
 * The node cache as a member sizes it (memory-plan.ts): from `--budget-mib N`, else this process's
 * cgroup limit less headroom, else the default budget; `--cache-levels N` sets the levels instead,
 * without a node bound, as `node_cache_levels` does.
 */
const budget = memoryBudget(
  arg("--budget-mib") === undefined ? undefined : Number(arg("--budget-mib")),
  cgroupMemoryLimit(),
);
const cacheFor = (trees: number): { levels: number; nodes?: number } => {
  if (arg("--cache-levels") !== undefined) return { levels: Number(arg("--cache-levels")) };
  const plan = planMemory(budget, 0, trees);
  return { levels: plan.node_cache_levels, nodes: plan.node_cache_nodes };
};
const cacheLevels = cacheFor(3).levels;
const onlyArg = besideDump ? "spot" : arg("--only")?.replace(/^w-/, "");
const WORKLOADS = ["spot", "perp", "spot-seq", "perp-seq"] as const;
type WorkloadName = (typeof WORKLOADS)[number];
if (
  onlyArg !== undefined &&
  !(WORKLOADS as readonly string[]).includes(onlyArg) &&
  onlyArg !== "reference-import" &&
  onlyArg !== "escape-kit" &&
  onlyArg !== "escape-page"
)
  throw new Error(
    "--only takes spot, perp, spot-seq, perp-seq (or w-spot …), reference-import, escape-kit, escape-page or dump-beside",
  );
const referenceOnly = onlyArg === "reference-import";
const only: WorkloadName | undefined =
  onlyArg === "reference-import" || onlyArg === "escape-kit" || onlyArg === "escape-page"
    ? undefined
    : (onlyArg as WorkloadName | undefined);
const mappedTables = arg("--mapped-tables") === undefined ? undefined : Number(arg("--mapped-tables"));
if (mappedTables !== undefined && setMappedTables(mappedTables) !== "set")
  throw new Error("--mapped-tables needs dacd's build of LevelDB's binding");
const cpuProfile = arg("--cpu-profile");
const heapProfile = arg("--heap-profile");
const level: LevelTuning = {
  // What the memory plan gives the member for a 10M-vault store (1.5 × its ~3,000 tables + 500),
  // so that no batch reopens a table, unless told otherwise (W-scale's signing processes take the
  // memory plan's for their own store).
  ...(process.argv.includes("--scale") ? {} : { maxOpenFiles: 5000 }),
  ...(JSON.parse(arg("--level") ?? "{}") as LevelTuning),
  ...(arg("--max-open-files") === undefined ? {} : { maxOpenFiles: Number(arg("--max-open-files")) }),
};
const kernelArg = arg("--kernel");
const forcedKernels = parseKernelOption(kernelArg, loadNativePedersen()?.kernels() ?? []);
const altBuild = arg("--alt-build");
const alt = altBuild === undefined ? undefined : await loadAltVerifier(altBuild);
const altNodeCache = process.argv.includes("--alt-node-cache");
const log = (s: string): void => void process.stderr.write(s + "\n");

/**
 * The RSS by kind of page, from the kernel's counters in /proc/self/status (RssAnon, RssFile,
 * RssShmem): cheap to read, where smaps_rollup walks every page table of the process and would
 * take a timed batch's main thread for a noticeable while.
 */
let kindsAtPeak: { anon_mib: number; file_mib: number } | undefined;
function rssKinds(): string | undefined {
  try {
    const text = readFileSync("/proc/self/status", "utf8");
    const mib = (name: string): number =>
      Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? NaN) / 1024;
    kindsAtPeak = {
      anon_mib: Math.round(mib("RssAnon")),
      file_mib: Math.round(mib("RssFile") + mib("RssShmem")),
    };
    return `anonymous ${mib("RssAnon").toFixed(0)} MiB, file-backed (mapped tables, code) ${(mib("RssFile") + mib("RssShmem")).toFixed(0)} MiB`;
  } catch {
    return undefined;
  }
}

let peakRss = 0;
// What the process held when RSS peaked: the JS heap, buffers outside it, and the rest (LevelDB,
// the native engine's tables, mapped table files).
let atPeak: NodeJS.MemoryUsage | undefined;
// Linux: how much of the RSS at the peak was file pages (LevelDB's memory-mapped tables) and how
// much anonymous memory (heaps, buffers, tables, caches).
let fileAtPeak: string | undefined;
let phase = "engines";
let peakPhase = phase;
// The sampler runs during the timed batches, so it reads only RSS every 100 ms; the detail (a full
// memoryUsage, which gathers the heap's statistics, and /proc/self/status) is taken again only
// when the peak has grown by DETAIL_STEP since the last detail.
const DETAIL_STEP = 8 * 2 ** 20;
let detailedAt = 0;
const sampler = setInterval(() => {
  const rss = process.memoryUsage.rss();
  if (rss <= peakRss) return;
  peakRss = rss;
  peakPhase = phase;
  if (rss - detailedAt < DETAIL_STEP) return;
  detailedAt = rss;
  atPeak = process.memoryUsage();
  fileAtPeak = rssKinds();
}, 100);

async function referenceImport(): Promise<void> {
  phase = "reference import";
  const engine = createEngine("native", { threads: "auto" });
  try {
    const r = await runReferenceImport({
      engine,
      vaults: Number(arg("--ref-vaults") ?? 1_000_000),
      orders: Number(arg("--ref-orders") ?? 500_000),
      log,
    });
    console.log(
      `\nReference state archive import (dacd load --from-reference), spot profile, 4 order subtrees`,
    );
    console.log(
      "| vaults | orders | archive MB | import s | CPU s (dacd, all threads) | phases (s from start, at each one's end) |",
    );
    console.log("|---|---|---|---|---|---|");
    const phases = Object.entries(r.phases_s)
      .map(([k, s]) => `${k} ${s.toFixed(1)}`)
      .join(", ");
    console.log(
      `| ${r.vaults.toLocaleString("en")} | ${r.orders.toLocaleString("en")} | ${r.archive_mb.toFixed(1)} | ${r.import_s.toFixed(1)} | ${r.import_cpu_s.toFixed(1)} | ${phases} |`,
    );
    if (r.generated_s !== undefined)
      console.log(`(archive generated first in ${r.generated_s.toFixed(1)} s, untimed)`);
  } finally {
    await engine.close?.();
  }
}
if (process.argv.includes("--catchup")) {
  const catchup = await runCatchup({
    quick,
    batches: Number(arg("--catchup-batches") ?? 50),
    cacheDir: arg("--catchup-cache"),
    cpuProfile: cpuProfile && `${cpuProfile}-catchup.cpuprofile`,
    cacheLevels: arg("--cache-levels") === undefined ? undefined : cacheLevels,
    log,
  });
  clearInterval(sampler);
  printCatchup(catchup, quick);
  const peak = Math.max(peakRss, process.resourceUsage().maxRSS * 1024) / 2 ** 20;
  console.log(`\npeak RSS: ${peak.toFixed(0)} MiB`);
  if (jsonPath)
    await writeFile(jsonPath, JSON.stringify({ catchup, peak_rss_mib: Math.round(peak) }, null, 2) + "\n");
  process.exit(0);
}
if (process.argv.includes("--scale")) {
  if (forcedKernels.length > 1) throw new Error("--scale takes one --kernel, not all");
  const w = await runScale({
    base: { ...(quick ? shrunkSize(W_SPOT, 0.1) : W_SPOT), sequentialIds },
    factor: parseScaleFactor(arg("--scale-factor")),
    nativeRuns,
    cacheLevels: arg("--cache-levels") === undefined ? undefined : cacheLevels,
    cgroupMib: Number(arg("--cgroup-mib") ?? 2048),
    largeCacheLevels:
      arg("--scale-cache-levels") === undefined ? undefined : Number(arg("--scale-cache-levels")),
    level,
    mappedTables,
    kernel: forcedKernels.length === 1 ? forcedKernels[0] : undefined,
    altBuild,
    log,
  });
  clearInterval(sampler);
  for (const line of scaleTable(w)) console.log(line);
  if (jsonPath) await writeFile(jsonPath, JSON.stringify({ w_scale: w }, null, 2) + "\n");
  process.exit(0);
}
if (onlyArg === "escape-kit") {
  const kit = await runEscapeKitBench({
    vaults: Number(arg("--kit-vaults") ?? 1_000_000),
    format: arg("--kit-format") === "1" ? 1 : 2,
    layouts: (arg("--kit-layouts") ?? "sequential,spread").split(",") as KitLayout[],
    beside: process.argv.includes("--kit-beside-member")
      ? {
          batchEveryS: Number(arg("--kit-batch-every-s") ?? 2),
          vaultsABatch: Number(arg("--kit-batch-vaults") ?? 1000),
          budgetMib: Number(arg("--kit-daemon-budget-mib") ?? 1024),
          batches:
            arg("--kit-beside-batches") === undefined ? undefined : Number(arg("--kit-beside-batches")),
        }
      : undefined,
    keepStores: arg("--kit-store"),
    log,
  });
  clearInterval(sampler);
  for (const line of escapeKitTable(kit)) console.log(line);
  if (jsonPath) await writeFile(jsonPath, JSON.stringify({ escape_kit: kit }, null, 2) + "\n");
  process.exit(0);
}
if (onlyArg === "escape-page") {
  const pageBench = await runEscapePageBench({
    kit: arg("--page-kit"),
    vaults: Number(arg("--kit-vaults") ?? 1_000_000),
    spread: (arg("--page-layout") ?? "spread") === "spread",
    runs: Number(arg("--page-runs") ?? 3),
    log,
  });
  clearInterval(sampler);
  for (const line of escapePageTable(pageBench)) console.log(line);
  if (jsonPath) await writeFile(jsonPath, JSON.stringify({ escape_page: pageBench }, null, 2) + "\n");
  process.exit(0);
}
if (referenceOnly) {
  await referenceImport();
  clearInterval(sampler);
  console.log(
    `\npeak RSS: ${(Math.max(peakRss, process.resourceUsage().maxRSS * 1024) / 2 ** 20).toFixed(0)} MiB`,
  );
  process.exit(0);
}

const engines = only ? [] : await benchEngines({ quick });
// The tables' window width is chosen when the addon is built (scripts/build-native.mjs).
const windowBits = loadNativePedersen()?.windowBits;
console.log(`\nPedersen engines${windowBits ? ` (native tables: ${windowBits}-bit windows)` : ""}`);
console.log("| engine | kernel | threads | µs/hash | hashes/s |");
console.log("|---|---|---|---|---|");
for (const e of engines) {
  console.log(
    `| ${e.name} | ${e.kernel} | ${e.threads} | ${e.us_per_hash.toFixed(3)} | ${Math.round(e.hashes_per_s).toLocaleString("en")} |`,
  );
}

const numberArg = (name: string): number | undefined =>
  arg(name) === undefined ? undefined : Number(arg(name));
const nativeWith = (kernel?: string) =>
  createEngine("native", {
    threads: "auto",
    kernel,
    poolThreshold: numberArg("--pool-threshold"),
    poolClimbThreshold: numberArg("--climb-threshold"),
  });
const native = nativeWith(forcedKernels.length === 1 ? forcedKernels[0] : undefined);
// `--kernel all`: one engine per kernel, alternated batch by batch in W-spot.
const kernelEngines =
  forcedKernels.length > 1 ? forcedKernels.map((name) => ({ name, engine: nativeWith(name) })) : undefined;
const wasm = new WasmEngine();
const results: Record<string, WorkloadResult> = {};
// The -seq workloads: the same with ids given out in sequence (W-spot-seq, W-perp-seq).
for (const name of only ? [only] : sequentialIds ? (["spot", "perp"] as const) : WORKLOADS) {
  const kind = name.startsWith("spot") ? "spot" : "perp";
  const cache = cacheFor(kind === "spot" ? 3 : 2);
  results[name] = await runWorkload(kind, {
    quick,
    sequentialIds: sequentialIds ?? (name.endsWith("-seq") || undefined),
    native,
    wasm,
    nativeRuns,
    wasmRuns,
    cacheLevels: cache.levels,
    cacheNodes: cache.nodes,
    level,
    compactAfterLoad: process.argv.includes("--compact-after-load"),
    profile: cpuProfile
      ? { kind: "cpu", path: `${cpuProfile}-${name}.cpuprofile` }
      : heapProfile
        ? { kind: "heap", path: `${heapProfile}-${name}.heapprofile` }
        : undefined,
    log,
    phase: (step) => (phase = `${name} ${step}`),
    alt,
    altNodeCache,
    kernels: name === "spot" ? kernelEngines : undefined,
    beside: besideDump
      ? dumpBeside(native, join(import.meta.dirname, "..", "..", "bin", "dacd.js"), log)
      : undefined,
  });
}
await native.close?.();
for (const k of kernelEngines ?? []) await k.engine.close?.();
if (process.argv.includes("--reference-import")) await referenceImport();
clearInterval(sampler);
peakRss = Math.max(peakRss, process.resourceUsage().maxRSS * 1024);

console.log(
  `\nWorkloads${quick ? " (--quick: a tenth of the size)" : ""}: median seconds per batch, parsed update → stored and signed claim`,
);
// "hashes alone": each native batch's engine calls replayed alone right after it (workloads.ts:
// replayHashing); the ratio is the medians'.
console.log(
  "| workload | native s | hashes alone s | native ÷ hashes alone | wasm s | native speed-up | hashes/batch | storage ops/batch | bulk load s |",
);
console.log("|---|---|---|---|---|---|---|---|---|");
for (const [kind, r] of Object.entries(results)) {
  const alone = median(r.hash_only_s);
  console.log(
    `| W-${kind} | ${r.batch_s_native.toFixed(3)} | ${alone.toFixed(3)} | ${(r.batch_s_native / alone).toFixed(2)}× | ${r.batch_s_wasm.toFixed(2)} | ${(r.batch_s_wasm / r.batch_s_native).toFixed(1)}× | ${r.hashes.toLocaleString("en")} | ${r.storage_ops.toLocaleString("en")} | ${r.bulk_load_s.toFixed(1)} |`,
  );
}
console.log(
  `\nRecords per native batch (medians) and the node cache (budget ${Math.round(budget.bytes / 2 ** 20)} MiB: ${budget.source})`,
);
console.log(
  "| workload | read from LevelDB | looked up (cache or LevelDB) | written | cache levels | node bound | nodes warm | warm-up s |",
);
console.log("|---|---|---|---|---|---|---|---|");
for (const [name, r] of Object.entries(results)) {
  console.log(
    `| W-${name} | ${median(r.records_read).toLocaleString("en")} | ${median(r.nodes_looked_up).toLocaleString("en")} | ` +
      `${median(r.records_written).toLocaleString("en")} | ${r.cache.levels} | ${r.cache.max_nodes?.toLocaleString("en") ?? "none"} | ` +
      `${r.cache.nodes_warm.toLocaleString("en")} | ${r.warm_s.toFixed(1)} |`,
  );
}
console.log("\nWhere the median native batch went (s; wall time with such calls in flight, overlapping)");
console.log("| workload | store reads | hashing | commit (write + fsync) |");
console.log("|---|---|---|---|");
for (const [kind, r] of Object.entries(results)) {
  const b = r.native_breakdown_s;
  console.log(`| W-${kind} | ${b.reads.toFixed(3)} | ${b.hashing.toFixed(3)} | ${b.commit.toFixed(3)} |`);
}
const byKernel =
  results.spot?.batch_s_by_kernel ??
  (forcedKernels.length === 1 && results.spot
    ? { [forcedKernels[0]!]: results.spot.batch_s_native }
    : undefined);
if (byKernel) {
  const first = Object.values(byKernel)[0]!;
  console.log(
    `\nW-spot by kernel${kernelEngines ? " (alternated batch by batch)" : ""}: median s per batch, load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
  // CPU seconds (all threads) per batch: on a shared machine a steadier measure than wall time.
  const cpu = results.spot?.cpu_s_by_kernel;
  console.log(`| kernel | median s | × ${Object.keys(byKernel)[0]} |${cpu ? " median CPU s |" : ""}`);
  console.log(`|---|---|---|${cpu ? "---|" : ""}`);
  for (const [k, t] of Object.entries(byKernel))
    console.log(
      `| ${k} | ${t.toFixed(3)} | ${(t / first).toFixed(2)} |${cpu ? ` ${cpu[k]!.toFixed(2)} |` : ""}`,
    );
}
if (besideDump) {
  const { batch_s_native_alone: alone = [], batch_s_native_beside: beside = [] } = results.spot!;
  const ratio = median(beside) / median(alone);
  console.log(
    `\nW-spot batch with a full dump streaming beside it (alternating, ${alone.length} alone, ${beside.length} beside):`,
  );
  console.log("| batches | median s | each (s) |");
  console.log("|---|---|---|");
  console.log(`| alone | ${median(alone).toFixed(3)} | ${alone.map((t) => t.toFixed(3)).join(", ")} |`);
  console.log(
    `| beside a dump | ${median(beside).toFixed(3)} | ${beside.map((t) => t.toFixed(3)).join(", ")} |`,
  );
  console.log(`ratio of the medians: ${ratio.toFixed(2)}× (target at most 1.3×)`);
}
const peakMiB = peakRss / 2 ** 20;
const mib = (n: number): string => `${(n / 2 ** 20).toFixed(0)} MiB`;
console.log(`\npeak RSS: ${peakMiB.toFixed(0)} MiB`);
if (atPeak) {
  console.log(
    `  at the peak (${peakPhase}; detail within ${mib(DETAIL_STEP)} of it): JS heap ${mib(atPeak.heapUsed)}, buffers ${mib(atPeak.arrayBuffers)}, ` +
      // external normally includes the buffers; where it reports less (seen here), count the buffers.
      `rest (LevelDB, engine tables, code) ${mib(atPeak.rss - atPeak.heapTotal - Math.max(atPeak.external, atPeak.arrayBuffers))}`,
  );
  if (fileAtPeak) console.log(`  by kind of page: ${fileAtPeak}`);
}

if (jsonPath) {
  await writeFile(
    jsonPath,
    JSON.stringify(
      {
        engines,
        native_window_bits: windowBits,
        w_spot: results.spot,
        w_perp: results.perp,
        w_spot_seq: results["spot-seq"],
        w_perp_seq: results["perp-seq"],
        memory_budget: { mib: Math.round(budget.bytes / 2 ** 20), source: budget.source },
        ...(byKernel ? { w_spot_by_kernel: byKernel } : {}),
        peak_rss_mib: Math.round(peakMiB),
        // Anonymous memory and file pages (mapped tables, code) near the peak (/proc/self/status).
        ...(kindsAtPeak ? { rss_kinds_at_peak_mib: kindsAtPeak } : {}),
      },
      null,
      2,
    ) + "\n",
  );
}
