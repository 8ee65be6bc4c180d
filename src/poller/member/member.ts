import { DacdError, isDacdError, isRefusal } from "../../errors.js";
import type { Logger } from "../../logging.js";
import type { BatchRecord } from "../../storage/batch-record.js";
import type { LevelStore } from "../../storage/level-store.js";
import { REUSED, type VerifyDetail } from "../../verifier/verify-batch.js";
import { verifySignAndStartStore, type SignedBatch, type StageContext } from "./batch-stages.js";
import type { AvailabilityGateway, FeederGateway } from "../gateway/gateway-client.js";
import { backoffDelay, sleep } from "../gateway/retry.js";
import { postsClaims, type MemberMode } from "./shadow.js";
import type { CursorMove } from "../../storage/cursor.js";
import { storeFailure } from "../../storage/store-errors.js";
import { ForeignSignatureError } from "../../storage/claims-journal.js";
import { readPrevBatchId } from "../../wire/parse-update.js";
import { BatchParser } from "../gateway/batch-parser.js";
import { BatchPrefetcher, gatewayLoader, type FetchedBatch } from "./prefetch.js";
import type { MemberEvents } from "./member-events.js";

export const SIGNATURE_ACCEPTED = "signature accepted";

/** What the member is doing, for status, health and metrics. */
export interface MemberState {
  phase: "starting" | "catching_up" | "idle" | "failing" | "stopped";
  nextBatchId: number;
  feederLastBatchId?: number;
  lastSigned?: {
    batch_id: number;
    sequence_number: number;
    roots: Record<string, string>;
    signed_at: string;
  };
  failing?: {
    batch_id: number;
    code: string;
    reason: string;
    since: string;
    attempts: number;
    next_retry_at: string;
  };
  /** Whether the last call to a gateway succeeded; for readiness. */
  gatewayReachable: boolean;
  /**
   * Since when the member has been at work on the next batch without completing a step (a batch
   * fetched, verified and handed on, or a poll that found nothing new), failures and retries
   * included; unset while it waits between polls. Readiness fails when this grows past max_stall_s.
   */
  pendingSince?: string;
  /** shadow: signatures are made but never posted. */
  mode: MemberMode;
}

export interface MemberOptions {
  readonly pollIntervalMs: number;
  /** Longest wait between retries of a failing batch. */
  readonly maxBackoffMs?: number;
  readonly validateRollup: boolean | undefined;
  /** Default active. */
  readonly mode?: MemberMode;
  /** Batches fetched and parsed ahead while one is verified (prefetch.ts); default 2, 0 for none. */
  readonly prefetchBatches?: number;
}

/** A batch fetched ahead and not used within this time is fetched again in its turn. */
const PREFETCH_MAX_AGE_MS = 60_000;

/**
 * The committee member's run loop: fetch, verify, store, sign and post each batch in order,
 * advancing the cursor only once the gateway accepted the signature. A failing batch is retried
 * with backoff; everything else in the process (status, metrics, shutdown) keeps working because
 * every wait is asynchronous and abortable.
 */
export class Member {
  readonly state: MemberState;
  private readonly prefetch: BatchPrefetcher;
  /** Reads the answers in worker threads (null: on this thread). */
  private readonly parser: BatchParser | null;
  /** The batch verified last, while it is written and posted (step). */
  private finishing: { batchId: number; done: Promise<void> } | null = null;

  constructor(
    private readonly ctx: StageContext,
    private readonly availability: AvailabilityGateway,
    private readonly feeder: FeederGateway | undefined,
    private readonly log: Logger,
    private readonly opts: MemberOptions,
    private readonly events: MemberEvents = {},
  ) {
    this.state = { phase: "starting", nextBatchId: 0, gatewayReachable: true, mode: opts.mode ?? "active" };
    this.parser = BatchParser.create(this.prefetchDepth + 1);
    const loader = gatewayLoader(availability, ctx.profile, opts.validateRollup, this.parser);
    this.prefetch = new BatchPrefetcher(loader, {
      ahead: this.prefetchDepth,
      maxAgeMs: PREFETCH_MAX_AGE_MS,
    });
  }

  private get prefetchDepth(): number {
    return this.opts.prefetchBatches ?? 2;
  }

  private get store(): LevelStore {
    return this.ctx.store;
  }

