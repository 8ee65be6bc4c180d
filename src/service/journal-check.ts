/**
 * `dacd check`'s comparison of the store with the claims journal: every batch the member journaled
 * (so may have posted) must be in the store with the same claim, unless it lies before the first
 * stored batch (pruned, or before a store loaded from a dump).
 */
import { readClaimsJournal } from "../storage/claims-journal.js";
import type { LevelStore } from "../storage/level-store.js";

export interface JournalComparison {
  path: string;
  /** False when there is no journal file at `path` (a member that never ran with one). */
  found: boolean;
  journaled: number;
  /** Journaled batch ids at or after the first stored batch that the store does not hold. */
  lost: number[];
  problems: { batch_id: number; problem: string }[];
}

export async function compareWithJournal(store: LevelStore, path: string): Promise<JournalComparison> {
  const journal = await readClaimsJournal(path);
  const out: JournalComparison = {
    path,
    found: journal !== undefined,
    journaled: journal?.size ?? 0,
    lost: [],
    problems: [],
  };
  if (!journal) return out;
  const stored = new Map<number, string>();
  for await (const r of store.batches.records()) stored.set(r.batch_id, r.claim_hash);
  let first: number | undefined;
  for (const id of stored.keys()) first = first === undefined ? id : Math.min(first, id);
  for (const [id, claim] of [...journal].sort((a, b) => a[0] - b[0])) {
    const have = stored.get(id);
    if (have === undefined) {
      if (first !== undefined && id < first) continue;
      out.lost.push(id);
      out.problems.push({
        batch_id: id,
        problem: `signed with claim ${claim} (claims journal) but lost by the store: restore the newest backup, or let the member sign it again (only the same claim will be signed)`,
      });
    } else if (have !== claim) {
      out.problems.push({
        batch_id: id,
        problem: `the store's claim ${have} differs from the journaled ${claim}: this store is not the one this member signed from`,
      });
    }
  }
  return out;
}
