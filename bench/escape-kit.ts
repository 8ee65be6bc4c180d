import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { cp, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import os, { tmpdir } from "node:os";
import { join } from "node:path";
import { besideMember, type BesideFigures } from "./kit-beside.js";
import { makeVaultDump } from "./vault-dump.js";

/**
 * `--only escape-kit` (after `npm run build`): `dacd escape-kit` (format 2 unless `--kit-format
 * 1`) of spot-v4.0 states of `--kit-vaults N` vaults (default 1,000,000), with sequential ids and
 * with ids spread over the tree's 2^31 ids (`--kit-layouts sequential,spread`), each as a separate
 * process on a stopped store (made by `dacd load` from a generated dump, untimed): its wall time,
 * CPU time and peak RSS (GNU time's maximum resident set), the kit's bytes a vault (the files'
 * sizes, page aside) and files a vault, against the targets: ≤ 256 B a vault sequential, ≤ 1.5
 * KiB spread, ≤ one file per 500 vaults, 1M vaults in ≤ 60 s, peak RSS ≤ 1 GiB. The kits are
 * removed afterwards. With `beside` (`--kit-beside-member`) the store is a running member's and the
 * kit is built through its control socket (kit-beside.ts).
 */

export type KitLayout = "sequential" | "spread";

export interface EscapeKitRun {
  readonly layout: KitLayout;
  readonly format: 1 | 2;
  readonly vaults: number;
  readonly kit_s: number;
  readonly peak_rss_mib: number | null;
  /** User and system CPU seconds of the kit's process (all its threads): less bent by other load than the wall time. */
  readonly cpu_s: number | null;
  readonly files: number;
  /** The kit's data files' bytes (shards, index and manifest; format 1: the proofs), the page aside. */
  readonly data_bytes: number;
  readonly bytes_per_vault: number;
  readonly vaults_per_file: number;
  /** `--kit-beside-member`: built through the control socket of a signing `dacd run`. */
  readonly beside?: BesideFigures;
}

/** `--kit-beside-member`: the member's cadence and batches. */
export interface BesideOptions {
  readonly batchEveryS: number;
  readonly vaultsABatch: number;
  /** Batches to prepare; default: enough for twice the targets' time (60 s a million vaults). */
  readonly batches?: number;
  /** The daemon's memory_budget_mib: the target's 1 GiB by default, what an operator holding it sets. */
  readonly budgetMib: number;
}

export interface EscapeKitBench {
  readonly runs: EscapeKitRun[];
  readonly cpu: string;
  readonly load_average: string;
}

const BIN = join(import.meta.dirname, "..", "..", "bin", "dacd.js");
const TIME = "/usr/bin/time";
const PAGE = new Set(["index.html", "escape.js", "escape.css"]);

interface Timed {
  elapsed_s?: number;
  max_rss_kib?: number;
  cpu_s?: number;
}

/** `dacd ARGS` run to its end without holding this process's event loop (a member may be fed beside it). */
async function dacd(args: string[], timed: boolean): Promise<Timed> {
  const cmd = timed && existsSync(TIME) ? TIME : process.execPath;
  const argv =
    cmd === TIME ? ["-f", "dacd-time %e %M %U %S", process.execPath, BIN, ...args] : [BIN, ...args];
  const started = performance.now();
  const child = spawn(cmd, argv, { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr = (stderr + d).slice(-1 << 16)));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  if (code !== 0) throw new Error(`dacd ${args[0]} failed: ${stderr}`);
  const m = /dacd-time ([0-9.]+) ([0-9]+) ([0-9.]+) ([0-9.]+)/.exec(stderr);
  return m
    ? { elapsed_s: Number(m[1]), max_rss_kib: Number(m[2]), cpu_s: Number(m[3]) + Number(m[4]) }
    : { elapsed_s: (performance.now() - started) / 1000 };
}

/** Files and bytes under `dir`, the page's files aside. */
async function dataFiles(dir: string, top = true): Promise<{ files: number; bytes: number }> {
  let files = 0;
  let bytes = 0;
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (top && PAGE.has(e.name)) continue;
    const path = join(dir, e.name);
    if (e.isDirectory()) {
      const sub = await dataFiles(path, false);
      files += sub.files;
      bytes += sub.bytes;
    } else {
      files++;
      bytes += (await stat(path)).size;
    }
  }
  return { files, bytes };
}

