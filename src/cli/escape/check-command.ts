import type { Command } from "commander";
import type { CheckReport } from "../../maintenance/integrity-check.js";
import type { JournalComparison } from "../../service/journal-check.js";
import type { LevelStore } from "../../storage/level-store.js";
import { asStoreError } from "../../storage/store-errors.js";
import type { HashEngine } from "../../verifier/hash/engine.js";
import { checkSummary } from "../check-summary.js";
import { checkViaDaemon } from "../daemon-escape.js";
import { EXIT } from "../exit-codes.js";
import { idSummary, printJson, wantsJson } from "../output.js";
import { storeDirOf, storeOptions, type StoreOptions } from "../store-options.js";
import { batchList } from "./batch-options.js";
import { progressLine } from "./progress-line.js";
import { withStore } from "./with-store.js";

type CheckCliOptions = StoreOptions & { deep?: boolean; batch?: string; json?: boolean };

/** What the check of the store itself is asked to do. */
interface CheckRequest {
  readonly readAll: true;
  readonly deep: boolean;
  readonly deepBatches: number[] | undefined;
  readonly progress: (id: number, tree: string, n: number) => void;
}

/** The store's check report with what the comparison with the claims journal found. */
type OwnStoreReport = CheckReport & {
  claims_journal: Pick<JournalComparison, "path" | "found" | "journaled" | "lost">;
};

/** Problems shown in full in the JSON of `dacd check`; the rest are counted. */
const PROBLEMS_SHOWN = 100;

/** `dacd check`: the store's integrity, from the running daemon or the store opened read-only. */
export function registerCheckCommand(program: Command): void {
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
  ).action(async (opts: CheckCliOptions) => {
    const bar = progressLine();
    const request: CheckRequest = {
      readAll: true,
      deep: opts.deep === true,
      deepBatches: batchList(opts.batch),
      progress: (id, tree, n) => bar.update(`check batch ${id} ${tree}: ${n} nodes`),
    };
    const report =
      (await checkViaDaemon(storeDirOf(opts).dir, request.deep, request.deepBatches, request.progress)) ??
      (await withStore(opts, {}, (store, engine) => checkOwnStore(store, engine, request, opts), {
        readOnly: true,
      }));
    bar.done();
    if (wantsJson(opts.json)) printJson(summariseCheck(report));
    else process.stdout.write(checkSummary(report));
    process.exitCode = report.ok ? EXIT.OK : EXIT.INVALID;
  });
}

/** The store's check and its batch records against the claims journal (kept outside the store). */
async function checkOwnStore(
  store: LevelStore,
  engine: HashEngine,
  request: CheckRequest,
  opts: StoreOptions,
): Promise<OwnStoreReport> {
  const [{ checkStore }, { compareWithJournal }] = await Promise.all([
    import("../../maintenance/integrity-check.js"),
    import("../../service/journal-check.js"),
  ]);
  const report = await checkStore(store, engine, request).catch((err: unknown) => {
    // A damaged store is the check's finding, not a crash.
    const damaged = asStoreError(err, store.dir);
    if (!damaged) throw err;
    return { ok: false, problems: [{ problem: damaged.message }] } as unknown as CheckReport;
  });
  const journal = await compareWithJournal(store, storeDirOf(opts).journal);
  report.problems.push(...journal.problems);
  report.ok &&= journal.problems.length === 0;
  return {
    ...report,
    claims_journal: {
      path: journal.path,
      found: journal.found,
      journaled: journal.journaled,
      lost: journal.lost,
    },
  };
}

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
