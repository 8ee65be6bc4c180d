import { join } from "node:path";
import type { Command } from "commander";
import { DacdError } from "../../errors.js";
import { printJson } from "../output.js";
import { storeDirOf, storeOptions, type StoreOptions } from "../store-options.js";
import { progressLine } from "./progress-line.js";
import { withStore } from "./with-store.js";

type LoadCliOptions = StoreOptions & {
  from?: string;
  fromReference?: string;
  profile?: string;
  force?: boolean;
  batch?: string;
  batchInfo?: string;
};

/** What a load's progress line counts in each phase. */
const LOAD_PHASES = {
  leaves: "leaves",
  tree: "nodes",
  writing: "records written in key order",
} as const;

/** `dacd load`: a fresh store from a dacd dump or from the reference member's archive. */
export function registerLoadCommand(program: Command): void {
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
    checkLoadSource(opts);
    if (opts.fromReference !== undefined) {
      const { loadFromReference } = await import("../reference-commands.js");
      printJson(await loadFromReference(opts.fromReference, opts));
      return;
    }
    printJson(await loadDacdDump(opts, opts.from!));
  });
}

/** Exactly one source, and the reference archive's options only with it. */
function checkLoadSource(opts: LoadCliOptions): void {
  if ((opts.from === undefined) === (opts.fromReference === undefined))
    throw new DacdError("CONFIG", "load takes one of --from DIR (a dacd dump) or --from-reference FILE");
  if (opts.from !== undefined && (opts.batch !== undefined || opts.batchInfo !== undefined))
    throw new DacdError(
      "USAGE",
      "--batch and --batch-info go with --from-reference (a dump names its batch)",
    );
}

/** Loads a dacd dump into the store, then joins the dump's claims journal to this member's. */
async function loadDacdDump(opts: LoadCliOptions, fromDir: string): Promise<Record<string, unknown>> {
  const bar = progressLine();
  const started = Date.now();
  const [{ loadDump }, { BULK_LOAD_WRITE_BUFFER }] = await Promise.all([
    import("../../escape/load.js"),
    import("../../storage/bulk-writer.js"),
  ]);
  const result = await withStore(
    opts,
    { threads: "auto" },
    (store, engine, profile) =>
      loadDump(store, engine, {
        fromDir,
        expectProfile: profile,
        progress: (tree, phase, n, total) =>
          bar.update(`load ${tree}: ${n}${total === undefined ? "" : ` of ${total}`} ${LOAD_PHASES[phase]}`),
      }),
    { writeBufferSize: BULK_LOAD_WRITE_BUFFER },
  );
  bar.done();
  // A dump's claims journal joins this member's: what was signed before stays signed only so.
  const imported = await mergeJournal(join(fromDir, "claims.journal"), storeDirOf(opts).journal);
  return { ...result, claims_imported: imported, duration_ms: Date.now() - started };
}

/** Adds the claims of the journal at `from` (if any) to the journal at `to`; refuses conflicting ones. */
async function mergeJournal(from: string, to: string): Promise<number> {
  const { ClaimsJournal, readClaimsJournalEntries } = await import("../../storage/claims-journal.js");
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
