import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import os, { tmpdir } from "node:os";
import { join } from "node:path";
import { makeVaultDump } from "./vault-dump.js";

/**
 * `--only escape-kit` (after `npm run build`): `dacd escape-kit` of a spot-v4.0 state of
 * `--kit-vaults N` vaults (default 1,000,000) spread over the tree's 2^31 ids, as a separate
 * process on a stopped store (made by `dacd load` from a generated dump, untimed): its wall time
 * and peak RSS (GNU time's maximum resident set), against the targets of 5 minutes and 1 GiB.
 * The kit is about 10 KiB a vault on disk (10 GB for a million), removed afterwards.
 */

export interface EscapeKitBench {
  readonly vaults: number;
  readonly kit_s: number;
  readonly peak_rss_mib: number | null;
  /** User and system CPU seconds of the kit's process (all its threads): less bent by other load than the wall time. */
  readonly cpu_s: number | null;
  readonly files: number;
  readonly kit_mib: number;
  readonly cpu: string;
  readonly load_average: string;
}

const BIN = join(import.meta.dirname, "..", "..", "bin", "dacd.js");
const TIME = "/usr/bin/time";

function dacd(args: string[], timed: boolean): { elapsed_s?: number; max_rss_kib?: number; cpu_s?: number } {
  const cmd = timed && existsSync(TIME) ? TIME : process.execPath;
  const argv =
    cmd === TIME ? ["-f", "dacd-time %e %M %U %S", process.execPath, BIN, ...args] : [BIN, ...args];
  const started = performance.now();
  const r = spawnSync(cmd, argv, { encoding: "utf8", maxBuffer: 16 << 20 });
  if (r.status !== 0) throw new Error(`dacd ${args[0]} failed: ${r.stderr}`);
  const m = /dacd-time ([0-9.]+) ([0-9]+) ([0-9.]+) ([0-9.]+)/.exec(r.stderr);
  return m
    ? { elapsed_s: Number(m[1]), max_rss_kib: Number(m[2]), cpu_s: Number(m[3]) + Number(m[4]) }
    : { elapsed_s: (performance.now() - started) / 1000 };
}

export async function runEscapeKitBench(opts: {
  vaults: number;
  log: (s: string) => void;
}): Promise<EscapeKitBench> {
  const dir = await mkdtemp(join(tmpdir(), "dacd-kit-bench-"));
  try {
    await mkdir(join(dir, "dump"));
    opts.log(`escape-kit bench: generating a dump of ${opts.vaults} vaults`);
    await makeVaultDump(join(dir, "dump"), opts.vaults, { spread: true });
    opts.log("escape-kit bench: loading it (dacd load)");
    dacd(["load", "--from", join(dir, "dump"), "--db", join(dir, "db")], false);
    await rm(join(dir, "dump"), { recursive: true });
    opts.log("escape-kit bench: dacd escape-kit (timed)");
    const loadBefore = os.loadavg();
    const t = dacd(["escape-kit", "--db", join(dir, "db"), "--out", join(dir, "kit")], true);
    const loadAfter = os.loadavg();
    const manifest = JSON.parse(await readFile(join(dir, "kit", "manifest.json"), "utf8")) as {
      files: number;
    };
    if (manifest.files !== opts.vaults)
      throw new Error(`the kit holds ${manifest.files} proofs, not ${opts.vaults}`);
    const du = spawnSync("du", ["-sm", join(dir, "kit")], { encoding: "utf8" });
    return {
      vaults: opts.vaults,
      kit_s: t.elapsed_s!,
      peak_rss_mib: t.max_rss_kib === undefined ? null : Math.round(t.max_rss_kib / 1024),
      cpu_s: t.cpu_s ?? null,
      files: manifest.files,
      kit_mib: Number(du.stdout.split("\t")[0] ?? NaN),
      cpu: `${os.cpus()[0]?.model ?? "?"} × ${os.cpus().length}`,
      load_average: `${loadBefore.map((l) => l.toFixed(2)).join(" ")} before, ${loadAfter.map((l) => l.toFixed(2)).join(" ")} after`,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export function escapeKitTable(r: EscapeKitBench): string[] {
  return [
    `\nEscape kit (dacd escape-kit, spot-v4.0, ids spread over 2^31, a stopped store; targets ≤ 300 s, ≤ 1024 MiB)`,
    "| vaults | kit s | CPU s (user + sys) | peak RSS MiB | files | kit MiB on disk |",
    "|---|---|---|---|---|---|",
    `| ${r.vaults.toLocaleString("en")} | ${r.kit_s.toFixed(1)} | ${r.cpu_s?.toFixed(1) ?? "?"} | ${r.peak_rss_mib ?? "?"} | ${r.files.toLocaleString("en")} | ${r.kit_mib} |`,
    `CPU: ${r.cpu}; load average ${r.load_average}`,
  ];
}