  async run(signal: AbortSignal): Promise<void> {
    const cursor = await this.store.getCursor();
    this.state.nextBatchId = cursor?.next_batch_id ?? 0;
    this.log.info({ next_batch_id: this.state.nextBatchId, cursor }, "member started");
    // A failure noted by an earlier run is stale now; it is noted again if it recurs.
    await this.store.meta.setNote("failing", undefined);
    try {
      await this.loop(signal);
    } finally {
      // Its write settles before the store can close (a stop leaves it unposted, like any batch).
      await this.drain().catch(() => undefined);
      this.parser?.close();
    }
    this.state.phase = "stopped";
    this.prefetch.drop();
    this.log.info({ next_batch_id: this.state.nextBatchId }, "member stopped");
  }

  private async loop(signal: AbortSignal): Promise<void> {
    let failures = 0;
    while (!signal.aborted) {
      this.state.pendingSince ??= new Date().toISOString();
      try {
        const progressed = await this.step(signal);
        this.state.pendingSince = undefined;
        this.state.gatewayReachable = true;
        if (failures > 0) await this.clearFailure();
        failures = 0;
        if (progressed) continue; // catching up: no wait between batches
        this.state.phase = "idle";
        await sleep(this.opts.pollIntervalMs, signal);
      } catch (caught) {
        if (signal.aborted) break;
        // A damaged store, or one LevelDB no longer writes to, is not retried: the loop ends and dacd
        // exits non-zero (store-errors.ts).
        const store = storeFailure(caught, this.store.dir);
        const err = store?.error ?? caught;
        // So is a journaled signature that is not this member's: every post of it would be refused.
        if (store?.fatal || caught instanceof ForeignSignatureError) {
          this.recordFailure(err, failures + 1, 0);
          this.state.phase = "stopped";
          throw err;
        }
        failures++;
        const delay = this.backoff(failures);
        this.recordFailure(err, failures, delay);
        await sleep(delay, signal).catch(() => undefined);
      }
    }
  }

  /**
   * Handles the next batch; returns true when the cursor advanced or will (a batch is finishing).
   * A freshly verified batch is finished (written, posted, the cursor moved) while the next one is
   * verified on top of it: at most one batch finishes at a time, and posts keep the ids' order.
   */
  private async step(signal: AbortSignal): Promise<boolean> {
    try {
      return await this.stepAhead(signal);
    } catch (err) {
      // The batch before comes first: if it failed too, its failure is the one to report.
      await this.drain();
      throw err;
    }
  }

  private async stepAhead(signal: AbortSignal): Promise<boolean> {
    const behind = this.finishing;
    const batchId = behind ? behind.batchId + 1 : this.state.nextBatchId;
    if (this.feeder) {
      const last = await this.feeder.getLastBatchId();
      this.state.feederLastBatchId = last;
      this.events.onFeeder?.(last);
      if (batchId > last) return this.settled(behind);
      this.state.phase = "catching_up";
    }

    if (await this.store.getBatch(batchId)) {
      // Stored by an earlier run: handled once every batch before it is finished.
      await this.drain();
      return this.stepStored(batchId);
    }
    // Fetched ahead, or now; batches up to the feeder's last one are fetched ahead meanwhile.
    const taken = await this.prefetch.take(batchId, this.feeder ? this.state.feederLastBatchId : undefined);
    const fetched = taken.batch;
    if (fetched === null) return this.settled(behind); // not ready yet
    let verified: SignedBatch;
    try {
      // Verified, signed and its write queued (batch-stages.ts); the checks against the store
      // (previous batch, stored claim) are made here, in turn.
      verified = await verifySignAndStartStore(this.ctx, batchId, fetched.update());
    } catch (err) {
      // A retry fetches afresh: the batches fetched ahead may be what the operator replaces.
      this.prefetch.drop();
      await this.drain(); // before the refusal is handled: the batch before may fail yet
      if (isDacdError(err) && isRefusal(err.code)) {
        this.events.onRefused?.(batchId, err);
        if (err.code === "UNKNOWN_PREV_BATCH" && (await this.rewindToSkipped(batchId, err, fetched)))
          throw err;
        if (await this.abandonedByOperator(batchId)) return true;
      }
      throw err;
    }
    const verifiedAt = performance.now();
    const done = (async () => {
      await behind?.done;
      await this.finish(verified, signal, { batch: fetched, waitMs: taken.waitMs, verifiedAt });
    })();
    done.catch(() => undefined); // observed by the next step or drain
    this.finishing = { batchId, done };
    if (behind) {
      try {
        await behind.done;
      } catch (err) {
        // This batch is not posted: the retry takes both from the store (or verifies it again).
        await verified.stored.catch(() => undefined);
        this.finishing = null;
        throw err;
      }
    }
    return true;
  }

