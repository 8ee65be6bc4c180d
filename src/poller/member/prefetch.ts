import type { Profile } from "../../model/profile.js";
import type { StateUpdate } from "../../model/state-update.js";
import { parseInSlices } from "../../wire/parse-in-slices.js";
import { reviveDacdError } from "../../errors.js";
import type { BatchParser } from "../gateway/batch-parser.js";
import { DEFAULT_JSON_LIMITS } from "../gateway/bounded-json.js";
import type { AvailabilityGateway } from "../gateway/gateway-client.js";

/**
 * Fetching ahead while catching up: while batch N is verified, the answers for N+1… are fetched
 * and parsed (in worker threads, see batch-parser.ts), so that the member's sequential
 * verify-sign-post loop does not wait on the network. Only fetching runs ahead: batches are still
 * verified, stored, signed and posted one at a time in id order by the member, and every check
 * that depends on the store (the previous batch, the stored claim) is made in the batch's turn.
 */

/** Where one batch's time went, in milliseconds (fetch and parse overlap the previous batches). */
export interface BatchTimes {
  /** The get_batch_data call without its JSON parse: the network and the gateway. */
  readonly fetchMs: number;
  /** JSON parse of the answer (bounded-json.ts: in a worker thread for a large body). */
  readonly jsonParseMs: number;
  /** The update read into typed, range-checked leaves (parseStateUpdate). */
  readonly parseMs: number;
  /** How long the member waited for the batch when its turn came (0 when it was ready). */
  readonly waitMs: number;
  /** Verification and signature, until the batch's write was queued. */
  readonly verifyMs: number;
  /** From then until the write was durable (the next batch is verified meanwhile). */
  readonly storeMs: number;
  /** approve_new_roots and the cursor write (shadow mode: the cursor write). */
  readonly postMs: number;
}

/** One batch's answer, fetched and parsed, waiting for its turn. */
export interface FetchedBatch {
  readonly batchId: number;
  readonly fetchMs: number;
  readonly jsonParseMs: number;
  readonly parseMs: number;
  /** The parsed update; throws the BAD_INPUT error the answer earned (in the batch's turn). */
  update(): StateUpdate;
}

/** Fetches and parses one batch; null when the gateway has no such batch yet. */
export type LoadBatch = (batchId: number) => Promise<FetchedBatch | null>;

/**
 * The availability gateway's answer for a batch, parsed for `profile` (the member's loader): by
 * `parser`'s worker threads, or without one on this thread, the leaves a slice per turn.
 */
export function gatewayLoader(
  gateway: AvailabilityGateway,
  profile: Profile,
  validateRollup: boolean | undefined,
  parser?: BatchParser | null,
): LoadBatch {
  if (parser) return workerLoader(gateway, profile, validateRollup, parser);
  return async (batchId) => {
    const started = performance.now();
    const times = { jsonParseMs: 0 };
    const raw = await gateway.getBatchData(batchId, validateRollup, times);
    if (raw === null) return null;
    const fetched = performance.now();
    let update: StateUpdate | undefined;
    let refusal: unknown;
    try {
      update = await parseInSlices(raw, profile, batchId, validateRollup);
    } catch (err) {
      refusal = err;
    }
    return {
      batchId,
      fetchMs: fetched - started - times.jsonParseMs,
      jsonParseMs: times.jsonParseMs,
      parseMs: performance.now() - fetched,
      update() {
        if (update === undefined) throw refusal;
        return update;
      },
    };
  };
}

function workerLoader(
  gateway: AvailabilityGateway,
  profile: Profile,
  validateRollup: boolean | undefined,
  parser: BatchParser,
): LoadBatch {
  return async (batchId) => {
    const started = performance.now();
    const reply = await gateway.getBatchUpdate(batchId, validateRollup, (bytes, scannedWith, signal) =>
      parser.parse(
        {
          bytes,
          batchId,
          profile,
          validateRollup,
          limits: scannedWith ?? DEFAULT_JSON_LIMITS,
          scanned: scannedWith !== undefined,
        },
        signal,
      ),
    );
    if (reply === null) return null;
    return {
      batchId,
      fetchMs: performance.now() - started - reply.jsonParseMs - reply.parseMs,
      jsonParseMs: reply.jsonParseMs,
      parseMs: reply.parseMs,
      update() {
        if (reply.kind === "refused") throw reviveDacdError(reply.error);
        return reply.update;
      },
    };
  };
}

