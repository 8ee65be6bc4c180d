/**
 * The batch records scan: the scheduled `check` job runs it before the integrity check
 * (integrity-check.ts checkStore, the one `dacd escape check` runs). It reads the batch records,
 * not the trees, in one LevelDB snapshot, so it sees one consistent state while the daemon keeps
 * signing, and checks what only a signing member's records carry. It finds:
 * - a missing batch between the first stored batch and the cursor (other than the ones the cursor
 *   records as skipped);
 * - a record stored under another id, or naming a previous batch that is not earlier;
 * - a sequence number that is not the previous batch's plus one (0 after prev_batch_id -1);
 * - a claim hash that is not the one of the record's roots and sequence number;
 * - a batch before the cursor without its acceptance time.
 * Batches before the first stored one may have been pruned; their successors' sequence numbers are
 * then not checked. The trees are not walked here.
 */
import { DacdError } from "../errors.js";
import { storeProfile } from "../inspect/inspect.js";
import { computeClaimHash } from "../signer/claim.js";
import type { BatchRecord, Cursor } from "../storage/batch-record.js";
import type { LevelStore } from "../storage/level-store.js";
import { hexToBytes32, toHex0x } from "../util/bytes.js";
import type { Roots } from "../verifier/trees/update/compute-roots.js";
import type { TreeName } from "../model/profile.js";
import { yieldToEventLoop } from "../util/yield.js";

export interface RecordsScan {
  batches: number;
  first_batch_id: number | null;
  last_batch_id: number | null;
  next_batch_id: number;
  /** Batches whose sequence number could not be checked because their predecessor was pruned. */
  unchecked_sequence: number;
  problems: string[];
}

export interface RecordsScanOptions {
  signal?: AbortSignal;
  /** Records handled between two yields to the event loop. */
  chunk?: number;
  /** Problems listed at most (the count is still exact in the error). */
  maxProblems?: number;
}

/** Scans the store; never throws for problems found (see `problems`), only for an unreadable store. */
export async function scanBatchRecords(
  store: LevelStore,
  opts: RecordsScanOptions = {},
): Promise<RecordsScan> {
  const chunk = opts.chunk ?? 500;
  const maxProblems = opts.maxProblems ?? 50;
  const { profile } = await storeProfile(store);
  const snapshot = store.snapshot();
  const problems: string[] = [];
  let problemCount = 0;
  const problem = (m: string): void => {
    if (problemCount++ < maxProblems) problems.push(m);
  };
  try {
    const cursor: Cursor = (await snapshot.getCursor()) ?? { next_batch_id: 0, last_accepted_batch_id: -1 };
    const skipped = new Set(cursor.skipped ?? []);
    const sequence = new Map<number, number>();
    let first: number | undefined;
    let last: number | undefined;
    let count = 0;
    let unchecked = 0;
    for await (const entries of snapshot.batches.chunks(chunk)) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      for (const { id, record } of entries) {
        count++;
        if (first === undefined) first = id;
        else {
          for (let gap = (last ?? id) + 1; gap < id && gap < cursor.next_batch_id; gap++) {
            if (!skipped.has(gap)) problem(`batch ${gap} is missing (between ${last} and ${id})`);
          }
        }
        last = id;
        if (record === undefined) problem(`batch ${id}: the record is not valid JSON`);
        else checkRecord(id, record);
      }
      await yieldToEventLoop();
    }
    if (first !== undefined && last !== undefined) {
      for (let gap = last + 1; gap < cursor.next_batch_id; gap++) {
        if (!skipped.has(gap)) problem(`batch ${gap} is missing (the cursor is at ${cursor.next_batch_id})`);
      }
    } else if (cursor.last_accepted_batch_id >= 0) {
      problem(`the cursor names batch ${cursor.last_accepted_batch_id} as accepted but no batch is stored`);
    }
    if (problemCount > maxProblems) problems.push(`… and ${problemCount - maxProblems} more problems`);
    return {
      batches: count,
      first_batch_id: first ?? null,
      last_batch_id: last ?? null,
      next_batch_id: cursor.next_batch_id,
      unchecked_sequence: unchecked,
      problems,
    };

    function checkRecord(id: number, record: BatchRecord): void {
      if (record.batch_id !== id) {
        problem(`batch ${id}: the record stored under this id is batch ${record.batch_id}`);
        return;
      }
      if (!(record.prev_batch_id < id) || !Number.isSafeInteger(record.prev_batch_id)) {
        problem(`batch ${id}: prev_batch_id ${record.prev_batch_id} is not an earlier batch`);
      } else if (record.prev_batch_id === -1) {
        if (record.sequence_number !== 0)
          problem(`batch ${id}: sequence number ${record.sequence_number} after prev_batch_id -1 (want 0)`);
      } else {
        const prevSeq = sequence.get(record.prev_batch_id);
        if (prevSeq === undefined) {
          if (first !== undefined && record.prev_batch_id >= first)
            problem(`batch ${id}: previous batch ${record.prev_batch_id} is not stored`);
          else unchecked++;
        } else if (record.sequence_number !== prevSeq + 1) {
          problem(
            `batch ${id}: sequence number ${record.sequence_number} after batch ${record.prev_batch_id}'s ${prevSeq}`,
          );
        }
      }
      sequence.set(id, record.sequence_number);
      if (id < cursor.next_batch_id && !record.accepted_at)
        problem(`batch ${id}: before the cursor (${cursor.next_batch_id}) but never accepted`);
      const roots: Roots = {};
      for (const [name, hex] of Object.entries(record.roots ?? {})) {
        const bytes = hexToBytes32(hex);
        if (!bytes) {
          problem(`batch ${id}: the ${name} root is malformed`);
          return;
        }
        roots[name as TreeName] = bytes;
      }
      let claim: string;
      try {
        claim = toHex0x(computeClaimHash(profile, roots, record.sequence_number));
      } catch (err) {
        problem(`batch ${id}: no claim can be computed (${(err as Error).message})`);
        return;
      }
      if (claim !== record.claim_hash)
        problem(`batch ${id}: claim hash ${record.claim_hash} is not that of its roots (${claim})`);
    }
  } finally {
    await snapshot.close();
  }
}

/** The check as a job: throws DacdError("STORE") listing what is wrong. */
export async function checkJob(store: LevelStore, signal: AbortSignal): Promise<Record<string, unknown>> {
  const result = await scanBatchRecords(store, { signal });
  const { problems, ...facts } = result;
  if (problems.length > 0) {
    throw new DacdError(
      "STORE",
      `consistency check found ${problems.length} problem(s): ${problems.slice(0, 5).join("; ")}`,
    );
  }
  return facts;
}
