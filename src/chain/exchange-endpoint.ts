/**
 * The base chain's endpoint as the watch asks it about one exchange contract: each question one
 * RPC call, and an answer that is not what the method returns is a MalformedAnswer (counted and
 * retried as an RPC failure), never something the watch acts on.
 */
import { BaseError, type Block, type PublicClient, type Transaction } from "viem";
import { DacdError } from "../errors.js";
import type { FrozenSharedState, OnchainBatch } from "../storage/onchain-record.js";
import { EXCHANGE_ABI, WATCHED_EVENTS } from "./exchange-abi.js";
import { MalformedAnswer } from "./rpc.js";
import { readSharedStateOf, readSystemAssetType } from "./shared-state.js";

export class ExchangeEndpoint {
  /** `address`: the exchange contract, lower case. */
  constructor(
    private readonly client: PublicClient,
    readonly address: `0x${string}`,
  ) {}

  /** The head's block number, a safe integer (a null or absurd head is malformed). */
  async head(): Promise<number> {
    const head = await this.call("eth_blockNumber", () => this.client.getBlockNumber({ cacheTime: 0 }));
    if (typeof head !== "bigint" || head < 0n || head > BigInt(Number.MAX_SAFE_INTEGER))
      throw new MalformedAnswer(`eth_blockNumber answered ${String(head)}`);
    return Number(head);
  }

  block(number: number): Promise<Block> {
    return this.call("eth_getBlockByNumber", () => this.client.getBlock({ blockNumber: BigInt(number) }));
  }

  /** Whether the contract has code at `block`. */
  async hasCode(block: number): Promise<boolean> {
    const code = await this.call("eth_getCode", () =>
      this.client.getCode({ address: this.address, blockNumber: BigInt(block) }),
    );
    return (code ?? "0x") !== "0x";
  }

  /**
   * The watched events' logs in blocks from..to, as viem decodes them. The filter names the
   * exchange, but the endpoint is not trusted to apply it: exchange-logs.ts checks each log.
   */
  logs(from: number, to: number) {
    return this.call("eth_getLogs", () =>
      this.client.getLogs({
        address: this.address,
        events: WATCHED_EVENTS,
        fromBlock: BigInt(from),
        toBlock: BigInt(to),
        strict: true,
      }),
    );
  }

  transaction(hash: string): Promise<Transaction> {
    return this.call("eth_getTransactionByHash", () =>
      this.client.getTransaction({ hash: hash as `0x${string}` }),
    );
  }

  /** The contract's isFrozen() at `block`: the one answer a freeze is taken from. */
  isFrozenAt(block: number): Promise<boolean> {
    return this.call("isFrozen()", () =>
      this.client.readContract({
        address: this.address,
        abi: EXCHANGE_ABI,
        functionName: "isFrozen",
        blockNumber: BigInt(block),
      }),
    );
  }

  /** The contract's getLastBatchId() at `block`. */
  lastBatchIdAt(block: number): Promise<bigint> {
    return this.call("getLastBatchId()", () =>
      this.client.readContract({
        address: this.address,
        abi: EXCHANGE_ABI,
        functionName: "getLastBatchId",
        blockNumber: BigInt(block),
      }),
    );
  }

  /** One of the views that name the committed roots, at `block`. */
  rootAt(functionName: "getValidiumVaultRoot" | "getOrderRoot", block: bigint): Promise<bigint> {
    return this.call(`${functionName}()`, () =>
      this.client.readContract({
        address: this.address,
        abi: EXCHANGE_ABI,
        functionName,
        blockNumber: block,
      }),
    );
  }

  /** The shared state of a perpetual batch, from the updateState transaction `update` names. */
  sharedStateOf(update: OnchainBatch): Promise<FrozenSharedState> {
    return this.call("eth_getTransactionByHash", () => readSharedStateOf(this.client, this.address, update));
  }

  systemAssetTypeAt(block: number): Promise<string> {
    return this.call("getSystemAssetType()", () => readSystemAssetType(this.client, this.address, block));
  }

  /**
   * An RPC call: an answer viem cannot make sense of (it throws something else than its own
   * errors) is a malformed answer, counted and retried as an RPC failure.
   */
  private async call<T>(method: string, request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (err) {
      if (err instanceof BaseError || err instanceof DacdError || err instanceof MalformedAnswer) throw err;
      throw new MalformedAnswer(
        `${method}: malformed answer (${err instanceof Error ? err.message : String(err)})`,
      );
    }
  }
}
