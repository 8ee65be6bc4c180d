import type { Command } from "commander";
import { DacdError } from "../../errors.js";
import { EXIT } from "../exit-codes.js";
import { idSummary, printJson } from "../output.js";
import { storeOptions, type StoreOptions } from "../store-options.js";
import { batchList } from "./batch-options.js";
import { withStore } from "./with-store.js";

type PruneCliOptions = StoreOptions & { keepBatches: string; checkpoint?: string };

/** `dacd prune`: deletes what the kept batches no longer reach. */
export function registerPruneCommand(program: Command): void {
  storeOptions(
    program
      .command("prune")
      .description("delete tree nodes and leaf records no longer reachable from the kept batches")
      .requiredOption("--keep-batches <k>", "keep the trees of the newest K batches")
      .option("--checkpoint <ids>", "also keep these batches (comma-separated)"),
  ).action(async (opts: PruneCliOptions) => {
    const keepBatches = parseKeepBatches(opts.keepBatches);
    const checkpoints = batchList(opts.checkpoint);
    const { pruneStore } = await import("../../maintenance/prune.js");
    const report = await withStore(opts, {}, (store, engine) =>
      pruneStore(store, { keepBatches, checkpoints, engine, compact: true }),
    );
    printJson({
      ...report,
      kept_batches: idSummary(report.kept_batches),
      pruned_batches: idSummary(report.pruned_batches),
    });
    process.exitCode = report.aborted ? EXIT.INVALID : EXIT.OK;
  });
}

function parseKeepBatches(text: string): number {
  if (!/^[1-9][0-9]*$/.test(text))
    throw new DacdError("USAGE", `--keep-batches must be a positive integer, got ${JSON.stringify(text)}`);
  return Number(text);
}
