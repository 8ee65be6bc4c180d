/**
 * The daemon's claims journal: opened at start from `claims_journal_path` (default beside data_dir),
 * and brought up to date with the store's batch records, so that a store from before the journal,
 * or a journal started afresh, holds every claim the store knows of.
 */
import { DacdError } from "../errors.js";
import type { Logger } from "../logging.js";
import { ClaimsJournal, CONFLICT_ADVICE, type JournalEntry } from "./claims-journal.js";
import type { LevelStore } from "./level-store.js";
import { claimsJournalPathOf } from "./claims-journal-path.js";

export { claimsJournalPathOf };

export async function openMemberJournal(
  config: { dataDir: string; claimsJournalPath?: string },
  store: LevelStore,
  opts: { log: Logger; onConflict?: () => void },
): Promise<ClaimsJournal> {
  const path = claimsJournalPathOf(config);
  const journal = await ClaimsJournal.open(path, {
    onConflict: (batchId, journaled, offered) => {
      opts.onConflict?.();
      opts.log.error(
        { batch_id: batchId, journaled_claim: journaled, offered_claim: offered, code: "CONFLICTING_CLAIM" },
        `batch ${batchId}: refusing a second claim; ${CONFLICT_ADVICE}`,
      );
    },
  });
  try {
    if (journal.tornTail)
      opts.log.warn(
        { path },
        "the claims journal ended in a torn record (a crash mid-append); it was cut off",
      );
    const { added, conflicts } = await journal.importMissing(storeClaims(store));
    if (added > 0) opts.log.info({ path, added }, "claims of stored batches added to the claims journal");
    if (conflicts.length > 0) {
      for (let i = 0; i < conflicts.length; i++) opts.onConflict?.();
      throw new DacdError(
        "CONFLICTING_CLAIM",
        `the store holds batches ${conflicts.slice(0, 10).join(", ")} with claims other than those in the claims journal ${path}: ` +
          "this store is not the one this member signed from (another member's, or a rebuilt one); restore this member's own backup",
      );
    }
    if (journal.size > 0) {
      const last = journal.ids().at(-1)!;
      const stored = await store.lastBatchId();
      if (stored === undefined || stored < last)
        opts.log.warn(
          { path, journaled_last: last, stored_last: stored ?? null },
          `the store has lost batches up to ${last} that this member signed (see \`dacd check\`); ` +
            "they will only be signed again with the journaled claims",
        );
    }
  } catch (err) {
    await journal.close();
    throw err;
  }
  return journal;
}

async function* storeClaims(store: LevelStore): AsyncGenerator<JournalEntry> {
  for await (const r of store.batches.records()) {
    yield {
      batch_id: r.batch_id,
      claim_hash: r.claim_hash,
      signature: r.signature,
      member_key: r.member_key,
    };
  }
}
