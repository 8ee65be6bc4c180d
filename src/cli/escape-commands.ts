import { copyFile, readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Command } from "commander";
import { loadConfig } from "../config/config.js";
import { DacdError } from "../errors.js";
import { checkStore, type CheckReport } from "../escape/check.js";
import { asStoreError } from "../storage/store-errors.js";
import { dumpStore } from "../escape/dump.js";
import { loadDump } from "../escape/load.js";
import { makeProof, verifyProof, type Proof } from "../escape/proof.js";
import { pruneStore } from "../escape/prune.js";
import { BULK_LOAD_WRITE_BUFFER } from "../storage/bulk-writer.js";
import { LevelStore, type LevelTuning } from "../storage/level-store.js";
import { ClaimsJournal, readClaimsJournalEntries } from "../storage/claims-journal.js";
import { claimsJournalPathOf } from "../storage/member-journal.js";
import { compareWithJournal } from "../ops/journal-check.js";
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

function storeDir(opts: StoreOptions): { dir: string; profile?: string; journal: string } {
  if (opts.db) return { dir: opts.db, journal: claimsJournalPathOf({ dataDir: opts.db }) };
  if (opts.config) {
    const config = loadConfig(opts.config);
    return { dir: config.dataDir, profile: config.profile, journal: claimsJournalPathOf(config) };
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
      .requiredOption("--out <dir>", "output directory (created; must be empty)")
      .option("--batch <n>", "batch id (default: the last signed batch, else the newest stored)"),
  ).action(async (opts: StoreOptions & { out: string; batch?: string }) => {
    const bar = progressLine();
    const started = Date.now();
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
    // The dump carries the member's claims journal, for a store rebuilt from it (`dacd load`).
    await copyFile(storeDir(opts).journal, join(opts.out, "claims.journal")).catch((err: unknown) => {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    });
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
      .requiredOption("--from <dir>", "dump directory (from `dacd dump`)"),
  ).action(async (opts: StoreOptions & { from: string }) => {
    const bar = progressLine();
    const started = Date.now();
    const result = await run(
      opts,
      { threads: "auto" },
      (store, engine, profile) =>
        loadDump(store, engine, {
          fromDir: opts.from,
          expectProfile: profile,
          progress: (tree, phase, n, total) =>
            bar.update(
              `load ${tree}: ${n}${total === undefined ? "" : ` of ${total}`} ${LOAD_PHASES[phase]}`,
            ),
        }),
      { writeBufferSize: BULK_LOAD_WRITE_BUFFER },
    );
    bar.done();
    // A dump's claims journal joins this member's: what was signed before stays signed only so.
    const fromJournal = join(opts.from, "claims.journal");
    const imported = await mergeJournal(fromJournal, storeDir(opts).journal);
    print({ ...result, claims_imported: imported, duration_ms: Date.now() - started });
  });

  withStore(
    program
      .command("check")
      .description("integrity: the batch chain up to the cursor; with --deep every node of the latest batch")
      .option("--deep", "re-hash every reachable node and leaf record")
      .option("--batch <ids>", "with --deep: the batches to check (comma-separated; default the newest)"),
  ).action(async (opts: StoreOptions & { deep?: boolean; batch?: string }) => {
    const bar = progressLine();
    const report = await run(opts, {}, async (store, engine) => {
      const r = await checkStore(store, engine, {
        deep: opts.deep === true,
        deepBatches: batchList(opts.batch),
        progress: (id, tree, n) => bar.update(`check batch ${id} ${tree}: ${n} nodes`),
      }).catch((err: unknown) => {
        // A damaged store is the check's finding, not a crash.
        const damaged = asStoreError(err, store.dir);
        if (!damaged) throw err;
        return { ok: false, problems: [{ problem: damaged.message }] } as unknown as CheckReport;
      });
      const journal = await compareWithJournal(store, storeDir(opts).journal);
      r.problems.push(...journal.problems);
      r.ok &&= journal.problems.length === 0;
      return {
        ...r,
        claims_journal: {
          path: journal.path,
          found: journal.found,
          journaled: journal.journaled,
          lost: journal.lost,
        },
      };
    });
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

/** Adds the claims of the journal at `from` (if any) to the journal at `to`; refuses conflicting ones. */
async function mergeJournal(from: string, to: string): Promise<number> {
  const source = await readClaimsJournalEntries(from);
  if (source.length === 0) return 0;
  const journal = await ClaimsJournal.open(to);
  try {
    const { added, conflicts } = await journal.importMissing(source);
    if (conflicts.length > 0)
      throw new DacdError(
        "CONFLICTING_CLAIM",
        `the dump's claims journal ${from} and this member's ${to} disagree on batches ${conflicts.slice(0, 10).join(", ")}`,
      );
    return added;
  } finally {
    await journal.close();
  }
}