  /** A batch stored by an earlier run, once every batch before it is finished. */
  private async stepStored(batchId: number): Promise<boolean> {
    const record = (await this.store.getBatch(batchId))!;
    if (record.shadowed_at && !record.accepted_at) {
      // Passed in shadow mode before a crash that came before the cursor write: never posted.
      await this.moveCursor({ kind: "shadowed", record, at: new Date(record.shadowed_at) });
      return true;
    }
    if (record.accepted_at) {
      // Accepted before a crash that came before the cursor write: move on.
      await this.moveCursor({ kind: "accepted", record, at: new Date(record.accepted_at) });
      return true;
    }
    this.log.info({ batch_id: batchId }, "re-posting the stored signature of a verified batch");
    if (!postsClaims(this.state.mode)) {
      await this.shadow(record, REUSED);
      return true;
    }
    try {
      await this.post(record, REUSED);
    } catch (err) {
      // The operator may have dropped the batch after this member signed it (its post then refused
      // for good): once the next batch builds on an earlier one, re-posting could never succeed.
      if (isDacdError(err) && err.code === "GATEWAY" && (await this.abandonedByOperator(batchId, "signed")))
        return true;
      throw err;
    }
    return true;
  }

  /** Once a verified batch is durably written: posts it (or logs it in shadow mode), in turn. */
  private async finish(
    verified: SignedBatch,
    signal: AbortSignal,
    fetched: { batch: FetchedBatch; waitMs: number; verifiedAt: number },
  ): Promise<void> {
    let storedAt = 0;
    await verified.stored.then(() => (storedAt = performance.now()));
    if (signal.aborted) return;
    const { record, detail } = verified;
    const posting = performance.now();
    if (postsClaims(this.state.mode)) await this.post(record, detail);
    else await this.shadow(record, detail);
    const { batch, waitMs, verifiedAt } = fetched;
    this.events.onBatchTimes?.(record.batch_id, {
      fetchMs: batch.fetchMs,
      jsonParseMs: batch.jsonParseMs,
      parseMs: batch.parseMs,
      waitMs,
      verifyMs: detail.durationMs,
      storeMs: Math.max(0, storedAt - verifiedAt),
      postMs: performance.now() - posting,
    });
  }

  /** Waits for the batch finishing, if any (throwing its failure); afterwards none is. */
  private async drain(): Promise<void> {
    const finishing = this.finishing;
    if (!finishing) return;
    try {
      await finishing.done;
    } finally {
      if (this.finishing === finishing) this.finishing = null;
    }
  }

  /** No batch to verify now: true if one was still finishing (the cursor moved), once it is done. */
  private async settled(behind: { done: Promise<void> } | null): Promise<boolean> {
    await this.drain();
    return behind !== null;
  }

  /** Shadow mode: the batch is verified, stored and signed; its signature is logged, never posted. */
  private async shadow(record: BatchRecord, detail: VerifyDetail): Promise<void> {
    const at = new Date();
    await this.moveCursor({ kind: "shadowed", record, at });
    this.signed(record, detail, at.toISOString());
    this.log.info(
      {
        batch_id: record.batch_id,
        prev_batch_id: record.prev_batch_id,
        sequence_number: record.sequence_number,
        roots: record.roots,
        claim_hash: record.claim_hash,
        signature: record.signature,
        member_key: record.member_key,
        verify_ms: Math.round(detail.durationMs),
        reused: detail.reused,
        outcome: "shadow",
      },
      "batch verified and signed in shadow mode; nothing posted",
    );
  }

  private async post(record: BatchRecord, detail: VerifyDetail): Promise<void> {
    const started = performance.now();
    // Durably journaled before it leaves; refused when the journal holds another claim for this id.
    // A batch released before is posted with its journaled signature, never a second one.
    const signature =
      (await this.ctx.claims?.ensure(
        record.batch_id,
        record.claim_hash,
        record.signature,
        record.member_key,
      )) ?? record.signature;
    const answer = await this.availability.approveNewRoots({
      batch_id: record.batch_id,
      signature,
      member_key: record.member_key,
      claim_hash: record.claim_hash,
    });
    if (answer !== SIGNATURE_ACCEPTED) {
      throw new DacdError("GATEWAY", `approve_new_roots answered ${JSON.stringify(answer.slice(0, 200))}`, {
        batchId: record.batch_id,
      });
    }
    const at = new Date();
    await this.moveCursor({ kind: "accepted", record, at });
    this.signed(record, detail, at.toISOString());
    this.log.info(
      {
        batch_id: record.batch_id,
        prev_batch_id: record.prev_batch_id,
        sequence_number: record.sequence_number,
        roots: record.roots,
        claim_hash: record.claim_hash,
        leaves: detail.leaves,
        nodes_written: detail.nodesWritten,
        verify_ms: Math.round(detail.durationMs),
        post_ms: Math.round(performance.now() - started),
        reused: detail.reused,
        outcome: "signed",
      },
      "batch signed",
    );
    if (detail.trees && this.log.isLevelEnabled("debug"))
      this.log.debug({ batch_id: record.batch_id, trees: detail.trees }, "batch trees");
  }

