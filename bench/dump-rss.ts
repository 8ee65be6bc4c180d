/**
 * Dump/load at scale: `node dist/bench/dump-rss.js [vaults]` (default 1,000,000).
 *
 * 1. writes a dump of a spot-v4.0 state with N vaults (and a few orders) and its manifest, the
 *    roots computed with the bulk builders;
 * 2. in a child process, `load`s it into a fresh store (time, peak RSS);
 * 3. in another child process, `dump`s that store again (time, peak RSS; must stay < 500 MiB) and
 *    checks the files are byte for byte the ones written in step 1.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { dumpStore } from "../src/escape/dump.js";
import { wholeWalkTuning } from "../src/storage/walk-opening.js";
import type { Manifest } from "../src/escape/formats.js";
import { makeVaultDump } from "./vault-dump.js";
import { loadDump } from "../src/escape/load.js";
import { BULK_LOAD_WRITE_BUFFER } from "../src/storage/bulk-writer.js";
import { LevelStore } from "../src/storage/level-store.js";
import { createEngine } from "../src/verifier/hash/select.js";

const self = fileURLToPath(import.meta.url);
/** Peak anonymous and file-backed resident memory (Linux), sampled every 100 ms. */
function sampleRss(): () => { anon_mib: number; file_mib: number } {
  const peak = { anon_mib: 0, file_mib: 0 };
  const read = (): void => {
    try {
      const status = readFileSync("/proc/self/status", "utf8");
      const kb = (name: string): number => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
      peak.anon_mib = Math.max(peak.anon_mib, Math.round(kb("RssAnon") / 1024));
      peak.file_mib = Math.max(peak.file_mib, Math.round((kb("RssFile") + kb("RssShmem")) / 1024));
    } catch {
      /* not Linux */
    }
  };
  const timer = setInterval(read, 100);
  return () => {
    clearInterval(timer);
    read();
    return peak;
  };
}

async function child(mode: string, a: string, b: string): Promise<void> {
  const stop = sampleRss();
  const started = performance.now();
  const engine = createEngine("auto", mode === "load" ? { threads: "auto" } : {});
  const store = await LevelStore.open(
    mode === "load" ? a : b,
    mode === "load" ? { writeBufferSize: BULK_LOAD_WRITE_BUFFER } : await wholeWalkTuning(b),
  );
  try {
    if (mode === "load") await loadDump(store, engine, { fromDir: b });
    else await dumpStore(store, engine, { outDir: a });
  } finally {
    await store.close();
    await engine.close?.();
  }
  const out = {
    mode,
    engine: engine.name,
    ms: Math.round(performance.now() - started),
    max_rss_mib: Math.round(process.resourceUsage().maxRSS / 1024),
    peak: stop(),
  };
  process.stdout.write(JSON.stringify(out) + "\n");
}

function runChild(...args: string[]): Record<string, unknown> {
  const r = spawnSync(process.execPath, [self, "--child", ...args], { encoding: "utf8", maxBuffer: 1 << 20 });
  if (r.status !== 0) throw new Error(`child ${args[0]} failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split("\n").pop()!) as Record<string, unknown>;
}

async function main(): Promise<void> {
  if (process.argv[2] === "--child") return child(process.argv[3]!, process.argv[4]!, process.argv[5]!);
  const n = Number(process.argv[2] ?? 1_000_000);
  const dir = await mkdtemp(join(tmpdir(), "dacd-dump-bench-"));
  try {
    const t0 = performance.now();
    const manifest = await makeVaultDump(dir, n);
    const made = Math.round(performance.now() - t0);
    const load = runChild("load", join(dir, "db"), dir);
    const dump = runChild("dump", join(dir, "out"), join(dir, "db"));
    const redumped = JSON.parse(await readFile(join(dir, "out", "manifest.json"), "utf8")) as Manifest;
    const key = (m: Manifest): string =>
      JSON.stringify(Object.entries(m.trees).map(([k, t]) => [k, t.root, t.leaves, t.bytes, t.sha256]));
    const same = key(redumped) === key(manifest);
    const row = {
      vaults: n,
      generate_ms: made,
      load,
      dump,
      round_trip_identical: same,
      dump_rss_below_500_mib: (dump.max_rss_mib as number) < 500,
    };
    process.stdout.write(JSON.stringify(row, null, 2) + "\n");
    if (!same || !row.dump_rss_below_500_mib) process.exitCode = 1;
  } finally {
    if (!process.env.KEEP) await rm(dir, { recursive: true, force: true });
    else process.stderr.write(`kept ${dir}\n`);
  }
}

await main();
