import { createServer, type Server } from "node:http";
import {
  encodeAbiParameters,
  encodeFunctionResult,
  toEventSelector,
  toFunctionSelector,
  type Hex,
} from "viem";
import { EXCHANGE_ABI } from "../../src/chain/exchange-abi.js";

/**
 * An Ethereum JSON-RPC server on 127.0.0.1 that answers what the test scripts: a chain of `head`
 * blocks with code at every address, the logs in `logs` (whatever their address, as a lying or
 * broken provider would answer them), and the exchange's views from `views`. `answer` replaces any
 * method's result (return undefined to fall through), for malformed answers. A real HTTP server:
 * the watch talks to it as to a provider.
 */
export interface FakeLog {
  address: string;
  topics: string[];
  data: string;
  /** null: a malformed log (pending logs have none). */
  blockNumber: number | null;
  transactionHash?: string;
  logIndex?: number;
}

export type ExchangeView = "isFrozen" | "getLastBatchId" | "getSequenceNumber";

export class LyingRpc {
  head = 100;
  /** Changes every block's hash (a reorg deeper than any confirmation). */
  fork = 0;
  logs: FakeLog[] = [];
  views: Partial<Record<ExchangeView, (block: number) => bigint | boolean>> = {};
  answer: ((method: string, params: unknown[]) => unknown) | undefined;
  readonly methods: string[] = [];
  private server: Server | undefined;
  url = "";

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown;
        const calls = ([] as { id: number; method: string; params?: unknown[] }[]).concat(
          body as { id: number; method: string; params?: unknown[] },
        );
        const answers = calls.map((c) => this.reply(c.id, c.method, c.params ?? []));
        res
          .writeHead(200, { "content-type": "application/json" })
          .end(JSON.stringify(Array.isArray(body) ? answers : answers[0]));
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, "127.0.0.1", r));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
    return this;
  }

  count(method: string): number {
    return this.methods.filter((m) => m === method).length;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => this.server?.close(() => r()) ?? r());
  }

  blockHash(n: number): Hex {
    return `0x${this.fork.toString(16).padStart(8, "0")}${n.toString(16).padStart(56, "0")}`;
  }

  private reply(id: number, method: string, params: unknown[]): unknown {
    this.methods.push(method);
    try {
      const scripted = this.answer?.(method, params);
      return { jsonrpc: "2.0", id, result: scripted !== undefined ? scripted : this.result(method, params) };
    } catch (err) {
      return { jsonrpc: "2.0", id, error: { code: -32000, message: (err as Error).message } };
    }
  }

  private result(method: string, params: unknown[]): unknown {
    const hex = (n: number): string => `0x${n.toString(16)}`;
    const blockOf = (tag: unknown): number =>
      tag === "latest" || tag === undefined ? this.head : Number(tag as string);
    switch (method) {
      case "eth_chainId":
        return "0x7a69";
      case "eth_blockNumber":
        return hex(this.head);
      case "eth_getCode":
        return "0x6080";
      case "eth_getBlockByNumber": {
        const n = blockOf(params[0]);
        if (n > this.head) return null;
        return {
          number: hex(n),
          hash: this.blockHash(n),
          parentHash: n === 0 ? `0x${"00".repeat(32)}` : this.blockHash(n - 1),
          timestamp: hex(1_700_000_000 + n * 12),
          gasLimit: "0x1c9c380",
          gasUsed: "0x0",
          miner: `0x${"00".repeat(20)}`,
          extraData: "0x",
          difficulty: "0x0",
          nonce: "0x0000000000000000",
          transactions: [],
          uncles: [],
        };
      }
      case "eth_getLogs": {
        const f = params[0] as { fromBlock: string; toBlock: string };
        const from = Number(f.fromBlock);
        const to = Number(f.toBlock);
        return this.logs
          .filter((l) => l.blockNumber === null || (l.blockNumber >= from && l.blockNumber <= to))
          .map((l, i) => ({
            address: l.address,
            topics: l.topics,
            data: l.data,
            blockNumber: l.blockNumber === null ? null : hex(l.blockNumber),
            blockHash: l.blockNumber === null ? null : this.blockHash(l.blockNumber),
            transactionHash: l.transactionHash ?? `0x${(i + 1).toString(16).padStart(64, "0")}`,
            transactionIndex: "0x0",
            logIndex: hex(l.logIndex ?? i),
            removed: false,
          }));
      }
      case "eth_call": {
        const [call, tag] = params as [{ data: Hex }, string];
        const selector = call.data.slice(0, 10);
        for (const name of ["isFrozen", "getLastBatchId", "getSequenceNumber"] as const) {
          if (toFunctionSelector(`${name}()`) !== selector) continue;
          const view = this.views[name];
          if (!view) throw new Error(`execution reverted: ${name} not scripted`);
          return encodeFunctionResult({
            abi: EXCHANGE_ABI,
            functionName: name,
            result: view(blockOf(tag)) as never,
          });
        }
        throw new Error("execution reverted");
      }
      default:
        throw new Error(`method ${method} not supported`);
    }
  }
}

const uint = (v: bigint): Hex => encodeAbiParameters([{ type: "uint256" }], [v]);

/** A spot v4.5 LogRootUpdate (sequence, batch, validium vault root, rollup vault root, order root). */
export function rootUpdateLog(
  address: string,
  block: number,
  u: { sequence: bigint; batchId: bigint; vault: bigint; rollupVault: bigint; order: bigint },
  txHash?: string,
): FakeLog {
  return {
    address,
    blockNumber: block,
    topics: [toEventSelector("LogRootUpdate(uint256,uint256,uint256,uint256,uint256)")],
    data: encodeAbiParameters(
      Array.from({ length: 5 }, () => ({ type: "uint256" })),
      [u.sequence, u.batchId, u.vault, u.rollupVault, u.order],
    ),
    ...(txHash ? { transactionHash: txHash } : {}),
  };
}

/** A LogFrozen (no arguments); `extraTopics` / `data` make it malformed. */
export function frozenLog(
  address: string,
  block: number,
  extraTopics: string[] = [],
  data: Hex = "0x",
): FakeLog {
  return { address, blockNumber: block, topics: [toEventSelector("LogFrozen()"), ...extraTopics], data };
}

export { uint };
