import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { escapeRoutes } from "../src/control/escape-routes.js";
import { startControlServer } from "../src/control/server.js";
import type { LevelStore } from "../src/storage/level-store.js";
import type { HashEngine } from "../src/verifier/hash/engine.js";
import { startLauncher } from "./launcher.js";
import { otherTurn } from "./workloads.js";

/**
 * `--only dump-beside`: the W-spot batches alternate between alone and with a full `dacd dump`
 * of the same store running beside them, as an operator would run one while the daemon signs: the
 * store's control socket served in this process by the daemon's own routes (escape-routes.ts), the
 * command a separate process (bin/dacd.js, built; started by launcher.ts, not forked from this
 * process) writing the files to a temporary directory. Each
 * "beside" batch starts once the dump has written its first 64 KiB (`--dump-lead-kib N`: N KiB, e.g.
 * 24576 for a dump that has read a few seconds before the batch), and the dump is stopped after the
 * batch. Alternating in one run keeps the comparison fair on a machine whose load varies.
 */
export function dumpBeside(
  engine: HashEngine,
  bin: string,
  log: (s: string) => void,
): (i: number, store: LevelStore) => Promise<(() => Promise<void>) | undefined> {
  const lead = process.argv.indexOf("--dump-lead-kib");
  const leadKib = lead >= 0 ? Number(process.argv[lead + 1]) : 64;
  if (!(leadKib > 0)) throw new Error("--dump-lead-kib takes a positive number");
  let server: Server | undefined;
  let servedStore: LevelStore | undefined;
  // Started now, before the store and its caches fill this process (launcher.ts).
  const launcher = startLauncher();
  return async (i, store) => {
    if (!otherTurn(i)) return undefined;
    if (servedStore !== store) {
      server?.close();
      server = await startControlServer(store.dir, escapeRoutes(store, engine));
      servedStore = store;
    }
    const out = await mkdtemp(join(tmpdir(), "dacd-bench-dump-"));
    const child = await launcher.run([bin, "dump", "--db", store.dir, "--out", join(out, "d")]);
    let done: { code: number | null; stderr: string } | undefined;
    const exited = child.exited.then((d) => (done = d));
    // Timed once the dump streams: its first file has bytes.
    const started = performance.now();
    for (;;) {
      const files = await readdir(join(out, "d")).catch(() => [] as string[]);
      const sizes = await Promise.all(
        files.map((f) =>
          stat(join(out, "d", f)).then(
            (s) => s.size,
            () => 0,
          ),
        ),
      );
      if (sizes.reduce((a, b) => a + b, 0) > leadKib << 10) break;
      if (done) throw new Error(`the dump beside batch ${i + 1} ended early: ${done.stderr}`);
      if (performance.now() - started > 60_000) throw new Error("the dump beside did not start in 60 s");
      await new Promise((r) => setTimeout(r, 20));
    }
    const childCpu = async (): Promise<number> => {
      const f =
        (await readFile(`/proc/${child.pid}/stat`, "utf8").catch(() => "")).split(") ")[1]?.split(" ") ?? [];
      return (Number(f[11]) + Number(f[12])) / 100;
    };
    const cpuAtStart = await childCpu();
    return async () => {
      const cpuDuring = (await childCpu()) - cpuAtStart;
      const running = done === undefined;
      child.kill();
      await exited;
      const files = await readdir(join(out, "d")).catch(() => [] as string[]);
      let bytes = 0;
      for (const f of files)
        bytes += await stat(join(out, "d", f)).then(
          (s) => s.size,
          () => 0,
        );
      log(
        `dump beside batch ${i + 1}: ${(bytes / 2 ** 20).toFixed(1)} MiB written${running ? " (still running, stopped)" : " (complete before the batch ended)"}, the command's CPU during the batch ${cpuDuring.toFixed(2)} s`,
      );
      await rm(out, { recursive: true, force: true });
    };
  };
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0
    ? NaN
    : s.length % 2
      ? s[s.length >> 1]!
      : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}