  /** The batch is done (posted, or shadowed), and the cursor moved past it. */
  private signed(record: BatchRecord, detail: VerifyDetail, signedAt: string): void {
    this.state.lastSigned = {
      batch_id: record.batch_id,
      sequence_number: record.sequence_number,
      roots: record.roots,
      signed_at: signedAt,
    };
    this.events.onSigned?.(record, detail);
  }

  /**
   * A batch this member refuses, or whose signature the gateway refuses, may have been dropped by
   * the operator: then the next batch builds on an earlier one and this batch id will never be
   * needed. Move past it in that case.
   */
  private async abandonedByOperator(
    batchId: number,
    as: "unsigned" | "signed" = "unsigned",
  ): Promise<boolean> {
    let prev: number;
    try {
      const next = await this.availability.getBatchData(batchId + 1, this.opts.validateRollup);
      if (next === null) return false;
      prev = readPrevBatchId(next, batchId + 1);
    } catch {
      return false;
    }
    if (prev >= batchId) return false;
    await this.moveCursor({ kind: "skipped", batchId });
    this.log.warn(
      { batch_id: batchId, next_prev_batch_id: prev, outcome: "skipped" },
      as === "signed"
        ? `batch ${batchId}'s signature was refused and the operator moved on (batch ${batchId + 1} builds on ${prev}); skipping it, never accepted`
        : `batch ${batchId} was refused and the operator moved on (batch ${batchId + 1} builds on ${prev}); skipping it unsigned`,
    );
    return true;
  }

  /**
   * A batch that builds on a batch this member skipped as abandoned shows that the skip was wrong
   * (the gateway named an earlier previous batch once, then went back): the cursor returns to the
   * skipped batch, which is fetched and verified again after the usual back-off. Only when nothing
   * after the skipped batch was stored, so no signed batch is revisited.
   */
  private async rewindToSkipped(batchId: number, err: DacdError, fetched: FetchedBatch): Promise<boolean> {
    const prev = fetched.update().prevBatchId;
    const cursor = await this.store.getCursor();
    if (!cursor?.skipped?.includes(prev) || prev >= batchId) return false;
    for (let id = prev + 1; id < batchId; id++) if (await this.store.getBatch(id)) return false;
    await this.moveCursor({ kind: "rewound", to: prev });
    this.log.warn(
      { batch_id: batchId, prev_batch_id: prev, outcome: "rewound" },
      `batch ${batchId} builds on batch ${prev}, which was skipped as abandoned: going back to batch ${prev} (${err.message})`,
    );
    return true;
  }

  /**
   * Every move of the cursor goes through here: written (with the batch record it changes, in one
   * fsynced write: storage/cursor.ts), then the member continues where it points.
   */
  private async moveCursor(move: CursorMove): Promise<void> {
    const { cursor } = await this.store.batches.moveCursor(move);
    this.state.nextBatchId = cursor.next_batch_id;
  }

  private async clearFailure(): Promise<void> {
    this.state.failing = undefined;
    await this.store.meta.setNote("failing", undefined).catch(() => undefined);
  }

  private backoff(failures: number): number {
    const maxDelayMs = this.opts.maxBackoffMs ?? 300_000;
    return backoffDelay(failures, { baseDelayMs: this.opts.pollIntervalMs, maxDelayMs });
  }

  private recordFailure(err: unknown, attempts: number, delayMs: number): void {
    const e = isDacdError(err) ? err : undefined;
    const code = e?.code ?? "INTERNAL";
    if (code === "GATEWAY") this.state.gatewayReachable = false;
    const now = new Date();
    this.state.phase = "failing";
    this.state.failing = {
      batch_id: this.state.nextBatchId,
      code,
      reason: err instanceof Error ? err.message : String(err),
      since:
        this.state.failing?.batch_id === this.state.nextBatchId
          ? this.state.failing.since
          : now.toISOString(),
      attempts,
      next_retry_at: new Date(now.getTime() + delayMs).toISOString(),
    };
    // Kept in the store too, so that `dacd status` can say why even when the daemon is down.
    void this.store.meta.setNote("failing", this.state.failing).catch(() => undefined);
    const fields = {
      batch_id: this.state.nextBatchId,
      code,
      attempts,
      retry_in_ms: delayMs,
      outcome: "failed",
    };
    if (e) this.log.error(fields, e.message);
    else this.log.error({ ...fields, err }, "unexpected error while handling a batch");
  }
}
