import { configDefaults, defineConfig } from "vitest/config";

// Three projects, chosen by folder so a new file lands in its project by where it is put:
// - unit: no build, no child process, no network but loopback, no root; quick.
// - e2e: starts dacd (its CLI or its daemon in the process) or other processes; needs the build.
// - system: root, tmpfs, Chromium, nginx, SoftHSM2, a local chain (Hardhat), promtool, large
//   hostile bodies, fuzz and crash tests; needs the build and the tools (DACD_REQUIRE_TOOLS=1
//   makes a missing tool fail rather than skip).
// e2e files run three at a time and system files two: each takes its ports from free-port.ts and
// its files from temporary directories of its own, and most of their time is spent waiting on
// child processes, sockets and a chain. The system files below run alone instead ("system-serial"): they mount a
// tmpfs, kill processes at random moments, hold hundreds of megabytes, or assert a bound on time
// or memory that a neighbour's load would blur.
const SYSTEM_SERIAL = [
  "chain-watch",
  "crash",
  "disk-full",
  "fuzz-daemon",
  "level-full-disk",
  "level-sync-beside",
  "reference-import-bomb",
].map((name) => `test/system/${name}.test.ts`);

export default defineConfig({
  test: {
    pool: "forks",
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: ["test/unit/**/*.test.ts"],
          globalSetup: ["test/setup/page-bundle.ts"],
          // CPU-bound files, one per core (vitest's default leaves one core to itself, which the
          // unit tests' main process does not need).
          maxWorkers: 2,
          // Projects with different worker counts run one after another (unit first: it fails fastest).
          sequence: { groupOrder: 0 },
          testTimeout: 20_000,
          hookTimeout: 20_000,
        },
      },
      {
        extends: true,
        test: {
          name: "e2e",
          sequence: { groupOrder: 1 },
          maxWorkers: 3,
          include: ["test/e2e/**/*.test.ts"],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: "system",
          sequence: { groupOrder: 2 },
          maxWorkers: 2,
          include: ["test/system/**/*.test.ts"],
          exclude: [...configDefaults.exclude, ...SYSTEM_SERIAL],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: "system-serial",
          sequence: { groupOrder: 3 },
          maxWorkers: 1,
          include: SYSTEM_SERIAL,
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
