import { readFile } from "node:fs/promises";
import type { Command } from "commander";
import { loadConfig } from "../config/config.js";
import { DacdError } from "../errors.js";
import { checkStore } from "../escape/check.js";
import { dumpStore } from "../escape/dump.js";
import { loadDump } from "../escape/load.js";
import { makeProof, verifyProof, type Proof } from "../escape/proof.js";
import { pruneStore } from "../escape/prune.js";
import { BULK_LOAD_WRITE_BUFFER } from "../storage/bulk-writer.js";
import { LevelStore, type LevelTuning } from "../storage/level-store.js";
import type { HashEngine } from "../verifier/hash/engine.js";
import { createEngine, type CreateEngineOptions } from "../verifier/hash/select.js";

/**
 * Escape and maintenance commands on the member's own store (docs/escape.md): dump, proof,
 * verify-proof, load, check, prune. They open the store directly, so the daemon must be stopped
 * (LevelDB admits one process); the daemon itself runs pruneStore in-process.
 */

interface StoreOptions {
  config?: string;
  db?: string;
}

type DumpCliOptions = StoreOptions & { out: string; batch?: string; format: string; subtrees: string };
type LoadCliOptions = StoreOptions & {
  from?: string;
  fromReference?: string;
  profile?: string;
  force?: boolean;
};

function storeDir(opts: StoreOptions): { dir: string; profile?: string } {
  if (opts.db) return { dir: opts.db };
  if (opts.config) {
    const config = loadConfig(opts.config);
    return { dir: config.dataDir, profile: config.profile };
  }
  throw new DacdError("CONFIG", "name the store with --config FILE or --db DIR");
}

const withStore = (cmd: Command): Command =>
  cmd
    .option("--config <file>", "configuration file (its data_dir is used)")
    .option("--db <dir>", "store directory");

function batchId(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (!/^(0|[1-9][0-9]*)$/.test(v))
    throw new DacdError("BAD_INPUT", `batch id ${JSON.stringify(v)} is not a non-negative integer`);
  return Number(v);
}

function batchList(v: string | undefined): number[] | undefined {
  return v === undefined ? undefined : v.split(",").map((s) => batchId(s.trim())!);
}

/** Open table files while dumping: 427 MiB peak RSS for 1M vaults (bench/dump-rss.ts), ~600 MiB with the default. */
const DUMP_MAX_OPEN_FILES = 20;

async function run<T>(
  opts: StoreOptions,
  engineOpts: CreateEngineOptions,
  fn: (store: LevelStore, engine: HashEngine, profile: string | undefined) => Promise<T>,
  storeOpts: LevelTuning = {},
): Promise<T> {
  const { dir, profile } = storeDir(opts);
  const engine = createEngine(process.env.DACD_HASH_ENGINE ?? "auto", {
    warn: (m) => process.stderr.write(`${m}\n`),
    ...engineOpts,
  });
  const store = await LevelStore.open(dir, storeOpts);
  try {
    return await fn(store, engine, profile);
  } finally {
    await store.close();
    await engine.close?.();
  }
}

const print = (v: unknown): void => {
  process.stdout.write(JSON.stringify(v, null, 2) + "\n");
};

const LOAD_PHASES = {
  leaves: "leaves",
  tree: "nodes",
  writing: "records written in key order",
} as const;

/** A one-line progress display on stderr, only when it is a terminal. */
function progressLine(): { update: (text: string) => void; done: () => void } {
  if (!process.stderr.isTTY) return { update: () => undefined, done: () => undefined };
  let last = 0;
  let shown = false;
  return {
    update: (text) => {
      const now = Date.now();
      if (now - last < 100) return;
      last = now;
      shown = true;
      process.stderr.write(`\r\x1b[K${text}`);
    },
    done: () => {
      if (shown) process.stderr.write("\r\x1b[K");
    },
  };
}

