import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { median } from "./dump-beside.js";

/**
 * `node dist/bench/level-checksums.js [--rounds R] [--mib M]`: LevelDB's writes with dacd's build of
 * its binding (CRC32C by the CPU's crc32 instruction) against classic-level's own (LevelDB's
 * table-driven CRC32C). Each run is a process of its own, since a process loads one binding:
 * it writes M MiB (default 300) of W-spot-sized records (32-byte keys, 72-byte values) in chained
 * batches of 1 MiB through classic-level's put, the same calls with either binding, so what
 * differs is LevelDB's checksums of the log and of the tables its memtable flushes and compactions
 * write. The bindings take turns R times (default 3); prints each run and the medians' ratio.
 */
function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

interface Run {
  wall_s: number;
  cpu_s: number;
  binding: string;
}

/** One run, in this process: the writes and their wall and CPU time. */
async function writeRun(dir: string, mib: number): Promise<Run> {
  const { ClassicLevel } = await import("../src/storage/classic-level.js");
  const { levelBindingName } = await import("../src/storage/level-binding.js");
  const db = new ClassicLevel<Uint8Array, Uint8Array>(dir, {
    keyEncoding: "view",
    valueEncoding: "view",
    compression: false,
  });
  await db.open();
  const RECORD = 72;
  const perBatch = Math.floor((1 << 20) / (32 + RECORD));
  const values = new Uint8Array(randomBytes(perBatch * RECORD));
  const keys = new Uint8Array(randomBytes(perBatch * 32 * 4));
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  for (let b = 0; b < mib; b++) {
    const batch = db.batch();
    // Keys from a rotating pool with the batch number in front: every batch writes new keys.
    const head = (b * perBatch) % (keys.length / 32 - perBatch);
    for (let i = 0; i < perBatch; i++) {
      const key = keys.slice((head + i) * 32, (head + i + 1) * 32);
      new DataView(key.buffer).setUint32(0, b);
      batch.put(key, values.subarray(i * RECORD, (i + 1) * RECORD));
    }
    await batch.write();
  }
  await db.close();
  const cpu = process.cpuUsage(cpu0);
  return {
    wall_s: (performance.now() - t0) / 1000,
    cpu_s: (cpu.user + cpu.system) / 1e6,
    binding: levelBindingName,
  };
}

async function main(): Promise<void> {
  const mib = arg("--mib", 300);
  if (process.argv.includes("--child")) {
    const run = await writeRun(process.argv[process.argv.indexOf("--child") + 1]!, mib);
    process.stdout.write(JSON.stringify(run));
    return;
  }
  const rounds = arg("--rounds", 3);
  const runs: Record<"dacd" | "stock", Run[]> = { dacd: [], stock: [] };
  for (let r = 0; r < rounds; r++) {
    for (const which of ["dacd", "stock"] as const) {
      const dir = await mkdtemp(join(tmpdir(), "dacd-bench-crc-"));
      try {
        const child = spawnSync(process.execPath, [process.argv[1]!, "--child", dir, "--mib", String(mib)], {
          env: { ...process.env, DACD_LEVEL_BINDING: which === "stock" ? "stock" : "auto" },
          encoding: "utf8",
        });
        if (child.status !== 0) throw new Error(`the ${which} run failed: ${child.stderr}`);
        const run = JSON.parse(child.stdout) as Run;
        if ((which === "dacd") !== (run.binding === "dacd"))
          throw new Error(`asked for the ${which} binding, the run had ${run.binding}'s (is dacd's built?)`);
        runs[which].push(run);
        console.log(
          `round ${r + 1} ${which}: ${run.wall_s.toFixed(2)} s wall, ${run.cpu_s.toFixed(2)} s CPU`,
        );
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }
  }
  const m = (which: "dacd" | "stock", k: "wall_s" | "cpu_s"): number => median(runs[which].map((r) => r[k]));
  console.log(
    `${mib} MiB written, medians of ${rounds}: dacd's binding ${m("dacd", "wall_s").toFixed(2)} s wall, ` +
      `${m("dacd", "cpu_s").toFixed(2)} s CPU; classic-level's ${m("stock", "wall_s").toFixed(2)} s, ` +
      `${m("stock", "cpu_s").toFixed(2)} s; ratio ${(m("dacd", "wall_s") / m("stock", "wall_s")).toFixed(2)}× wall, ` +
      `${(m("dacd", "cpu_s") / m("stock", "cpu_s")).toFixed(2)}× CPU`,
  );
}

await main();
