import type { DacdError } from "../../errors.js";
import type { BatchRecord } from "../../storage/batch-record.js";
import type { VerifyDetail } from "../../verifier/verify-batch.js";
import type { BatchTimes } from "./prefetch.js";

/**
 * What the run loop reports, for the metrics (service/metrics/batch-metrics.ts), the base-chain
 * watch and tests; every hook optional, each called with what it names and returning nothing. A
 * new hook needs no other change to reach every listener: mergeMemberEvents merges by name.
 */
export interface MemberEvents {
  onSigned?(record: BatchRecord, detail: VerifyDetail): void;
  onRefused?(batchId: number, err: DacdError): void;
  onFeeder?(lastBatchId: number): void;
  /** A fetched batch was signed (and posted unless in shadow mode): where its time went. */
  onBatchTimes?(batchId: number, times: BatchTimes): void;
}

type Hook = (...args: never[]) => void;

/**
 * One set of hooks that calls the hooks of every set given, in the order given, under each name any
 * of them defines (absent sets are left out).
 */
export function mergeMemberEvents(...sets: (MemberEvents | undefined)[]): MemberEvents {
  const given = sets.filter((s): s is MemberEvents => s !== undefined);
  const merged: Record<string, Hook> = {};
  for (const name of new Set(given.flatMap((s) => Object.keys(s)))) {
    const hooks = given
      .map((s) => (s as Record<string, Hook | undefined>)[name])
      .filter((h): h is Hook => typeof h === "function");
    merged[name] = (...args: never[]) => {
      for (const hook of hooks) hook(...args);
    };
  }
  return merged as MemberEvents;
}
