/**
 * Typed clients for the availability gateway (committee interactions) and the feeder gateway
 * (read-only batch information), paths as in the gateway interface, section 4.
 *
 * They check only the envelope of each answer (JSON or text, `update` key present, integer
 * ids); the contents of a state update are parsed and validated by the caller. All failures are
 * DacdError("GATEWAY") with the endpoint, the URL and the batch id when there is one.
 */
import { DacdError } from "../../errors.js";
import { DEFAULT_JSON_LIMITS, type JsonLimits } from "./bounded-json.js";
import { describe, isPlainObject } from "../../wire/fields.js";
import { readBatchAnswer, type BatchParseReply } from "./batch-answer.js";
import type { PostedSignature } from "../../signer/signer.js";
import {
  BadResponse,
  decodeJson,
  decodeJsonBounded,
  decodeText,
  SMALL_BODY_BYTES,
  HttpClient,
  type HttpClientOptions,
  type HttpResponse,
} from "./http.js";

export type { HttpClientOptions, RequestOutcome, OutcomeKind, TlsOptions, TlsMaterial } from "./http.js";
export { loadTlsMaterial } from "./http.js";

/** Body of approve_new_roots (the interface's CommitteeSignature). */
export interface CommitteeSignature {
  batch_id: number;
  signature: PostedSignature;
  member_key: string;
  claim_hash: string;
}

export type GatewayVariant = "P" | "G";

function checkBatchId(endpoint: string, batchId: number): void {
  if (!Number.isSafeInteger(batchId) || batchId < 0) {
    throw new DacdError(
      "GATEWAY",
      `${endpoint}: batch id must be a non-negative integer, got ${String(batchId)}`,
    );
  }
}

/** A batch id in an answer: an integer, -1 allowed (no batch / empty state). */
function decodeBatchId(what: string) {
  return (res: HttpResponse): number => {
    const v = decodeJson(res);
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v < -1) {
      throw new BadResponse(`${what} is not an integer >= -1 but ${describe(v)}`);
    }
    return v;
  };
}

function decodeObject(what: string) {
  return (res: HttpResponse): Record<string, unknown> => {
    const v = decodeJson(res);
    if (!isPlainObject(v)) throw new BadResponse(`${what} is not a JSON object but ${describe(v)}`);
    return v;
  };
}

/** GET /availability_gateway/get_batch_data?batch_id=N[&validate_rollup=True|False]. */
function batchDataRequest(batchId: number, validateRollup: boolean | undefined) {
  const query: Record<string, string> = { batch_id: String(batchId) };
  if (validateRollup !== undefined) query.validate_rollup = validateRollup ? "True" : "False";
  return {
    endpoint: "get_batch_data",
    method: "GET",
    path: "/availability_gateway/get_batch_data",
    query,
    batchId,
  } as const;
}

export class AvailabilityGateway {
  readonly http: HttpClient;

  constructor(opts: HttpClientOptions) {
    this.http = new HttpClient(opts);
  }

  /**
   * GET /availability_gateway/get_batch_data?batch_id=N[&validate_rollup=True|False].
   * Returns the raw `update` object, or null when the gateway answers `{"update": null}` (the
   * batch is not ready yet). `validate_rollup` is sent only when `validateRollup` is given.
   * `times`, when given, receives how long the JSON parse of the answer took (the rest of the
   * call is the network).
   */
  async getBatchData(
    batchId: number,
    validateRollup?: boolean,
    times?: { jsonParseMs: number },
  ): Promise<Record<string, unknown> | null> {
    checkBatchId("get_batch_data", batchId);
    return this.http.call(
      { ...batchDataRequest(batchId, validateRollup), jsonLimits: DEFAULT_JSON_LIMITS },
      async (res) => {
        const parsing = performance.now();
        const v = await decodeJsonBounded(res);
        if (times) times.jsonParseMs = performance.now() - parsing;
        return readBatchAnswer(v);
      },
    );
  }

  /**
   * getBatchData with the whole answer read by `parse` (batch-answer.ts, in a worker thread):
   * the JSON, the envelope and the update's leaves. Returns null for `{"update": null}`, else the
   * reply (an update, or the refusal the update earned); a body that is not the answer's envelope
   * fails the call as getBatchData's does.
   */
  async getBatchUpdate(
    batchId: number,
    validateRollup: boolean | undefined,
    /** `scannedWith`: the limits the body was scanned with as it arrived. */
    parse: (
      body: Uint8Array,
      scannedWith: JsonLimits | undefined,
      signal?: AbortSignal,
    ) => Promise<BatchParseReply>,
  ): Promise<Exclude<BatchParseReply, { kind: "none" | "bad-response" }> | null> {
    checkBatchId("get_batch_data", batchId);
    return this.http.call(
      { ...batchDataRequest(batchId, validateRollup), jsonLimits: DEFAULT_JSON_LIMITS },
      async (res) => {
        const reply = await parse(res.body, res.scannedWith, res.signal);
        if (reply.kind === "bad-response") throw new BadResponse(reply.reason);
        return reply.kind === "none" ? null : reply;
      },
    );
  }

