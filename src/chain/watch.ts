/**
 * Follows the exchange contract on the base chain beside the member: which batches it committed
 * (and whether their roots are the ones this member stored), and whether it froze. It acts only on
 * blocks `confirmations` deep, reads logs in bounded ranges, keeps its place in the store (so that
 * a restart continues where it stopped), and treats every RPC failure as a reason to try again at
 * the next poll: nothing it meets stops the member or changes its readiness.
 */
import { BaseError, type PublicClient } from "viem";
import { DacdError } from "../errors.js";
import type { Logger } from "../logging.js";
import type { BatchRecord } from "../storage/batch-record.js";
import type { LevelStore } from "../storage/level-store.js";
import type { OnchainBatch, OnchainCursor, OnchainFreeze } from "../storage/onchain-record.js";
import { EXCHANGE_ABI, WATCHED_EVENTS } from "./exchange-abi.js";
import { onchainBatch, rootsMatch, rootsOf, type RootUpdateLog } from "./root-update.js";
import { rpcClient, rpcFailure, rpcMessage, type RpcFailure } from "./rpc.js";
import { readSharedStateOf, readSystemAssetType, sharedStateOfCall } from "./shared-state.js";
import { STATE_OFFSET } from "../escape/onchain/shared-state.js";

export interface ChainWatchEvents {
  onRpcFailure?(reason: RpcFailure): void;
  onRootMismatch?(batch: OnchainBatch): void;
}

export interface ChainWatchOptions {
  readonly rpcUrl: string;
  readonly contract: string;
  readonly confirmations: number;
  readonly pollIntervalMs: number;
  /** Each RPC call's time-out. */
  readonly timeoutMs: number;
  /** Blocks per eth_getLogs at most (default DEFAULT_LOG_RANGE). */
  readonly maxRange?: number;
  /** dacd's name of the tree the contract's vault root is: vault (spot) or position (perpetual). */
  readonly mainTree: string;
  readonly store: LevelStore;
  readonly log: Logger;
  readonly events?: ChainWatchEvents;
}

/** What the common RPC providers answer for one contract's logs (most cap a range at 10,000 blocks). */
export const DEFAULT_LOG_RANGE = 5000;

/**
 * How far back a reorg deeper than the confirmations sends the watch: the last block it read is
 * gone, and nothing short of rereading tells which block before it still stands. Cheap to reread.
 */
export const REORG_REWIND = 128;

export class ChainWatch {
  private readonly client: PublicClient;
  private readonly address: `0x${string}`;
  private cursor: OnchainCursor | undefined;
  /** Batches stored since their root update was read without a record to compare with. */
  private readonly toCompare = new Set<number>();
  /** Mismatches already reported, by transaction, that a reread after a reorg meets again. */
  private readonly reported = new Set<string>();
  private stopped = false;
  private readonly abort = new AbortController();
  /** The last error other than an RPC failure, logged once while it repeats. */
  private lastError: string | undefined;
  private sleeping: { timer: NodeJS.Timeout; wake: () => void } | undefined;
  private loop: Promise<void> | undefined;

  constructor(private readonly opts: ChainWatchOptions) {
    this.client = rpcClient(opts.rpcUrl, opts.timeoutMs, this.abort.signal);
    this.address = opts.contract.toLowerCase() as `0x${string}`;
  }

  /** What the watch knows now (the store's copy, kept in memory for the metrics and status). */
  get state(): OnchainCursor | undefined {
    return this.cursor;
  }

  /**
   * Reads the stored cursor and starts polling. Root updates read before their batch was stored
   * and not compared since (the member stored it, then stopped before the next poll) are compared
   * at the first poll.
   */
  async start(): Promise<void> {
    this.cursor = await this.opts.store.onchain.cursor();
    for (const id of await this.opts.store.onchain.uncomparedBatchIds()) this.toCompare.add(id);
    const frozen = this.cursor?.contract === this.address ? this.cursor.frozen : undefined;
    if (frozen)
      this.opts.log.warn(
        { batch_id: frozen.batch_id, block_number: frozen.block_number, since: frozen.detected_at },
        `the exchange is frozen at batch ${frozen.batch_id}: escapes are served at that batch`,
      );
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    if (this.sleeping) {
      clearTimeout(this.sleeping.timer);
      this.sleeping.wake();
    }
    await this.loop;
  }

