/**
 * A get_batch_data answer, from its bytes to a parsed update: the JSON within its limits, the
 * envelope (`{"update": …}`), then the update's leaves (parseStateUpdate). It is one function of
 * plain data in and out, so that it can run in a worker thread (batch-parser.ts) and give there
 * exactly what it gives on the main thread.
 */
import { dacdErrorData, isDacdError, type DacdErrorData } from "../../errors.js";
import type { Profile } from "../../model/profile.js";
import type { StateUpdate } from "../../model/state-update.js";
import { parseStateUpdate } from "../../wire/parse-update.js";
import { describe, isPlainObject } from "../../wire/fields.js";
import { parseJsonHere, type JsonLimits } from "./bounded-json.js";
import { BadResponse, JSON_FAILURE_HEAD, jsonFailure } from "./http.js";

/**
 * The `update` of a get_batch_data answer, or null for `{"update": null}` (the batch is not made
 * yet). Throws BadResponse for any other envelope.
 */
export function readBatchAnswer(v: unknown): Record<string, unknown> | null {
  if (!isPlainObject(v)) throw new BadResponse(`answer is not a JSON object but ${describe(v)}`);
  if (!("update" in v)) throw new BadResponse(`answer has no "update" key`);
  const update = v.update;
  if (update === null) return null;
  if (!isPlainObject(update)) throw new BadResponse(`"update" is not an object but ${describe(update)}`);
  return update;
}

export interface BatchParseRequest {
  /** The answer's body. */
  readonly bytes: Uint8Array;
  readonly batchId: number;
  readonly profile: Profile;
  readonly validateRollup: boolean | undefined;
  readonly limits: JsonLimits;
  /** The body was already fed through a JsonShapeScanner with these limits (as it arrived). */
  readonly scanned: boolean;
}

/** Milliseconds spent on the JSON and on the leaves. */
export interface BatchParseTimes {
  readonly jsonParseMs: number;
  readonly parseMs: number;
}

export type BatchParseReply = BatchParseTimes &
  (
    | { readonly kind: "update"; readonly update: StateUpdate }
    /** `{"update": null}`: the batch is not made yet. */
    | { readonly kind: "none" }
    /** The update is refused (BAD_INPUT, naming the batch and the field), in the batch's turn. */
    | { readonly kind: "refused"; readonly error: DacdErrorData }
    /** Not JSON, beyond the limits, or not the answer's envelope: the gateway's failure (BadResponse). */
    | { readonly kind: "bad-response"; readonly reason: string }
  );

/** Reads one answer: every outcome the answer can lead to is a reply (only a bug throws). */
export function parseBatchAnswer(req: BatchParseRequest): BatchParseReply {
  const began = performance.now();
  let raw: Record<string, unknown> | null;
  try {
    raw = readBatchAnswer(decodeJson(req));
  } catch (e) {
    const reason = e instanceof Error ? e.message : String(e);
    return { kind: "bad-response", reason, jsonParseMs: performance.now() - began, parseMs: 0 };
  }
  const parsed = performance.now();
  const times = () => ({ jsonParseMs: parsed - began, parseMs: performance.now() - parsed });
  if (raw === null) return { kind: "none", ...times() };
  try {
    const update = parseStateUpdate(raw, req.profile, req.batchId, { validateRollup: req.validateRollup });
    return { kind: "update", update, ...times() };
  } catch (e) {
    if (isDacdError(e)) return { kind: "refused", error: dacdErrorData(e), ...times() };
    throw e;
  }
}

/** The body's JSON; BadResponse with the text decodeJsonBounded gives for a body it refuses. */
function decodeJson({ bytes, limits, scanned }: BatchParseRequest): unknown {
  const head = Buffer.from(bytes.subarray(0, JSON_FAILURE_HEAD));
  try {
    return parseJsonHere(bytes, limits, scanned);
  } catch (e) {
    throw jsonFailure(e, head);
  }
}
