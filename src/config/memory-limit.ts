import { readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * The memory limit the process runs under, from its cgroup: what systemd's `MemoryHigh=` and
 * `MemoryMax=` (cgroup v2 `memory.high`, `memory.max`), a container runtime's `--memory` or a
 * cgroup v1 `memory.limit_in_bytes` set. The lowest limit on the way from the process's cgroup up
 * to the hierarchy's root counts: a slice's limit binds the services in it.
 */
export interface MemoryLimit {
  readonly bytes: number;
  /** The file that set it, e.g. `/sys/fs/cgroup/system.slice/dacd.service/memory.high`. */
  readonly source: string;
}

/** Where the cgroup files are: a temporary tree in tests. */
export interface CgroupPaths {
  /** The cgroup file system's mount point (`/sys/fs/cgroup`). */
  readonly root: string;
  /** The text of `/proc/self/cgroup`. */
  readonly selfCgroup: string | undefined;
}

/** cgroup v1 writes "no limit" as a huge number (a page-rounded 2^63 − 1): anything above this. */
const V1_UNLIMITED = 2 ** 60;

const readText = (path: string): string | undefined => {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
};

export function systemCgroupPaths(): CgroupPaths {
  return { root: "/sys/fs/cgroup", selfCgroup: readText("/proc/self/cgroup") };
}

/** The limit of this process's cgroup (v2 first, then v1), or undefined where none is set. */
export function cgroupMemoryLimit(paths: CgroupPaths = systemCgroupPaths()): MemoryLimit | undefined {
  const lines = (paths.selfCgroup ?? "").split("\n").filter((l) => l.trim() !== "");
  const entries = lines.map((l) => {
    const [, , controllers = "", path = "/"] = /^(\d+):([^:]*):(.*)$/.exec(l.trim()) ?? [];
    return { controllers: controllers.split(","), path };
  });
  const v2 = entries.find((e) => e.controllers.length === 1 && e.controllers[0] === "");
  const v1 = entries.find((e) => e.controllers.includes("memory"));
  // On a hybrid system the memory controller is v1's when it is listed there.
  if (v1) return lowestOnTheWay(join(paths.root, "memory"), v1.path, ["memory.limit_in_bytes"], parseV1);
  if (v2) return lowestOnTheWay(paths.root, v2.path, ["memory.high", "memory.max"], parseV2);
  return undefined;
}

/** "max" is no limit; otherwise bytes. */
function parseV2(text: string): number | undefined {
  const t = text.trim();
  if (t === "max" || t === "") return undefined;
  const n = Number(t);
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

function parseV1(text: string): number | undefined {
  const n = Number(text.trim());
  return Number.isFinite(n) && n > 0 && n < V1_UNLIMITED ? n : undefined;
}

/**
 * The lowest of `files` in the cgroup at `path` under `mount` and in each of its ancestors. Inside a
 * cgroup namespace the path may be one the mount does not show (the mount is the namespace's own
 * cgroup): then the mount's own files are read.
 */
function lowestOnTheWay(
  mount: string,
  path: string,
  files: readonly string[],
  parse: (text: string) => number | undefined,
): MemoryLimit | undefined {
  const parts = path.split("/").filter((p) => p !== "" && p !== "." && p !== "..");
  let lowest: MemoryLimit | undefined;
  for (let depth = parts.length; depth >= 0; depth--) {
    const dir = join(mount, ...parts.slice(0, depth));
    for (const file of files) {
      const text = readText(join(dir, file));
      const bytes = text === undefined ? undefined : parse(text);
      if (bytes !== undefined && (lowest === undefined || bytes < lowest.bytes))
        lowest = { bytes, source: join(dir, file) };
    }
  }
  return lowest;
}
