import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { systemCgroupPaths } from "../src/config/memory-limit.js";

/**
 * A memory cgroup for one of the bench's signing processes, limited to the budget, so that the
 * process runs as under systemd's `MemoryMax=`: its memory-mapped table pages are charged to it
 * like its heap, and the kernel reclaims them (or kills it) at the limit. cgroup v2 where the
 * machine has it with the memory controller, else v1's memory hierarchy. Creating one needs root
 * (or a delegated subtree); where it cannot, the reason is reported and the process runs without.
 */
export interface BenchCgroup {
  readonly version: 1 | 2;
  readonly dir: string;
  /** 0 until limitCgroup. */
  limitMib: number;
  /** The file a process writes its pid to, to join. */
  readonly procs: string;
}

/** What a cgroup holds now and held at most, MiB (from memory.stat and its peak counter). */
export interface CgroupMemory {
  version: 1 | 2;
  limit_mib: number;
  peak_mib?: number;
  anon_mib: number;
  file_mib: number;
  /** File pages mapped into the processes (LevelDB's mapped tables among them). */
  mapped_file_mib: number;
}

const MIB = 2 ** 20;

/** Creates `name` under this process's own cgroup, without a limit (limitCgroup); or why it could not. */
export function createMemoryCgroup(name: string): BenchCgroup | { error: string } {
  const { root, selfCgroup } = systemCgroupPaths();
  const lines = (selfCgroup ?? "").split("\n");
  const v1Path = lines
    .map((l) => /^\d+:([^:]*):(.*)$/.exec(l))
    .find((m) => m?.[1]?.split(",").includes("memory"));
  const v2Path = lines.map((l) => /^0::(.*)$/.exec(l)).find((m) => m);
  try {
    if (v1Path) {
      const dir = join(root, "memory", v1Path[2]!, name);
      mkdirSync(dir);
      return { version: 1, dir, limitMib: 0, procs: join(dir, "cgroup.procs") };
    }
    if (v2Path) {
      const parent = join(root, v2Path[1]!);
      if (!readFileSync(join(parent, "cgroup.subtree_control"), "utf8").includes("memory"))
        writeFileSync(join(parent, "cgroup.subtree_control"), "+memory");
      const dir = join(parent, name);
      mkdirSync(dir);
      return { version: 2, dir, limitMib: 0, procs: join(dir, "cgroup.procs") };
    }
    return { error: "no memory cgroup in /proc/self/cgroup" };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

/**
 * Limits the cgroup to `limitMib` (the kernel reclaims its page cache down to it first) and starts
 * its peak counter afresh where the kernel lets it (v1; v2's memory.peak since Linux 6.12).
 */
export function limitCgroup(cg: BenchCgroup, limitMib: number): void {
  writeFileSync(
    join(cg.dir, cg.version === 1 ? "memory.limit_in_bytes" : "memory.max"),
    String(limitMib * MIB),
  );
  cg.limitMib = limitMib;
  try {
    writeFileSync(join(cg.dir, cg.version === 1 ? "memory.max_usage_in_bytes" : "memory.peak"), "0");
  } catch {
    // An older v2 kernel: the peak includes the load's.
  }
}

/** The calling process joins the cgroup whose procs file is `procs`. */
export function joinCgroup(procs: string): void {
  writeFileSync(procs, String(process.pid));
}

/** The cgroup's memory now (anonymous, file, mapped file) and its peak where the kernel keeps one. */
export function cgroupMemory(cg: BenchCgroup): CgroupMemory {
  const stat = new Map(
    readFileSync(join(cg.dir, "memory.stat"), "utf8")
      .split("\n")
      .map((l) => l.split(" ") as [string, string])
      .map(([k, v]) => [k, Number(v)]),
  );
  const mib = (key: string): number => Math.round((stat.get(key) ?? 0) / MIB);
  const peakFile = cg.version === 1 ? "memory.max_usage_in_bytes" : "memory.peak";
  let peak: number | undefined;
  try {
    peak = Math.round(Number(readFileSync(join(cg.dir, peakFile), "utf8")) / MIB);
  } catch {
    // memory.peak is newer than some v2 kernels.
  }
  return cg.version === 1
    ? {
        version: 1,
        limit_mib: cg.limitMib,
        peak_mib: peak,
        anon_mib: mib("total_rss"),
        file_mib: mib("total_cache"),
        mapped_file_mib: mib("total_mapped_file"),
      }
    : {
        version: 2,
        limit_mib: cg.limitMib,
        peak_mib: peak,
        anon_mib: mib("anon"),
        file_mib: mib("file"),
        mapped_file_mib: mib("file_mapped"),
      };
}

/** Removes the cgroup once its processes have exited (retried briefly: the kernel frees it late). */
export async function removeCgroup(cg: BenchCgroup): Promise<void> {
  for (let i = 0; i < 50; i++) {
    try {
      rmdirSync(cg.dir);
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