export function registerEscapeCommands(program: Command): void {
  withStore(
    program
      .command("dump")
      .description("write every non-empty leaf of every tree of a batch to files, with a manifest")
      .requiredOption(
        "--out <path>",
        "output directory (created; must be empty); with --format reference a new file",
      )
      .option("--batch <n>", "batch id (default: the last signed batch, else the newest stored)")
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
    if (opts.format === "reference") {
      // Loaded only here: every other command starts without the archive code.
      const { dumpReference } = await import("../escape/reference-dump.js");
      const result = await run(
        opts,
        {},
        (store, engine) =>
          dumpReference(store, engine, {
            out: opts.out,
            batchId: batchId(opts.batch),
            subtrees: Number(opts.subtrees),
            progress: (tree, n) =>
              bar.update(`dump ${tree}: ${n} leaves, ${((Date.now() - started) / 1000).toFixed(1)} s`),
          }),
        { maxOpenFiles: DUMP_MAX_OPEN_FILES },
      );
      bar.done();
      print(result);
      return;
    }
    const manifest = await run(
      opts,
      {},
      (store, engine) =>
        dumpStore(store, engine, {
          outDir: opts.out,
          batchId: batchId(opts.batch),
          progress: (tree, n) =>
            bar.update(`dump ${tree}: ${n} leaves, ${((Date.now() - started) / 1000).toFixed(1)} s`),
        }),
      // The walk reads every table file once; few open (memory-mapped) files keep RSS bounded.
      { maxOpenFiles: DUMP_MAX_OPEN_FILES },
    );
    bar.done();
    print(manifest);
  });

  withStore(
    program
      .command("proof <object> <id>")
      .description(
        "a leaf's authentication path to its batch's root, as JSON (an empty leaf: non-membership)",
      )
      .option("--batch <n>", "batch id (default: the last signed batch, else the newest stored)"),
  ).action(async (object: string, id: string, opts: StoreOptions & { batch?: string }) => {
    print(await run(opts, {}, (store, engine) => makeProof(store, engine, object, id, batchId(opts.batch))));
  });

  program
    .command("verify-proof <file>")
    .description("check a proof from `dacd proof` against its root, with no store; exit 0 only if valid")
    .option("--root <hex>", "the root the proof must be for (e.g. from the base chain)")
    .action(async (file: string, opts: { root?: string }) => {
      let proof: Proof;
      try {
        proof = JSON.parse(await readFile(file === "-" ? "/dev/stdin" : file, "utf8")) as Proof;
      } catch (err) {
        print({ valid: false, reason: `cannot read the proof: ${(err as Error).message}` });
        process.exitCode = 1;
        return;
      }
      const engine = createEngine(process.env.DACD_HASH_ENGINE ?? "auto", {
        warn: (m) => process.stderr.write(`${m}\n`),
      });
      try {
        const verdict = await verifyProof(engine, proof, opts.root);
        print(verdict);
        process.exitCode = verdict.valid ? 0 : 1;
      } finally {
        await engine.close?.();
      }
    });

  withStore(
    program
      .command("load")
      .description(
        "build a fresh store from a dump (checked against its manifest) and continue after its batch",
      )
      .option("--from <dir>", "dump directory (from `dacd dump`)")
      .option(
        "--from-reference <file>",
        "the reference member's state archive (state.bz2 from its dump_state)",
      )
      .option("--profile <name>", "with --db and --from-reference: the store's profile (spot or spot-v4.0)")
      .option("--force", "with --from-reference: replace a non-empty store once the import succeeded"),
  ).action(async (opts: LoadCliOptions) => {
    if ((opts.from === undefined) === (opts.fromReference === undefined))
      throw new DacdError("CONFIG", "load takes one of --from DIR (a dacd dump) or --from-reference FILE");
    if (opts.fromReference !== undefined) {
      const { loadFromReference } = await import("./reference-commands.js");
      print(await loadFromReference(opts.fromReference, opts));
      return;
    }
    const bar = progressLine();
    const started = Date.now();
    const result = await run(
      opts,
      { threads: "auto" },
      (store, engine, profile) =>
        loadDump(store, engine, {
          fromDir: opts.from!,
          expectProfile: profile,
          progress: (tree, phase, n, total) =>
            bar.update(
              `load ${tree}: ${n}${total === undefined ? "" : ` of ${total}`} ${LOAD_PHASES[phase]}`,
            ),
        }),
      { writeBufferSize: BULK_LOAD_WRITE_BUFFER },
    );
    bar.done();
    print({ ...result, duration_ms: Date.now() - started });
  });

  withStore(
    program
      .command("check")
      .description("integrity: the batch chain up to the cursor; with --deep every node of the latest batch")
      .option("--deep", "re-hash every reachable node and leaf record")
      .option("--batch <ids>", "with --deep: the batches to check (comma-separated; default the newest)"),
  ).action(async (opts: StoreOptions & { deep?: boolean; batch?: string }) => {
    const bar = progressLine();
    const report = await run(opts, {}, (store, engine) =>
      checkStore(store, engine, {
        deep: opts.deep === true,
        deepBatches: batchList(opts.batch),
        progress: (id, tree, n) => bar.update(`check batch ${id} ${tree}: ${n} nodes`),
      }),
    );
    bar.done();
    print(report);
    process.exitCode = report.ok ? 0 : 1;
  });

  withStore(
    program
      .command("prune")
      .description("delete tree nodes and leaf records no longer reachable from the kept batches")
      .requiredOption("--keep-batches <k>", "keep the trees of the newest K batches")
      .option("--checkpoint <ids>", "also keep these batches (comma-separated)"),
  ).action(async (opts: StoreOptions & { keepBatches: string; checkpoint?: string }) => {
    const k = Number(opts.keepBatches);
    const report = await run(opts, {}, (store, engine) =>
      pruneStore(store, { keepBatches: k, checkpoints: batchList(opts.checkpoint), engine, compact: true }),
    );
    print(report);
    process.exitCode = report.aborted ? 1 : 0;
  });
}
