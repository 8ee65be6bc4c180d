/**
 * What the base-chain watch tells the operator: the hooks the metrics count, and the log lines an
 * endpoint's answers can repeat at will (a refused log, an RPC failure, a reorg, a mismatch),
 * each kind rate-limited so that a flood of forged answers gives a few lines, each one counted.
 */
import { BaseError } from "viem";
import { LineLimiter } from "../util/line-limiter.js";
import type { Logger } from "../logging.js";
import type { OnchainBatch, OnchainFreeze } from "../storage/onchain-record.js";
import type { BatchRecord } from "../storage/batch-record.js";
import type { OnchainRejection } from "./exchange-logs.js";
import { MalformedAnswer, rpcFailure, rpcMessage, type RpcFailure } from "./rpc.js";

export interface ChainWatchEvents {
  onRpcFailure?(reason: RpcFailure): void;
  onRootMismatch?(batch: OnchainBatch): void;
  /** A recorded freeze that isFrozen() at a confirmed block now denies: dropped. */
  onFreezeWithdrawn?(freeze: OnchainFreeze): void;
  /** Something the endpoint answered and the watch refused. */
  onRejected?(reason: OnchainRejection): void;
}

export class WatchReport {
  /** Lines the endpoint's answers can repeat at will: a few a minute per kind. */
  private readonly lines = new LineLimiter();

  /** `aheadLimit`: how far past the newest stored batch an on-chain batch id may be (for the lines). */
  constructor(
    private readonly log: Logger,
    private readonly events: ChainWatchEvents | undefined,
    private readonly rpcUrl: string,
    private readonly aheadLimit: number,
  ) {}

  /** Logs a line of `kind` within its rate limit, saying how many were held back before it. */
  say(kind: string, level: "error" | "warn", obj: object, message: string): void {
    const taken = this.lines.take(kind);
    if (!taken) return;
    this.log[level](taken.held > 0 ? { ...obj, lines_held_back: taken.held } : obj, message);
  }

  /**
   * A poll that failed: an RPC failure (viem's errors, a malformed answer) is counted by its
   * reason; anything else (a wrong address, a store that refuses the write) is an error line.
   */
  pollFailed(err: unknown): void {
    if (!(err instanceof BaseError) && !(err instanceof MalformedAnswer)) {
      const message = err instanceof Error ? err.message : String(err);
      this.say("error", "error", { err }, `base chain watch: ${message}`);
      return;
    }
    const reason = rpcFailure(err);
    this.events?.onRpcFailure?.(reason);
    this.say(
      "rpc_failure",
      "warn",
      { reason, url: this.rpcUrl },
      `base chain RPC call failed (${reason}): ${rpcMessage(err)}; trying again at the next poll`,
    );
  }

  /** The roots at `block` could not be read (the poll goes on without them): counted as an RPC failure. */
  viewRootsFailed(err: unknown, block: bigint): void {
    this.events?.onRpcFailure?.(rpcFailure(err));
    this.say(
      "view_roots",
      "warn",
      { block_number: Number(block) },
      `cannot read the roots at block ${block}: ${rpcMessage(err)}`,
    );
  }

  /** Something the endpoint answered that the watch refuses: counted, and logged within limits. */
  rejected(reason: OnchainRejection, detail: Record<string, unknown>): void {
    this.events?.onRejected?.(reason);
    const what: Record<OnchainRejection, string> = {
      foreign_address: "a log from another address than starkex_contract_address",
      malformed_log: "a log with extra topics or data for its event",
      out_of_range: `a batch id beyond ${this.aheadLimit} batches ahead of the newest stored batch, or out of range`,
      freeze_unconfirmed: "a LogFrozen that isFrozen() at a confirmed block denies",
    };
    this.say(
      `rejected:${reason}`,
      "warn",
      { reason, ...detail },
      `base chain endpoint answered ${what[reason]}: ignored (a broken or lying endpoint?)`,
    );
  }

  /** A root update whose roots differ from the member's stored ones (reported once; the caller sees to it). */
  mismatch(batch: OnchainBatch, stored: BatchRecord): void {
    this.events?.onRootMismatch?.(batch);
    this.say(
      "mismatch",
      "error",
      {
        batch_id: batch.batch_id,
        block_number: batch.block_number,
        tx_hash: batch.tx_hash,
        onchain_roots: batch.roots,
        stored_roots: stored.roots,
      },
      `the base chain holds roots for batch ${batch.batch_id} that differ from this member's: its data cannot serve escapes at that batch`,
    );
  }

  /** The freeze `freeze`, recorded for the first time. */
  frozen(freeze: OnchainFreeze): void {
    this.say(
      "frozen",
      "error",
      { batch_id: freeze.batch_id, block_number: freeze.block_number },
      `the exchange is frozen at batch ${freeze.batch_id}: users now escape against it; escape commands and the escape API default to that batch`,
    );
  }

  /** Says that the recorded freeze `freeze` no longer holds, and why (the caller dropped it). */
  freezeWithdrawn(freeze: OnchainFreeze, why: string): void {
    this.events?.onFreezeWithdrawn?.(freeze);
    this.say(
      "freeze_withdrawn",
      "error",
      { batch_id: freeze.batch_id, block_number: freeze.block_number },
      `the freeze recorded at batch ${freeze.batch_id} (block ${freeze.block_number}) is withdrawn: ${why} (a reorg, an unfreeze, or an endpoint that lied); escapes and signing no longer follow it`,
    );
  }

  /** The last block read is gone: the watch rereads from `rereadFrom`. */
  reorg(
    last: { number: number; hash: string },
    head: number,
    rereadFrom: number,
    confirmations: number,
  ): void {
    this.say(
      "reorg",
      "warn",
      { block_number: last.number, hash: last.hash, head, reread_from: rereadFrom },
      `base chain reorg below base_chain_confirmations (${confirmations}): block ${last.number} was replaced; rereading from block ${rereadFrom}`,
    );
  }
}