  /**
   * POST /availability_gateway/approve_new_roots with the committee signature as JSON.
   * Returns the answer text, trimmed (and unquoted if JSON-quoted); the caller checks that it
   * reads `signature accepted`. Retried like every other call: posting the same signature for
   * the same claim twice is harmless.
   */
  async approveNewRoots(sig: CommitteeSignature): Promise<string> {
    checkBatchId("approve_new_roots", sig.batch_id);
    const body = {
      batch_id: sig.batch_id,
      signature: sig.signature,
      member_key: sig.member_key,
      claim_hash: sig.claim_hash,
    };
    return this.http.call(
      {
        endpoint: "approve_new_roots",
        method: "POST",
        path: "/availability_gateway/approve_new_roots",
        json: body,
        batchId: sig.batch_id,
        maxBodyBytes: SMALL_BODY_BYTES,
      },
      decodeText,
    );
  }

  /** POST /availability_gateway/get_blockchain_type: the base chain's name, e.g. `ETHEREUM`. */
  async getBlockchainType(): Promise<string> {
    return this.http.call(
      {
        endpoint: "get_blockchain_type",
        method: "POST",
        path: "/availability_gateway/get_blockchain_type",
        maxBodyBytes: SMALL_BODY_BYTES,
      },
      (res) => {
        const text = decodeText(res);
        if (text === "") throw new BadResponse("answer is empty");
        if (text.length > 100)
          throw new BadResponse(`answer is not a blockchain name: ${text.slice(0, 100)}…`);
        return text;
      },
    );
  }

  close(): Promise<void> {
    return this.http.close();
  }
}

export interface FeederGatewayOptions extends HttpClientOptions {
  /** P: perpetual (positions); G: spot (vaults), paths under /feeder_gateway/v2. */
  variant: GatewayVariant;
}

export class FeederGateway {
  readonly http: HttpClient;
  readonly variant: GatewayVariant;

  constructor(opts: FeederGatewayOptions) {
    if (opts.variant !== "P" && opts.variant !== "G") {
      throw new DacdError("CONFIG", `feeder gateway variant must be "P" or "G", got ${String(opts.variant)}`);
    }
    this.variant = opts.variant;
    this.http = new HttpClient(opts);
  }

  private path(name: "get_last_batch_id" | "get_prev_batch_id" | "get_batch_info"): string {
    if (this.variant === "G") return `/feeder_gateway/v2/${name}`;
    // Variant P serves get_prev_batch_id without the /feeder_gateway prefix.
    return name === "get_prev_batch_id" ? "/get_prev_batch_id" : `/feeder_gateway/${name}`;
  }

  /** The last batch id used (an integer; -1 accepted for "none yet"). */
  async getLastBatchId(): Promise<number> {
    return this.http.call(
      {
        endpoint: "get_last_batch_id",
        method: "GET",
        path: this.path("get_last_batch_id"),
        maxBodyBytes: SMALL_BODY_BYTES,
      },
      decodeBatchId("last batch id"),
    );
  }

  /** The id of the batch before `batchId` (-1: none). */
  async getPrevBatchId(batchId: number): Promise<number> {
    checkBatchId("get_prev_batch_id", batchId);
    return this.http.call(
      {
        endpoint: "get_prev_batch_id",
        method: "GET",
        path: this.path("get_prev_batch_id"),
        query: { batch_id: String(batchId) },
        batchId,
        maxBodyBytes: SMALL_BODY_BYTES,
      },
      decodeBatchId("previous batch id"),
    );
  }

  /** Batch information (raw JSON object; variant G: the version 2 form). */
  async getBatchInfo(batchId: number): Promise<Record<string, unknown>> {
    checkBatchId("get_batch_info", batchId);
    return this.http.call(
      {
        endpoint: "get_batch_info",
        method: "GET",
        path: this.path("get_batch_info"),
        query: { batch_id: String(batchId) },
        batchId,
        maxBodyBytes: SMALL_BODY_BYTES,
      },
      decodeObject("batch information"),
    );
  }

  close(): Promise<void> {
    return this.http.close();
  }
}