export interface PrefetchOptions {
  /** Batches fetched ahead of the one being handled (0: none). */
  readonly ahead: number;
  /**
   * A batch fetched ahead longer ago than this is fetched again in its turn: after a long wait
   * (a failing post, backoff) the member verifies what the gateway serves now.
   */
  readonly maxAgeMs: number;
}

interface Entry {
  readonly promise: Promise<FetchedBatch | null>;
  /** When the answer arrived (performance.now()), or undefined while in flight. */
  doneAt?: number;
}

const FAILED = Symbol("failed");

/**
 * A bounded window of batch fetches running ahead of the member. The member `take`s batch ids in
 * increasing order; each take hands over that batch (fetched ahead or now) and starts the fetches
 * of the next `ahead` ids that exist. A fetch ahead that failed, found no batch yet or grew stale is
 * not used: the batch is fetched again in its turn, so that only the batch in turn ever reports an
 * error. `drop` forgets the window (after a refusal or a failure, the retry fetches afresh).
 */
export class BatchPrefetcher {
  private readonly window = new Map<number, Entry>();

  constructor(
    private readonly load: LoadBatch,
    private readonly opts: PrefetchOptions,
  ) {}

  /**
   * Batch `batchId` (null: the gateway has none yet). `lastBatchId` is the feeder's last batch id
   * when known: batches up to it exist and are fetched ahead at once; without it, batches are
   * fetched ahead only once this one was found.
   */
  async take(batchId: number, lastBatchId?: number): Promise<{ batch: FetchedBatch | null; waitMs: number }> {
    for (const id of this.window.keys()) if (id < batchId) this.window.delete(id);
    const ahead = this.usable(batchId);
    this.window.delete(batchId);
    const waiting = performance.now();
    // This batch's fetch first (it is needed first), then the window beyond it.
    const current = ahead ? ahead.promise.catch((): typeof FAILED => FAILED) : this.load(batchId);
    if (lastBatchId !== undefined) this.fetchAhead(batchId, lastBatchId);
    let batch = await current;
    // A fetch ahead that failed is made again now: its error was not this batch's turn's.
    if (batch === FAILED) batch = await this.load(batchId);
    const waitMs = performance.now() - waiting;
    if (batch !== null && lastBatchId === undefined) this.fetchAhead(batchId, Infinity);
    return { batch, waitMs };
  }

  /** Forgets every fetch ahead (those in flight finish unobserved). */
  drop(): void {
    this.window.clear();
  }

  /** Ids fetched ahead or in flight (for tests). */
  get pending(): number[] {
    return [...this.window.keys()];
  }

  /** The fetch ahead of `batchId`, unless it found nothing or is too old to be used. */
  private usable(batchId: number): Entry | undefined {
    const entry = this.window.get(batchId);
    if (!entry) return undefined;
    const stale = entry.doneAt !== undefined && performance.now() - entry.doneAt > this.opts.maxAgeMs;
    if (stale) {
      this.window.delete(batchId);
      return undefined;
    }
    return entry;
  }

  private fetchAhead(batchId: number, lastBatchId: number): void {
    const until = Math.min(batchId + this.opts.ahead, lastBatchId);
    for (let id = batchId + 1; id <= until; id++) {
      if (this.window.has(id)) continue;
      const entry: Entry = {
        promise: this.load(id).then(
          (batch) => {
            entry.doneAt = performance.now();
            // Not there yet: asked again in its turn rather than remembered as missing.
            if (batch === null && this.window.get(id) === entry) this.window.delete(id);
            return batch;
          },
          (err: unknown) => {
            entry.doneAt = performance.now();
            if (this.window.get(id) === entry) this.window.delete(id);
            throw err;
          },
        ),
      };
      entry.promise.catch(() => undefined); // observed in its turn, or never (dropped, shutdown)
      this.window.set(id, entry);
    }
  }
}
