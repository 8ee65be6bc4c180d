/**
 * What this copy of dacd is: its version (package.json), the commit it was built from, and the
 * Node.js running it. Read once, at first use; every failure to find a fact leaves it "unknown".
 *
 * The commit comes from dist/build-info.json (written by scripts/write-build-info.mjs after every
 * build, so an installed package knows it), else from `git rev-parse HEAD` when dacd runs from a
 * checkout whose dist/ was built without that script.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export interface BuildInfo {
  /** package.json's version, or "unknown". */
  readonly version: string;
  /** The full commit hash, or "unknown". */
  readonly commit: string;
  /** process.version, e.g. "v20.20.0". */
  readonly node: string;
}

/** The package's root: the nearest directory above this module whose package.json is dacd's. */
export function packageRoot(): { dir: string; version: string } | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++, dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === "dacd") return { dir, version: pkg.version ?? "unknown" };
    } catch {
      // not here
    }
  }
  return undefined;
}

const COMMIT = /^[0-9a-f]{40}$/;

function commitOf(root: string): string {
  try {
    const info = JSON.parse(readFileSync(join(root, "dist", "build-info.json"), "utf8")) as {
      commit?: unknown;
    };
    if (typeof info.commit === "string" && COMMIT.test(info.commit)) return info.commit;
  } catch {
    // not built with the script
  }
  if (!existsSync(join(root, ".git"))) return "unknown";
  try {
    const out = execFileSync("git", ["-C", root, "rev-parse", "HEAD"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
      timeout: 2000,
    }).trim();
    return COMMIT.test(out) ? out : "unknown";
  } catch {
    return "unknown";
  }
}

let cached: BuildInfo | undefined;

export function buildInfo(): BuildInfo {
  if (!cached) {
    const root = packageRoot();
    cached = Object.freeze({
      version: root?.version ?? "unknown",
      commit: root ? commitOf(root.dir) : "unknown",
      node: process.version,
    });
  }
  return cached;
}

/** The short form of a commit for one-line displays (12 hex digits, or "unknown"). */
export function shortCommit(commit: string): string {
  return COMMIT.test(commit) ? commit.slice(0, 12) : commit;
}

/** `dacd --version`: "dacd 0.1.0 (commit 84136b0c1f2a, node v20.20.0)". */
export function versionLine(info: BuildInfo = buildInfo()): string {
  return `dacd ${info.version} (commit ${shortCommit(info.commit)}, node ${info.node})`;
}
