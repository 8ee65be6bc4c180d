import { copyFile } from "node:fs/promises";
import { join } from "node:path";
import type { Command } from "commander";
import { DacdError } from "../../errors.js";
import { dumpReferenceViaDaemon, dumpViaDaemon } from "../daemon-escape.js";
import { printJson } from "../output.js";
import { storeDirOf, storeOptions, type StoreOptions } from "../store-options.js";
import { batchId, DEFAULT_BATCH_HELP } from "./batch-options.js";
import { progressLine, secondsSince, type ProgressLine } from "./progress-line.js";
import { withStore } from "./with-store.js";

type DumpCliOptions = StoreOptions & { out: string; batch?: string; format: string; subtrees: string };

/** `dacd dump`: every non-empty leaf of a batch, as a dacd dump or the reference member's archive. */
export function registerDumpCommand(program: Command): void {
  storeOptions(
    program
      .command("dump")
      .description("write every non-empty leaf of every tree of a batch to files, with a manifest")
      .requiredOption(
        "--out <path>",
        "output directory (created; must be empty); with --format reference a new file",
      )
      .option("--batch <n>", DEFAULT_BATCH_HELP)
      .option(
        "--format <format>",
        "dacd (a directory with a manifest) or reference (the reference member's state archive)",
        "dacd",
      )
      .option("--subtrees <n>", "with --format reference: order subtrees, a power of two", "4"),
  ).action(async (opts: DumpCliOptions) => {
    const bar = progressLine();
    const started = Date.now();
    if (opts.format !== "dacd" && opts.format !== "reference")
      throw new DacdError("CONFIG", `--format ${JSON.stringify(opts.format)}: dacd or reference`);
    const batch = batchId(opts.batch);
    const result =
      opts.format === "reference"
        ? await dumpReference(opts, batch, bar, started)
        : await dumpDacd(opts, batch, bar, started);
    printJson(result);
  });
}

/** The reference member's state archive, from the running daemon or the store. */
async function dumpReference(
  opts: DumpCliOptions,
  batch: number | undefined,
  bar: ProgressLine,
  started: number,
): Promise<unknown> {
  const subtrees = Number(opts.subtrees);
  const progress = (file: string, n: number, what: string): void =>
    bar.update(`dump ${file}: ${n} ${what}, ${secondsSince(started)} s`);
  const viaDaemon = await dumpReferenceViaDaemon(storeDirOf(opts).dir, opts.out, batch, subtrees, (f, n) =>
    progress(f, n, "bytes"),
  );
  const { dumpReference } = await import("../../escape/reference-dump.js");
  const result =
    viaDaemon ??
    (await withStore(
      opts,
      {},
      (store, engine) =>
        dumpReference(store, engine, {
          out: opts.out,
          batchId: batch,
          subtrees,
          progress: (tree, n) => progress(tree, n, "leaves"),
        }),
      { wholeWalk: true, readOnly: true },
    ));
  bar.done();
  return result;
}

/** A dacd dump (a directory with a manifest and the claims journal), from the daemon or the store. */
async function dumpDacd(
  opts: DumpCliOptions,
  batch: number | undefined,
  bar: ProgressLine,
  started: number,
): Promise<unknown> {
  const viaDaemon = await dumpViaDaemon(storeDirOf(opts).dir, opts.out, batch, (file, bytes) =>
    bar.update(`dump ${file}: ${bytes} bytes, ${secondsSince(started)} s`),
  );
  const { dumpStore } = await import("../../escape/dump.js");
  const manifest =
    viaDaemon ??
    (await withStore(
      opts,
      {},
      (store, engine) =>
        dumpStore(store, engine, {
          outDir: opts.out,
          batchId: batch,
          progress: (tree, n) => bar.update(`dump ${tree}: ${n} leaves, ${secondsSince(started)} s`),
        }),
      { wholeWalk: true, readOnly: true },
    ));
  bar.done();
  // The dump carries the member's claims journal, for a store rebuilt from it (`dacd load`).
  await copyFile(storeDirOf(opts).journal, join(opts.out, "claims.journal")).catch((err: unknown) => {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  });
  return manifest;
}