  /** The member stored a batch: compare it at the next poll if the chain's roots for it are known. */
  stored(record: BatchRecord): void {
    this.toCompare.add(record.batch_id);
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.poll();
      } catch (err) {
        if (this.stopped) break;
        if (!(err instanceof BaseError)) {
          // A wrong address, a store that refuses the write: said once while it repeats.
          const message = err instanceof Error ? err.message : String(err);
          if (message !== this.lastError) this.opts.log.error({ err }, `base chain watch: ${message}`);
          this.lastError = message;
        } else {
          const reason = rpcFailure(err);
          this.opts.events?.onRpcFailure?.(reason);
          this.opts.log.warn(
            { reason, url: this.opts.rpcUrl },
            `base chain RPC call failed (${reason}): ${rpcMessage(err)}; trying again at the next poll`,
          );
        }
      }
      await this.sleep(this.opts.pollIntervalMs);
    }
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = (): void => {
        this.sleeping = undefined;
        resolve();
      };
      this.sleeping = { timer: setTimeout(wake, ms), wake };
    });
  }

  /** One round: check for a reorg, read the confirmed blocks not read yet, look for the freeze. */
  async poll(): Promise<void> {
    const head = Number(await this.client.getBlockNumber({ cacheTime: 0 }));
    const safe = head - this.opts.confirmations;
    let cursor = await this.currentCursor(head);
    cursor = await this.checkReorg(cursor, head);
    await this.compareStored(cursor);
    const maxRange = this.opts.maxRange ?? DEFAULT_LOG_RANGE;
    while (cursor.next_block <= safe && !this.stopped) {
      const from = cursor.next_block;
      const to = Math.min(safe, from + maxRange - 1);
      cursor = await this.readRange(cursor, from, to);
    }
    if (!cursor.frozen && cursor.next_block > safe && safe >= 0 && !this.stopped) {
      // A freeze before the first block read has no log left to read: the view says so.
      const frozen = await this.client.readContract({
        address: this.address,
        abi: EXCHANGE_ABI,
        functionName: "isFrozen",
        blockNumber: BigInt(safe),
      });
      if (frozen) await this.record({ ...cursor, frozen: await this.freezeAt(safe) }, []);
    }
    if (
      this.opts.mainTree === "position" &&
      this.cursor?.frozen &&
      !this.cursor.frozen.shared_state &&
      !this.stopped
    )
      await this.readSharedState(this.cursor);
  }

  /**
   * Perpetual: the frozen batch's shared state, from the updateState transaction its
   * LogUpdateState names, stored with the freeze (escapes need it). Tried again at each poll
   * until it is read.
   */
  private async readSharedState(cursor: OnchainCursor): Promise<void> {
    const frozen = cursor.frozen!;
    const update = await this.opts.store.onchain.batch(frozen.batch_id);
    if (!update)
      throw new DacdError(
        "STORE",
        `the exchange froze at batch ${frozen.batch_id}, whose LogUpdateState was not read: its shared state cannot be located`,
      );
    const shared = await readSharedStateOf(this.client, this.address, update);
    let assetType: string | undefined;
    try {
      assetType = await readSystemAssetType(this.client, this.address, frozen.block_number);
    } catch (err) {
      this.opts.log.warn(
        `cannot read the exchange's getSystemAssetType(): ${rpcMessage(err)}; escapes are given without the withdraw call`,
      );
    }
    const root = update.roots?.position;
    if (root !== undefined && BigInt(shared.words[0]!) !== BigInt(`0x${root}`))
      this.opts.log.error(
        {
          batch_id: frozen.batch_id,
          tx_hash: update.tx_hash,
          shared_state_root: shared.words[0],
          recorded_root: root,
        },
        `the shared state of batch ${frozen.batch_id} names another position root than the one recorded for its update`,
      );
    const withShared: OnchainCursor = {
      ...cursor,
      frozen: {
        ...frozen,
        shared_state: { ...shared, ...(assetType ? { system_asset_type: assetType } : {}) },
      },
    };
    await this.record(withShared, []);
    this.opts.log.info(
      { batch_id: frozen.batch_id, tx_hash: update.tx_hash, words: shared.words.length },
      `read the frozen batch ${frozen.batch_id}'s shared state from its updateState transaction: perpetual escapes carry it`,
    );
  }

  /**
   * The stored cursor for this contract; another contract's is dropped with its batches. A first
   * start begins at the contract's deployment, not at genesis.
   */
  private async currentCursor(head: number): Promise<OnchainCursor> {
    const cursor = this.cursor;
    if (cursor?.contract === this.address) return cursor;
    const fresh: OnchainCursor = { contract: this.address, next_block: await this.deploymentBlock(head) };
    if (cursor) {
      this.opts.log.warn(
        { was: cursor.contract, now: this.address },
        "starkex_contract_address changed: following the new contract from its deployment",
      );
      await this.record(fresh, [], { dropAll: true });
    }
    // Kept until the first range is recorded, so that the deployment is looked for once.
    this.cursor = fresh;
    return fresh;
  }

  /**
   * The block the contract was deployed in: the first with code at its address, by bisection
   * (some 25 calls on mainnet instead of thousands of log ranges from genesis). A node that keeps
   * no old state cannot answer: then genesis. No code at the head is a wrong address: an error
   * until it is fixed.
   */
  private async deploymentBlock(head: number): Promise<number> {
    const hasCode = async (block: number): Promise<boolean> =>
      ((await this.client.getCode({ address: this.address, blockNumber: BigInt(block) })) ?? "0x") !== "0x";
    if (!(await hasCode(head))) {
      throw new DacdError(
        "CONFIG",
        `no contract at starkex_contract_address ${this.address} on the base chain (block ${head}): check the address and base_chain_rpc_url`,
      );
    }
    let lo = 0;
    let hi = head;
    try {
      while (lo < hi) {
        const mid = Math.floor((lo + hi) / 2);
        if (await hasCode(mid)) hi = mid;
        else lo = mid + 1;
      }
    } catch (err) {
      this.opts.log.warn(
        `cannot find the contract's deployment block (${rpcMessage(err)}): reading its logs from block 0`,
      );
      return 0;
    }
    return hi;
  }

  /** The last block read is gone (another hash there, or the chain is shorter): reread from before it. */
  private async checkReorg(cursor: OnchainCursor, head: number): Promise<OnchainCursor> {
    const last = cursor.last_block;
    if (!last) return cursor;
    if (last.number <= head) {
      const block = await this.client.getBlock({ blockNumber: BigInt(last.number) });
      if (block.hash === last.hash) return cursor;
    }
    const from = Math.max(0, last.number - REORG_REWIND);
    this.opts.log.warn(
      { block_number: last.number, hash: last.hash, head, reread_from: from },
      `base chain reorg below base_chain_confirmations (${this.opts.confirmations}): block ${last.number} was replaced; rereading from block ${from}`,
    );
    const frozen = cursor.frozen && cursor.frozen.block_number < from ? cursor.frozen : undefined;
    const rewound: OnchainCursor = {
      contract: this.address,
      next_block: from,
      ...(frozen ? { frozen } : {}),
    };
    for (const b of await this.opts.store.onchain.record(rewound, [], { dropFrom: from }))
      if (b.matches === false) this.reported.add(`${b.tx_hash}/${b.batch_id}`);
    const kept = await this.opts.store.onchain.last();
    const withLast: OnchainCursor = kept
      ? {
          ...rewound,
          last: {
            batch_id: kept.batch_id,
            sequence_number: kept.sequence_number,
            block_number: kept.block_number,
          },
        }
      : rewound;
    await this.record(withLast, []);
    return withLast;
  }

  /** Reads blocks from..to (confirmed) and records what they hold, with the new cursor, in one write. */
  private async readRange(cursor: OnchainCursor, from: number, to: number): Promise<OnchainCursor> {
    const logs = await this.client.getLogs({
      address: this.address,
      events: WATCHED_EVENTS,
      fromBlock: BigInt(from),
      toBlock: BigInt(to),
      strict: true,
    });
    const end = await this.client.getBlock({ blockNumber: BigInt(to) });
    const updates = logs
      .filter((l) => !l.removed)
      .sort((a, b) => Number(a.blockNumber - b.blockNumber) || a.logIndex - b.logIndex);
    const batches: OnchainBatch[] = [];
    let last = cursor.last;
    let frozenAt: number | undefined;
    for (let i = 0; i < updates.length; i++) {
      const log = updates[i]!;
      if (log.eventName === "LogFrozen") {
        frozenAt ??= Number(log.blockNumber);
        continue;
      }
      const update = log as unknown as RootUpdateLog;
      const view =
        log.eventName === "LogUpdateState"
          ? await this.perpetualRoots(update, updates.slice(i + 1), log.blockNumber)
          : undefined;
      const roots = rootsOf(update, this.opts.mainTree, view);
      const batchId = Number(update.args.batchId ?? 0n);
      const stored = await this.opts.store.getBatch(batchId);
      const batch = onchainBatch(update, roots, stored);
      batches.push(batch);
      if (batch.matches === false) this.mismatch(batch, stored!);
      if (!last || batch.sequence_number >= last.sequence_number)
        last = {
          batch_id: batch.batch_id,
          sequence_number: batch.sequence_number,
          block_number: batch.block_number,
        };
    }
    const frozen = cursor.frozen ?? (frozenAt !== undefined ? await this.freezeAt(frozenAt) : undefined);
    const next: OnchainCursor = {
      contract: this.address,
      next_block: to + 1,
      last_block: { number: to, hash: end.hash },
      ...(last ? { last } : {}),
      ...(frozen ? { frozen } : {}),
    };
    await this.record(next, batches);
    return next;
  }

  /**
   * A perpetual update's roots (its log names none): the position and order roots of the new
   * shared state in its updateState transaction's program output; when that is not a direct call
   * on the exchange, the contract's views, which show the state after the block, so only for the
   * block's last update.
   */
  private async perpetualRoots(
    update: RootUpdateLog,
    later: readonly { blockNumber: bigint; eventName: string }[],
    block: bigint,
  ): Promise<{ vault: bigint; order: bigint } | undefined> {
    try {
      const tx = await this.client.getTransaction({ hash: update.transactionHash as `0x${string}` });
      if (tx.to?.toLowerCase() === this.address) {
        const words = sharedStateOfCall(tx.input, Number(update.args.batchId ?? 0n), "updateState");
        return { vault: words[STATE_OFFSET.positionRoot]!, order: words[STATE_OFFSET.orderRoot]! };
      }
    } catch (err) {
      if (err instanceof BaseError) throw err;
      // Not an updateState call this watch can read: the views below.
    }
    const lastInBlock = !later.some((l) => l.blockNumber === block && l.eventName !== "LogFrozen");
    return lastInBlock ? this.viewRoots(block) : undefined;
  }

  /** The contract's roots after block `block` (perpetual updates do not log them). */
  private async viewRoots(block: bigint): Promise<{ vault: bigint; order: bigint } | undefined> {
    const read = (functionName: "getValidiumVaultRoot" | "getOrderRoot"): Promise<bigint> =>
      this.client.readContract({
        address: this.address,
        abi: EXCHANGE_ABI,
        functionName,
        blockNumber: block,
      });
    try {
      const [vault, order] = await Promise.all([read("getValidiumVaultRoot"), read("getOrderRoot")]);
      return { vault, order };
    } catch (err) {
      // A node without the state of old blocks: the update is recorded without roots.
      this.opts.events?.onRpcFailure?.(rpcFailure(err));
      this.opts.log.warn(
        { block_number: Number(block) },
        `cannot read the roots at block ${block}: ${rpcMessage(err)}`,
      );
      return undefined;
    }
  }

  /** The frozen state, read at the block the freeze was seen in. */
  private async freezeAt(block: number): Promise<OnchainFreeze> {
    const batchId = await this.client.readContract({
      address: this.address,
      abi: EXCHANGE_ABI,
      functionName: "getLastBatchId",
      blockNumber: BigInt(block),
    });
    return { batch_id: Number(batchId), block_number: block, detected_at: new Date().toISOString() };
  }

  /** Compares the batches stored since their root update was read. */
  private async compareStored(cursor: OnchainCursor): Promise<void> {
    if (this.toCompare.size === 0) return;
    const ids = [...this.toCompare];
    this.toCompare.clear();
    const updated: OnchainBatch[] = [];
    for (const id of ids) {
      const batch = await this.opts.store.onchain.batch(id);
      if (!batch?.roots || batch.matches !== undefined) continue;
      const stored = await this.opts.store.getBatch(id);
      const matches = rootsMatch(batch.roots, stored);
      if (matches === undefined) continue;
      const compared = { ...batch, matches };
      updated.push(compared);
      if (!matches) this.mismatch(compared, stored!);
    }
    if (updated.length > 0) await this.record(cursor, updated);
  }

  private mismatch(batch: OnchainBatch, stored: BatchRecord): void {
    // The same update read again (a reorg's reread, where it survived) is not a new mismatch.
    if (this.reported.delete(`${batch.tx_hash}/${batch.batch_id}`)) return;
    this.opts.events?.onRootMismatch?.(batch);
    this.opts.log.error(
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

  /** Writes the cursor (and batches) and logs a freeze the first time it is recorded. */
  private async record(
    cursor: OnchainCursor,
    batches: readonly OnchainBatch[],
    drop?: { dropAll?: boolean },
  ): Promise<void> {
    const wasFrozen = this.cursor?.contract === this.address && this.cursor.frozen !== undefined;
    await this.opts.store.onchain.record(cursor, batches, drop);
    this.cursor = cursor;
    if (cursor.frozen && !wasFrozen)
      this.opts.log.error(
        { batch_id: cursor.frozen.batch_id, block_number: cursor.frozen.block_number },
        `the exchange is frozen at batch ${cursor.frozen.batch_id}: users now escape against it; escape commands and the escape API default to that batch`,
      );
  }
}
