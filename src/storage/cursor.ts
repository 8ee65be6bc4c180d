import type { BatchRecord, Cursor } from "./batch-record.js";

/** How many skipped batch ids the cursor remembers (the newest). */
const SKIPPED_KEPT = 100;

/**
 * Every way the member's resume point moves. BatchRepository.moveCursor is the one writer; this
 * module the one place that says where each move leads.
 */
export type CursorMove =
  /** The gateway accepted the batch's signature: the cursor passes it, the last accepted batch. */
  | { readonly kind: "accepted"; readonly record: BatchRecord; readonly at: Date }
  /** Shadow mode passed the batch, signed and never posted (poller/member/shadow.ts). */
  | { readonly kind: "shadowed"; readonly record: BatchRecord; readonly at: Date }
  /** The batch was refused and the operator moved on without it: passed unsigned, noted in `skipped`. */
  | { readonly kind: "skipped"; readonly batchId: number }
  /** A later batch builds on a skipped one: back to it, which is no longer noted as skipped. */
  | { readonly kind: "rewound"; readonly to: number }
  /** A fresh store loaded at the batch (a dump, a reference archive): just past it, as accepted. */
  | { readonly kind: "loaded"; readonly record: BatchRecord };

/**
 * The cursor after `move` from `previous`, and the batch record to write with it in the same
 * atomic write (the batch marked accepted or shadowed, or loaded), if the move has one.
 */
export function cursorAfter(
  previous: Cursor | undefined,
  move: CursorMove,
): { cursor: Cursor; record?: BatchRecord } {
  const lastAccepted = previous?.last_accepted_batch_id ?? -1;
  switch (move.kind) {
    case "accepted": {
      const id = move.record.batch_id;
      return {
        record: { ...move.record, accepted_at: move.at.toISOString() },
        cursor: {
          ...previous,
          next_batch_id: Math.max(id + 1, previous?.next_batch_id ?? 0),
          last_accepted_batch_id: Math.max(id, lastAccepted),
        },
      };
    }
    case "shadowed":
      return {
        record: { ...move.record, shadowed_at: move.at.toISOString() },
        cursor: {
          ...previous,
          next_batch_id: Math.max(move.record.batch_id + 1, previous?.next_batch_id ?? 0),
          last_accepted_batch_id: lastAccepted,
        },
      };
    case "skipped":
      return {
        cursor: {
          next_batch_id: move.batchId + 1,
          last_accepted_batch_id: lastAccepted,
          skipped: [...(previous?.skipped ?? []), move.batchId].slice(-SKIPPED_KEPT),
        },
      };
    case "rewound":
      return {
        cursor: {
          next_batch_id: move.to,
          last_accepted_batch_id: lastAccepted,
          skipped: (previous?.skipped ?? []).filter((id) => id < move.to),
        },
      };
    case "loaded":
      // A fresh store: nothing before the loaded batch counts.
      return {
        record: move.record,
        cursor: { next_batch_id: move.record.batch_id + 1, last_accepted_batch_id: move.record.batch_id },
      };
  }
}
