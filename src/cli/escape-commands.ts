import { copyFile, readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Command } from "commander";
import { DacdError } from "../errors.js";
import { checkStore, type CheckReport } from "../maintenance/integrity-check.js";
import { asStoreError } from "../storage/store-errors.js";
import { DUMP_MAX_OPEN_FILES, dumpStore } from "../escape/dump.js";
import { loadDump } from "../escape/load.js";
import { makeProof, verifyProof, type Proof } from "../escape/proof.js";
import { isOnchainFormat, verifyOnchainProof } from "../escape/onchain/check.js";
import { pruneStore } from "../maintenance/prune.js";
import { BULK_LOAD_WRITE_BUFFER } from "../storage/bulk-writer.js";
import type { LevelStore, LevelTuning } from "../storage/level-store.js";
import { ClaimsJournal, readClaimsJournalEntries } from "../storage/claims-journal.js";
import { compareWithJournal } from "../service/journal-check.js";
import type { HashEngine } from "../verifier/hash/engine.js";
import type { CreateEngineOptions } from "../verifier/hash/select.js";
import { checkSummary } from "./check-summary.js";
import {
  checkViaDaemon,
  dumpReferenceViaDaemon,
  dumpViaDaemon,
  kitViaDaemon,
  proofViaDaemon,
} from "./daemon-escape.js";
import { loadConfigFor } from "./config-path.js";
import { EXIT } from "./exit-codes.js";
import { idSummary, printJson, wantsJson } from "./output.js";
import {
  openStoreAt,
  parseBatchId,
  parseLeafId,
  parseLeafObject,
  storeDirOf,
  storeOptions,
  type StoreOptions,
} from "./store-options.js";
import { commandEngine } from "./command-engine.js";

/**
 * Escape and maintenance commands on the member's own store (docs/escape.md): dump, proof,
 * verify-proof, escape-kit, load, check, prune. While `dacd run` runs, dump, proof, escape-kit and
 * check ask it over its
 * control socket (daemon-escape.ts); otherwise, and for load and prune, they open the store directly
 * (LevelDB admits one process; the daemon itself runs pruneStore in-process). dump, proof and check
 * only read: the store must exist and is not changed. Exit statuses: exit-codes.ts.
 */

type DumpCliOptions = StoreOptions & { out: string; batch?: string; format: string; subtrees: string };
type LoadCliOptions = StoreOptions & {
  from?: string;
  fromReference?: string;
  profile?: string;
  force?: boolean;
  batch?: string;
  batchInfo?: string;
};

function batchId(v: string | undefined): number | undefined {
  return v === undefined ? undefined : parseBatchId(v);
}

function batchList(v: string | undefined): number[] | undefined {
  return v === undefined ? undefined : v.split(",").map((s) => parseBatchId(s.trim()));
}

async function run<T>(
  opts: StoreOptions,
  engineOpts: CreateEngineOptions,
  fn: (store: LevelStore, engine: HashEngine, profile: string | undefined) => Promise<T>,
  storeOpts: LevelTuning & { readOnly?: boolean } = {},
): Promise<T> {
  const { dir, profile } = storeDirOf(opts);
  const engine = commandEngine({
    ...engineOpts,
  });
  let store: LevelStore;
  try {
    store = await openStoreAt(dir, storeOpts);
  } catch (err) {
    await engine.close?.();
    throw err;
  }
  try {
    return await fn(store, engine, profile);
  } finally {
    await store.close();
    await engine.close?.();
  }
}

const print = printJson;

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

/** What the escape commands' --batch defaults to (escape/common.ts, resolveBatch). */
const DEFAULT_BATCH_HELP =
  "batch id (default: the frozen batch once the exchange is frozen, else the newest verified: accepted, or verified in shadow mode)";

