/** What the batcher needs from a variant's state machine. */
import type { LeafChanges, TreeName } from "../shared.js";
import { ApplyError, type Journal } from "./tables.js";

export interface StateMachine<T> {
  /** Parses and validates a submitted transaction; throws TxError naming the field. */
  parse(raw: unknown): T;
  /** Applies a parsed transaction all-or-nothing, noting touched rows in `journal`; throws ApplyError. */
  apply(tx: T, journal: Journal, nowMs: number): void;
  /** The changed leaves of every tree, for the rows touched under `journal`. */
  changes(journal: Journal): Partial<Record<TreeName, LeafChanges>>;
  /** The alternative transaction recorded in `alt_txs` when `raw` could not be applied. */
  alternative(raw: unknown, reason: string): unknown;
}

/** Expiration timestamps count hours since the Unix epoch (as the native gateways do). */
export function checkExpiration(expiration: number, nowMs: number, what: string): void {
  const nowHours = Math.floor(nowMs / 3_600_000);
  if (expiration < nowHours)
    throw new ApplyError(`${what} expired (expiration_timestamp ${expiration} < ${nowHours} hours)`);
}
