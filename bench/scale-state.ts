import { readFileSync } from "node:fs";
import { createEngine } from "../src/hash/select.js";
import { WasmEngine } from "../src/hash/wasm-engine.js";
import { directorySize } from "../src/service/metrics.js";
import { setMappedTables } from "../src/storage/level-binding.js";
import type { LevelTuning } from "../src/storage/level-store.js";
import { runWorkload, type WorkloadResult, type WorkloadSize } from "./workloads.js";

/**
 * One state of W-scale (bench/scale.ts), in a process of its own so that its peak RSS is its own:
 * loads the state, then runs each native batch when the parent says so, so that the parent can
 * alternate the batches of two states that share the machine. Talks over the fork IPC channel:
 * it sends `{ type: "waiting" }` and runs its next step on `{ type: "go" }`; the last step sends
 * `{ type: "result" }`.
 */

export interface ScaleStateConfig {
  label: string;
  size: WorkloadSize;
  nativeRuns: number;
  cacheLevels: number;
  level: LevelTuning;
  /** LevelDB's memory-mapped tables in this process (setMappedTables); unset: LevelDB's number. */
  mappedTables?: number;
  kernel?: string;
}

export interface ScaleStateResult {
  label: string;
  workload: WorkloadResult;
  store_bytes_after_load: number;
  store_bytes_after_batches: number;
  leaves: number;
  peak_rss_mib_load: number;
  peak_rss_mib_batches: number;
  /**
   * At each phase's peak, MiB: anonymous memory and file pages (LevelDB's mapped tables, code), and
   * of the anonymous memory, V8's heap and the memory outside it that JavaScript objects hold
   * (Buffers); the rest is native (LevelDB's table cache and memtables, the node cache, the addon).
   */
  rss_kinds_at_peak_mib: Record<"load" | "batches", RssKinds>;
  /** The kernel's maximum RSS of the process (its whole life). */
  max_rss_mib: number;
}

export type ScaleMessage =
  { type: "waiting"; next: string } | { type: "result"; result: ScaleStateResult } | { type: "go" };

interface RssKinds {
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

  let phase: "load" | "batches" = "load";
  const peak = { load: 0, batches: 0 };
  const kinds = { load: rssKinds(), batches: rssKinds() };
  const sample = (): void => {
    const rss = process.memoryUsage.rss();
    if (rss <= peak[phase]) return;
    peak[phase] = rss;
    kinds[phase] = rssKinds();
  };
  const sampler = setInterval(sample, 100);
  const log = (s: string): void => void process.stderr.write(`[${config.label}] ${s}\n`);
  let afterLoad = 0;
  let afterBatches = 0;

  if (config.mappedTables !== undefined && setMappedTables(config.mappedTables) !== "set")
    throw new Error("mapped tables: dacd's build of LevelDB's binding is not loaded");
  await turn("bulk load");
  const native = createEngine("native", { threads: "auto", kernel: config.kernel });
  const workload = await runWorkload("spot", {
    quick: false,
    size: config.size,
    native,
    wasm: new WasmEngine(),
    nativeRuns: config.nativeRuns,
    wasmRuns: 0,
    cacheLevels: config.cacheLevels,
    level: config.level,
    log,
    afterLoad: async (dir) => {
      afterLoad = await directorySize(dir);
      sample();
    },
    gate: async (i) => {
      await turn(`batch ${i + 1}`);
      // From here on what a daemon holds: the load's garbage is collected (runWorkload).
      phase = "batches";
    },
    beforeCleanup: async (dir) => {
      await turn("finish");
      afterBatches = await directorySize(dir);
    },
  });
  await native.close?.();
  clearInterval(sampler);
  const mib = (b: number): number => Math.round(b / 2 ** 20);
  send({
    type: "result",
    result: {
      label: config.label,
      workload,
      store_bytes_after_load: afterLoad,
      store_bytes_after_batches: afterBatches,
      leaves: Object.values(config.size.initial).reduce((a, b) => a + b, 0),
      peak_rss_mib_load: mib(peak.load),
      peak_rss_mib_batches: mib(peak.batches),
      rss_kinds_at_peak_mib: kinds,
      max_rss_mib: mib(process.resourceUsage().maxRSS * 1024),
    },
  });
  process.removeAllListeners("disconnect");
  process.disconnect();
}

if (process.send) await main(JSON.parse(process.argv[2]!) as ScaleStateConfig);