export async function runEscapeKitBench(opts: {
  vaults: number;
  format: 1 | 2;
  layouts: readonly KitLayout[];
  beside?: BesideOptions;
  /**
   * Where loaded stores are kept between runs (`--kit-store DIR`): DIR/LAYOUT-VAULTS/db is reused
   * when a run left it there, else made and left there (a 10M store takes about ten minutes to
   * make). A member beside the kit signs into a copy of it.
   */
  keepStores?: string;
  log: (s: string) => void;
}): Promise<EscapeKitBench> {
  const runs: EscapeKitRun[] = [];
  const loadBefore = os.loadavg();
  for (const layout of opts.layouts) {
    const dir = await mkdtemp(join(tmpdir(), "dacd-kit-bench-"));
    const kept = opts.keepStores ? join(opts.keepStores, `${layout}-${opts.vaults}`) : undefined;
    const keptDb = kept ? join(kept, "db") : join(dir, "db");
    const db = kept && opts.beside ? join(dir, "db") : keptDb;
    try {
      if (kept && existsSync(join(kept, "loaded")))
        opts.log(`escape-kit bench: reusing the store in ${kept}`);
      else {
        const made = kept ?? dir;
        await rm(made, { recursive: true, force: true });
        await mkdir(join(made, "dump"), { recursive: true });
        opts.log(`escape-kit bench: generating a dump of ${opts.vaults} vaults, ids ${layout}`);
        await makeVaultDump(join(made, "dump"), opts.vaults, { spread: layout === "spread" });
        opts.log("escape-kit bench: loading it (dacd load)");
        await dacd(["load", "--from", join(made, "dump"), "--db", keptDb], false);
        await rm(join(made, "dump"), { recursive: true });
        if (kept) await writeFile(join(kept, "loaded"), "");
      }
      if (db !== keptDb) await cp(keptDb, db, { recursive: true });
      opts.log(`escape-kit bench: dacd escape-kit --format ${opts.format} (timed)`);
      const out = join(dir, "kit");
      const build = (): Promise<Timed> =>
        dacd(["escape-kit", "--format", String(opts.format), "--db", db, "--out", out], true);
      let t: Timed;
      let beside: BesideFigures | undefined;
      if (opts.beside) {
        const b = opts.beside;
        const expectedS = Math.max(30, (opts.vaults / 1e6) * 120);
        ({ result: t, beside } = await besideMember(
          BIN,
          db,
          dir,
          {
            vaults: opts.vaults,
            spread: layout === "spread",
            batchEveryS: b.batchEveryS,
            vaultsABatch: b.vaultsABatch,
            budgetMib: b.budgetMib,
            batches: b.batches ?? Math.ceil(expectedS / b.batchEveryS) + 2,
            log: opts.log,
          },
          build,
        ));
      } else t = await build();
      const manifest = JSON.parse(await readFile(join(out, "manifest.json"), "utf8")) as {
        files?: number;
        leaves?: number;
      };
      const held = manifest.leaves ?? manifest.files;
      if (held !== opts.vaults) throw new Error(`the kit holds ${held} vaults, not ${opts.vaults}`);
      const data = await dataFiles(out);
      runs.push({
        layout,
        format: opts.format,
        vaults: opts.vaults,
        kit_s: t.elapsed_s!,
        peak_rss_mib: t.max_rss_kib === undefined ? null : Math.round(t.max_rss_kib / 1024),
        cpu_s: t.cpu_s ?? null,
        files: data.files,
        data_bytes: data.bytes,
        bytes_per_vault: Math.round((data.bytes / opts.vaults) * 10) / 10,
        vaults_per_file: Math.round(opts.vaults / data.files),
        ...(beside ? { beside } : {}),
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
  const loadAfter = os.loadavg();
  return {
    runs,
    cpu: `${os.cpus()[0]?.model ?? "?"} × ${os.cpus().length}`,
    load_average: `${loadBefore.map((l) => l.toFixed(2)).join(" ")} before, ${loadAfter.map((l) => l.toFixed(2)).join(" ")} after`,
  };
}

export function escapeKitTable(r: EscapeKitBench): string[] {
  return [
    `\nEscape kit (dacd escape-kit, spot-v4.0, ${r.runs.some((x) => x.beside) ? "through a running member's control socket" : "a stopped store"}; targets: ≤ 256 B a vault sequential, ≤ 1,536 B spread, ≥ 500 vaults a file, 1M in ≤ 60 s, ≤ 1024 MiB)`,
    "| ids | format | vaults | kit s | CPU s (user + sys) | peak RSS MiB | data files | vaults a file | data MiB | B a vault |",
    "|---|---|---|---|---|---|---|---|---|---|",
    ...r.runs.map(
      (x) =>
        `| ${x.layout} | ${x.format} | ${x.vaults.toLocaleString("en")} | ${x.kit_s.toFixed(1)} | ${x.cpu_s?.toFixed(1) ?? "?"} | ${x.peak_rss_mib ?? "?"} | ${x.files.toLocaleString("en")} | ${x.vaults_per_file} | ${(x.data_bytes / 2 ** 20).toFixed(1)} | ${x.bytes_per_vault} |`,
    ),
    ...besideTable(r.runs),
    `CPU: ${r.cpu}; load average ${r.load_average}`,
  ];
}

function besideTable(runs: readonly EscapeKitRun[]): string[] {
  const with_ = runs.filter((x) => x.beside);
  if (with_.length === 0) return [];
  const b0 = with_[0]!.beside!;
  return [
    `\nBeside a signing member (dacd run on the same store, the kit through its control socket; a batch of ${b0.vaults_a_batch} vaults announced every ${b0.batch_every_s} s; the daemon's memory_budget_mib ${b0.budget_mib}; peak RSS target ≤ 1024 MiB)`,
    "| ids | vaults | kit s | daemon RSS before MiB | daemon peak RSS MiB (during the build) | of it anonymous, peak MiB | batches announced / signed during the build | longest without a signature s | longest announcement → signature s |",
    "|---|---|---|---|---|---|---|---|---|",
    ...with_.map((x) => {
      const b = x.beside!;
      return `| ${x.layout} | ${x.vaults.toLocaleString("en")} | ${x.kit_s.toFixed(1)} | ${b.daemon_rss_before_mib} | ${b.daemon_peak_rss_mib} | ${b.daemon_peak_anon_mib} | ${b.announced_during_build} / ${b.signed_during_build}${b.ran_out ? " (the gateway ran out of batches: --kit-beside-batches)" : ""} | ${b.longest_gap_s.toFixed(1)} | ${b.longest_wait_s.toFixed(1)} |`;
    }),
    "(the main table's peak RSS is the kit command's own process; here the daemon's)",
  ];
}
