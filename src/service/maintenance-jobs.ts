/**
 * The scheduled `check` and `prune` jobs, on top of src/maintenance's integrity check and pruning.
 * Kept apart from operations.ts so that the job runner does not depend on them: without this
 * module the check job falls back to the batch records scan (records-check.ts) and pruning is
 * refused.
 */
import { DacdError } from "../errors.js";
import { checkStore } from "../maintenance/integrity-check.js";
import { pruneStore } from "../maintenance/prune.js";
import type { LevelStore } from "../storage/level-store.js";
import type { HashEngine } from "../verifier/hash/engine.js";
import { checkJob } from "../maintenance/records-check.js";
import type { JobImplementations } from "./operations.js";

/** `engine()` gives the daemon's engine without metric counting (the check re-hashes nodes). */
export function escapeJobs(engine: () => HashEngine): JobImplementations {
  return {
    check: async (store: LevelStore, signal: AbortSignal) => {
      // The batch records scan (claims, cursor, snapshot-consistent) first, then the integrity
      // check with the deep check of the newest batch's trees: every reachable node present and
      // hashing to its key.
      const light = await checkJob(store, signal);
      if (signal.aborted) throw signal.reason;
      const report = await checkStore(store, engine(), { deep: true });
      if (!report.ok) {
        const shown = report.problems
          .slice(0, 5)
          .map((p) =>
            [p.batch_id !== undefined ? `batch ${p.batch_id}` : "", p.tree ?? "", p.problem]
              .filter(Boolean)
              .join(" "),
          );
        throw new DacdError(
          "STORE",
          `integrity check found ${report.problems.length} problem(s): ${shown.join("; ")}`,
        );
      }
      return { ...light, deep: report.deep, pruned: report.pruned.length };
    },
    prune: async (store: LevelStore, keepBatches: number, signal: AbortSignal) => {
      const report = await pruneStore(store, { keepBatches, signal, engine: engine() });
      if (report.aborted) throw new DacdError("STORE", `pruning stopped: ${report.aborted}`);
      return {
        kept_batches: report.kept_batches.length,
        nodes_deleted: report.nodes_deleted,
        leaves_deleted: report.leaves_deleted,
        protected_kept: report.protected_kept,
      };
    },
  };
}