export function registerEscapeCommands(program: Command): void {
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
    if (opts.format === "reference") {
      const subtrees = Number(opts.subtrees);
      const progress = (file: string, n: number, what: string): void =>
        bar.update(`dump ${file}: ${n} ${what}, ${((Date.now() - started) / 1000).toFixed(1)} s`);
      const viaDaemonRef = await dumpReferenceViaDaemon(
        storeDirOf(opts).dir,
        opts.out,
        batch,
        subtrees,
        (f, n) => progress(f, n, "bytes"),
      );
      const { dumpReference } = await import("../escape/reference-dump.js");
      const result =
        viaDaemonRef ??
        (await run(
          opts,
          {},
          (store, engine) =>
            dumpReference(store, engine, {
              out: opts.out,
              batchId: batch,
              subtrees,
              progress: (tree, n) => progress(tree, n, "leaves"),
            }),
          { maxOpenFiles: DUMP_MAX_OPEN_FILES, readOnly: true },
        ));
      bar.done();
      print(result);
      return;
    }
    const viaDaemon = await dumpViaDaemon(storeDirOf(opts).dir, opts.out, batch, (file, bytes) =>
      bar.update(`dump ${file}: ${bytes} bytes, ${((Date.now() - started) / 1000).toFixed(1)} s`),
    );
    const manifest =
      viaDaemon ??
      (await run(
        opts,
        {},
        (store, engine) =>
          dumpStore(store, engine, {
            outDir: opts.out,
            batchId: batch,
            progress: (tree, n) =>
              bar.update(`dump ${tree}: ${n} leaves, ${((Date.now() - started) / 1000).toFixed(1)} s`),
          }),
        // The walk reads every table file once; few open (memory-mapped) files keep RSS bounded.
        { maxOpenFiles: DUMP_MAX_OPEN_FILES, readOnly: true },
      ));
    bar.done();
    // The dump carries the member's claims journal, for a store rebuilt from it (`dacd load`).
    await copyFile(storeDirOf(opts).journal, join(opts.out, "claims.journal")).catch((err: unknown) => {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    });
    print(manifest);
  });

  storeOptions(
    program
      .command("proof <object> <id>")
      .description(
        "a leaf's authentication path to its batch's root, as JSON (an empty leaf: non-membership)",
      )
      .option("--batch <n>", DEFAULT_BATCH_HELP)
      .option(
        "--format <format>",
        "dacd (dacd-proof/1) or starkex (the words and call data the base chain's escape verifier takes; vault or position)",
        "dacd",
      ),
  ).action(
    async (objectArg: string, idArg: string, opts: StoreOptions & { batch?: string; format: string }) => {
      const object = parseLeafObject(objectArg);
      const id = parseLeafId(idArg);
      const batch = batchId(opts.batch);
      const format = proofFormat(opts.format, object);
      if (format === "starkex") {
        // Loaded only here: the ABI encoder is not needed by any other command.
        const { makeOnchainProof } = await import("../escape/onchain/from-proof.js");
        print(
          (await proofViaDaemon(storeDirOf(opts).dir, object, id, batch, format)) ??
            (await run(opts, {}, (store, engine) => makeOnchainProof(store, engine, object, id, batch), {
              readOnly: true,
            })),
        );
        return;
      }
      print(
        (await proofViaDaemon(storeDirOf(opts).dir, object, id, batch)) ??
          (await run(opts, {}, (store, engine) => makeProof(store, engine, object, id, batch), {
            readOnly: true,
          })),
      );
    },
  );

  storeOptions(
    program
      .command("escape-kit")
      .description(
        "every non-empty vault (spot) or position (perpetual) as its on-chain escape proof, one JSON file each, with the escape page and a manifest, for any static host",
      )
      .requiredOption("--out <dir>", "output directory (created; must be absent or empty)")
      .option("--batch <n>", DEFAULT_BATCH_HELP),
  ).action(async (opts: StoreOptions & { out: string; batch?: string }) => {
    const batch = batchId(opts.batch);
    const bar = progressLine();
    const started = Date.now();
    const contracts = opts.db === undefined ? loadConfigFor(opts.config).escapeContracts : undefined;
    // Loaded only here: the kit's encoder and the ABI code are not needed by any other command.
    const { buildKit } = await import("../escape/kit/build.js");
    const { storePaths } = await import("../escape/kit/source.js");
    const kitOptions = {
      out: opts.out,
      contracts,
      progress: (n: number) =>
        bar.update(`escape kit: ${n} proofs, ${((Date.now() - started) / 1000).toFixed(1)} s`),
    };
    // Beside a running daemon this process builds the proofs from the paths the daemon walks.
    let engine: HashEngine | undefined;
    try {
      const manifest =
        (await kitViaDaemon(storeDirOf(opts).dir, batch, (source) => {
          engine = commandEngine();
          return buildKit(engine, source, kitOptions);
        })) ??
        (await run(
          opts,
          {},
          async (store, storeEngine) =>
            buildKit(storeEngine, await storePaths(store, storeEngine, batch), kitOptions),
          { maxOpenFiles: DUMP_MAX_OPEN_FILES, readOnly: true },
        ));
      bar.done();
      const { shards: _, ...summary } = manifest;
      print({ ...summary, out: opts.out, duration_ms: Date.now() - started });
    } finally {
      await engine?.close?.();
    }
  });

  program
    .command("verify-proof <file>")
    .description(
      "check a proof from `dacd proof` (either format) against its root, with no store; exit 0 valid, 1 invalid, 2 unreadable",
    )
    .option("--root <hex>", "the root the proof must be for (e.g. from the base chain)")
    .action(async (file: string, opts: { root?: string }) => {
      let proof: Proof;
      try {
        proof = JSON.parse(await readFile(file === "-" ? "/dev/stdin" : file, "utf8")) as Proof;
      } catch (err) {
        // Not a verdict on the proof: the command could not run.
        throw new DacdError("STORE", `cannot read the proof ${file}: ${(err as Error).message}`);
      }
      const engine = commandEngine();
      try {
        const verdict = isOnchainFormat(proof)
          ? await verifyOnchainProof(engine, proof, opts.root)
          : await verifyProof(engine, proof, opts.root);
        print(verdict);
        process.exitCode = verdict.valid ? EXIT.OK : EXIT.INVALID;
      } finally {
        await engine.close?.();
      }
    });

  storeOptions(
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
      .option("--force", "with --from-reference: replace a non-empty store once the import succeeded")
      .option(
        "--batch <n>",
        "with --from-reference: the archive's batch (an archive without info.json, as the reference member writes)",
      )
      .option(
        "--batch-info <file>",
        "with --batch: a JSON file of the batch's merkle_roots and sequence_number (else asked of the gateways of --config)",
      ),
  ).action(async (opts: LoadCliOptions) => {
    if ((opts.from === undefined) === (opts.fromReference === undefined))
      throw new DacdError("CONFIG", "load takes one of --from DIR (a dacd dump) or --from-reference FILE");
    if (opts.from !== undefined && (opts.batch !== undefined || opts.batchInfo !== undefined))
      throw new DacdError(
        "USAGE",
        "--batch and --batch-info go with --from-reference (a dump names its batch)",
      );
    if (opts.fromReference !== undefined) {
      const { loadFromReference } = await import("./reference-commands.js");
      print(await loadFromReference(opts.fromReference, opts));
      return;
    }
    const fromDir = opts.from!;
    const bar = progressLine();
    const started = Date.now();
    const result = await run(
      opts,
      { threads: "auto" },
      (store, engine, profile) =>
        loadDump(store, engine, {
          fromDir,
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
    const imported = await mergeJournal(join(fromDir, "claims.journal"), storeDirOf(opts).journal);
    print({ ...result, claims_imported: imported, duration_ms: Date.now() - started });
  });

  storeOptions(
    program
      .command("check")
      .description(
        "integrity: the batch chain up to the cursor; with --deep every node of the latest batch; exit 0 consistent, 1 not, 2 could not run",
      )
      .option("--deep", "re-hash every reachable node and leaf record")
      .option("--batch <ids>", "with --deep: the batches to check (comma-separated; default the newest)")
      .option("--json", "JSON even on a terminal")
      .option("--no-json", "the summary even when not on a terminal"),
  ).action(async (opts: StoreOptions & { deep?: boolean; batch?: string; json?: boolean }) => {
    const bar = progressLine();
    const progress = (id: number, tree: string, n: number): void =>
      bar.update(`check batch ${id} ${tree}: ${n} nodes`);
    const deepBatches = batchList(opts.batch);
    const report =
      (await checkViaDaemon(storeDirOf(opts).dir, opts.deep === true, deepBatches, progress)) ??
      (await run(
        opts,
        {},
        async (store, engine) => {
          const r = await checkStore(store, engine, {
            deep: opts.deep === true,
            deepBatches,
            progress,
          }).catch((err: unknown) => {
            // A damaged store is the check's finding, not a crash.
            const damaged = asStoreError(err, store.dir);
            if (!damaged) throw err;
            return { ok: false, problems: [{ problem: damaged.message }] } as unknown as CheckReport;
          });
          // The store's batch records against the claims journal (kept outside the store).
          const journal = await compareWithJournal(store, storeDirOf(opts).journal);
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
        },
        { readOnly: true },
      ));
    bar.done();
    if (wantsJson(opts.json)) print(summariseCheck(report));
    else process.stdout.write(checkSummary(report));
    process.exitCode = report.ok ? EXIT.OK : EXIT.INVALID;
  });

  storeOptions(
    program
      .command("prune")
      .description("delete tree nodes and leaf records no longer reachable from the kept batches")
      .requiredOption("--keep-batches <k>", "keep the trees of the newest K batches")
      .option("--checkpoint <ids>", "also keep these batches (comma-separated)"),
  ).action(async (opts: StoreOptions & { keepBatches: string; checkpoint?: string }) => {
    if (!/^[1-9][0-9]*$/.test(opts.keepBatches))
      throw new DacdError(
        "USAGE",
        `--keep-batches must be a positive integer, got ${JSON.stringify(opts.keepBatches)}`,
      );
    const k = Number(opts.keepBatches);
    const checkpoints = batchList(opts.checkpoint);
    const report = await run(opts, {}, (store, engine) =>
      pruneStore(store, { keepBatches: k, checkpoints, engine, compact: true }),
    );
    print({
      ...report,
      kept_batches: idSummary(report.kept_batches),
      pruned_batches: idSummary(report.pruned_batches),
    });
    process.exitCode = report.aborted ? EXIT.INVALID : EXIT.OK;
  });
}

/** `dacd proof --format`: starkex only for the objects the base chain's escape verifiers take. */
function proofFormat(format: string, object: string): "dacd" | "starkex" {
  if (format !== "dacd" && format !== "starkex")
    throw new DacdError("USAGE", `--format ${JSON.stringify(format)}: dacd or starkex`);
  if (format === "starkex" && !["vault", "vaults", "position", "positions"].includes(object))
    throw new DacdError(
      "USAGE",
      `--format starkex: ${object} has no on-chain escape; only vault (spot profiles) and position (perpetual) do`,
    );
  return format;
}

/** Problems shown in full in the JSON of `dacd check`; the rest are counted. */
const PROBLEMS_SHOWN = 100;

/** The check report with its batch id lists as ranges and at most PROBLEMS_SHOWN problems. */
function summariseCheck(report: CheckReport): Record<string, unknown> {
  return {
    ...report,
    skipped: idSummary(report.skipped),
    pruned: idSummary(report.pruned),
    loaded_from_dump: idSummary(report.loaded_from_dump),
    problem_count: report.problems.length,
    problems: report.problems.slice(0, PROBLEMS_SHOWN),
  };
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
