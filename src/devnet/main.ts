/**
 * `startDevnet`: a local operator serving the whole gateway interface (transaction gateway, feeder
 * gateway and availability gateway, each on its own port) for variant P or G, backed by a real state
 * machine — or, in replay mode, by a recorded chain of get_batch_data answers.
 */
import { adminHandlers } from "./admin.js";
import { Approvals, type QuorumState } from "./approvals.js";
import { Batcher } from "./batcher.js";
import type { BatchView, ChainView } from "./chain.js";
import { Faults } from "./faults.js";
import { loadReplay, ReplayChain, replayProfile } from "./replay.js";
import { availabilityRouter } from "./servers/availability.js";
import { feederRouter } from "./servers/feeder.js";
import { gatewayRouter, type GatewayContext } from "./servers/gateway.js";
import { HttpError, listen, type Listening } from "./servers/http.js";
import {
  computeRoots,
  keptTrees,
  makeProfile,
  MemoryNodeStore,
  toChecksumAddress,
  WasmEngine,
  type HashEngine,
  type Profile,
  type ProfileName,
  type TreeName,
} from "./shared.js";
import { GState } from "./state/g-state.js";
import type { StateMachine } from "./state/machine.js";
import { PState } from "./state/p-state.js";
import { startTraffic, type Traffic, type TrafficStats } from "./traffic.js";
import { TxPool } from "./txpool.js";
import { toHex64 } from "../util/bytes.js";
import { startEthNode, type EthNode } from "./exchange/eth-node.js";
import { DevnetExchange } from "./exchange/exchange.js";
import { Settlement } from "./exchange/settle.js";

export interface DevnetOptions {
  readonly variant: "P" | "G";
  /** Defaults: perpetual for P, spot for G ("spot-v4.0" also possible). */
  readonly profile?: ProfileName | undefined;
  readonly gatewayPort?: number | undefined;
  readonly feederPort?: number | undefined;
  readonly availabilityPort?: number | undefined;
  /** Committee addresses; when absent, any correctly recovered signer is accepted. */
  readonly committee?: readonly string[] | undefined;
  /** Distinct signatures per batch for quorum; default: the committee's size, or 1 without committee. */
  readonly quorum?: number | undefined;
  /** Transactions per batch at most (default 10); a full batch is cut at once. */
  readonly batchSize?: number | undefined;
  /** Ready transactions are cut into a batch this often (default 1000; 0 = only by size or /devnet/cut). */
  readonly batchIntervalMs?: number | undefined;
  /** Traffic generator rate in transactions per second (0 or absent: off). */
  readonly traffic?: number | undefined;
  readonly replay?: string | undefined;
  readonly expected?: string | undefined;
  readonly allowDynamicConfig?: boolean | undefined;
  readonly seed?: number | undefined;
  /** Variant P transaction filter: types refused by add_transaction. */
  readonly blockedTxTypes?: readonly string[] | undefined;
  readonly contractAddress?: string | undefined;
  readonly blockchainType?: string | undefined;
  readonly engine?: HashEngine | undefined;
  /** Clock in ms (tests). */
  readonly now?: (() => number) | undefined;
  /**
   * Settle on a local Ethereum node (started here, on 127.0.0.1): deploy the exchange contract
   * and commit each batch's roots once the quorum has signed it.
   */
  readonly baseChain?: boolean | undefined;
  /** The local node's port (0 or absent picks a free one). */
  readonly baseChainPort?: number | undefined;
}

export interface DevnetStatus {
  readonly variant: "P" | "G";
  readonly profile: ProfileName;
  readonly mode: "live" | "replay";
  readonly last_batch_id: number;
  readonly head_batch_id: number;
  readonly first_unused_tx_id: number | null;
  readonly ready_txs: number | null;
  readonly quorum: number;
  readonly committee: string[] | null;
  readonly blocked_tx_types: string[];
  readonly alternative_endpoint: { url: string } | null;
  readonly faults: unknown;
  readonly traffic: TrafficStats | null;
  readonly batches: unknown[];
  /** With a base chain: its node, the exchange, the last batch committed and whether it is frozen. */
  readonly base_chain: {
    rpc_url: string;
    contract: string;
    committed_batch_id: number;
    frozen: boolean;
  } | null;
}

export interface Devnet {
  readonly urls: { readonly gateway: string; readonly feeder: string; readonly availability: string };
  readonly variant: "P" | "G";
  readonly profile: Profile;
  readonly chain: ChainView;
  /** The local base chain and the exchange on it (with `baseChain`). */
  readonly baseChain?: { readonly rpcUrl: string; readonly exchange: DevnetExchange } | undefined;
  /** Freezes the exchange (with `baseChain`); returns the batch it froze at. */
  freeze(): Promise<{ frozen_batch_id: number }>;
  /** Cuts a batch from the ready transactions now (null when none is ready and not `allowEmpty`). */
  cutBatch(allowEmpty?: boolean): Promise<BatchView | null>;
  /** Resolves when batch `id` exists. */
  waitForBatch(id: number, timeoutMs?: number): Promise<BatchView>;
  /** Resolves when batch `id` has the quorum of distinct committee signatures. */
  waitForQuorum(id: number, timeoutMs?: number): Promise<QuorumState>;
  status(): DevnetStatus;
  close(): Promise<void>;
}

export const DEFAULT_CONTRACT_ADDRESS = toChecksumAddress("0x5fbdb2315678afecb367f032d93f642f64180aa3");

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    t = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(t));
}

function checkPort(name: string, v: number | undefined): number {
  const p = v ?? 0;
  if (!Number.isInteger(p) || p < 0 || p > 65535)
    throw new RangeError(`${name} must be a port number (0 picks a free one)`);
  return p;
}

export async function startDevnet(opts: DevnetOptions): Promise<Devnet> {
  if (opts.variant !== "P" && opts.variant !== "G") throw new RangeError("variant must be P or G");
  const committee = opts.committee?.map((a) => {
    if (!/^0x[0-9a-fA-F]{40}$/.test(a))
      throw new RangeError(`committee address ${a} is not a 0x-prefixed 20-byte address`);
    return a.toLowerCase();
  });
  const quorum = opts.quorum ?? (committee?.length || 1);
  if (!Number.isInteger(quorum) || quorum < 1) throw new RangeError("quorum must be a positive integer");
  const batchSize = opts.batchSize ?? 10;
  if (!Number.isInteger(batchSize) || batchSize < 1)
    throw new RangeError("batch size must be a positive integer");
  const intervalMs = opts.batchIntervalMs ?? 1000;
  if (!Number.isInteger(intervalMs) || intervalMs < 0)
    throw new RangeError("batch interval must be a non-negative integer");
  const engine: HashEngine = opts.engine ?? new WasmEngine();
  const faults = new Faults();
  const approvals = new Approvals(quorum, committee ? new Set(committee) : null);
  const blockedTxTypes = new Set(opts.blockedTxTypes ?? []);

  let profile: Profile;
  let chain: ChainView;
  let batcher: Batcher<unknown> | undefined;
  let gatewayCtx: GatewayContext<unknown> | undefined;
  let pool: TxPool<unknown> | undefined;

  if (opts.replay) {
    const src = await loadReplay(opts.replay, opts.expected);
    profile = replayProfile(src, opts.variant, opts.profile);
    if (profile.variant !== opts.variant)
      throw new RangeError(`replayed chain is variant ${profile.variant}, not ${opts.variant}`);
    const { roots } = await computeRoots(
      engine,
      new MemoryNodeStore(),
      keptTrees(profile, true),
      null,
      {},
      0,
    );
    const genesis: Partial<Record<TreeName, string>> = {};
    for (const [k, v] of Object.entries(roots) as [TreeName, Uint8Array][]) genesis[k] = toHex64(v);
    chain = new ReplayChain(profile, genesis, src, (opts.now ?? Date.now)());
  } else {
    profile = makeProfile(opts.profile ?? (opts.variant === "P" ? "perpetual" : "spot"));
    if (profile.variant !== opts.variant)
      throw new RangeError(`profile ${profile.name} is not variant ${opts.variant}`);
    const machine: StateMachine<unknown> = (
      profile.variant === "P"
        ? new PState({ positionHeight: profile.main.height, orderHeight: profile.order.height })
        : new GState(
            { vaultHeight: profile.main.height, orderHeight: profile.order.height },
            profile.rollup !== undefined,
          )
    ) as StateMachine<unknown>;
    pool = new TxPool<unknown>();
    batcher = new Batcher(profile, machine, pool, engine, faults, { batchSize, intervalMs, now: opts.now });
    batcher.on("error", () => undefined);
    await batcher.init();
    chain = batcher;
    const b = batcher;
    gatewayCtx = {
      variant: opts.variant,
      pool,
      machine,
      contractAddress: opts.contractAddress ?? DEFAULT_CONTRACT_ADDRESS,
      allowDynamicConfig: opts.allowDynamicConfig === true,
      blockedTxTypes,
      onAdded: () => b.onAdded(),
      alternativeConfig: null,
    };
  }

  let ethNode: EthNode | undefined;
  let settlement: Settlement | undefined;
  let frozen = false;
  const status = (): DevnetStatus => ({
    variant: opts.variant,
    profile: profile.name,
    mode: opts.replay ? "replay" : "live",
    last_batch_id: chain.lastBatchId(),
    head_batch_id: batcher ? batcher.head() : chain.lastBatchId(),
    first_unused_tx_id: pool ? pool.firstUnused() : null,
    ready_txs: pool ? pool.ready() : null,
    quorum,
    committee: committee ?? null,
    blocked_tx_types: [...blockedTxTypes],
    alternative_endpoint: gatewayCtx?.alternativeConfig ? { url: gatewayCtx.alternativeConfig.url } : null,
    faults: faults.pending(),
    traffic: traffic ? { ...traffic.stats } : null,
    batches: Array.from({ length: chain.lastBatchId() + 1 }, (_, id) => {
      const b = chain.batch(id)!;
      return {
        batch_id: id,
        prev_batch_id: b.prevBatchId,
        sequence_number: b.sequenceNumber,
        rejected: b.rejected,
        tx_count: b.txs.length,
        replaced: b.txs.filter((t) => t.wasReplaced).map((t) => ({ tx_id: t.txId, reason: t.reason })),
        roots: b.stated,
        quorum: approvals.state(id),
      };
    }),
    base_chain:
      ethNode && settlement
        ? {
            rpc_url: ethNode.url,
            contract: settlement.exchange.address,
            committed_batch_id: settlement.committed,
            frozen,
          }
        : null,
  });
  const freeze = async (): Promise<{ frozen_batch_id: number }> => {
    if (!settlement) throw new HttpError(409, "NO_BASE_CHAIN", "the devnet runs without --chain");
    await settlement.stop();
    if (!frozen) await settlement.exchange.freeze();
    frozen = true;
    return { frozen_batch_id: settlement.committed };
  };

  const servers: Listening[] = [];
  let traffic: Traffic | undefined;
  const closeAll = async (): Promise<void> => {
    await traffic?.stop();
    batcher?.stop();
    await settlement?.stop();
    await Promise.all(servers.map((s) => s.close()));
    await ethNode?.close();
    await engine.close?.();
  };
  try {
    if (opts.baseChain) {
      ethNode = await startEthNode({ port: checkPort("base chain port", opts.baseChainPort) });
      const exchange = await DevnetExchange.deploy(ethNode.url, profile.name, profile.main.height);
      settlement = new Settlement(chain, approvals, exchange, profile.main.name, () => undefined);
      settlement.start();
    }
    const admin = adminHandlers({ faults, batcher, mainTree: profile.main.name, blockedTxTypes, freeze });
    const gwRouter = gatewayCtx ? gatewayRouter(gatewayCtx) : replayGatewayRouter(opts.variant);
    servers.push(await listen(checkPort("gateway port", opts.gatewayPort), "gateway", gwRouter, faults));
    servers.push(
      await listen(checkPort("feeder port", opts.feederPort), "feeder", feederRouter(chain), faults),
    );
    servers.push(
      await listen(
        checkPort("availability port", opts.availabilityPort),
        "availability",
        availabilityRouter({
          chain,
          approvals,
          blockchainType: opts.blockchainType ?? "ETHEREUM",
          admin,
          status,
        }),
        faults,
      ),
    );
  } catch (e) {
    await closeAll();
    throw e;
  }
  const urls = { gateway: servers[0]!.url, feeder: servers[1]!.url, availability: servers[2]!.url };
  batcher?.start();
  if (opts.traffic && opts.traffic > 0 && !opts.replay) {
    traffic = startTraffic({
      variant: opts.variant,
      gatewayUrl: urls.gateway,
      rate: opts.traffic,
      seed: opts.seed ?? 1,
    });
  }

  const waitForBatch = (id: number, timeoutMs = 30_000): Promise<BatchView> => {
    const existing = chain.batch(id);
    if (existing) return Promise.resolve(existing);
    if (!batcher) return Promise.reject(new Error(`batch ${id} is not in the replayed chain`));
    const b = batcher;
    const p = new Promise<BatchView>((resolve) => {
      const on = (batch: BatchView): void => {
        if (batch.batchId >= id) {
          b.off("batch", on);
          resolve(chain.batch(id)!);
        }
      };
      b.on("batch", on);
    });
    return withTimeout(p, timeoutMs, `batch ${id}`);
  };

  return {
    urls,
    variant: opts.variant,
    profile,
    chain,
    baseChain: ethNode && settlement ? { rpcUrl: ethNode.url, exchange: settlement.exchange } : undefined,
    freeze,
    cutBatch: (allowEmpty = false) => (batcher ? batcher.cut(allowEmpty) : Promise.resolve(null)),
    waitForBatch,
    waitForQuorum: async (id, timeoutMs = 30_000) => {
      const start = Date.now();
      await waitForBatch(id, timeoutMs);
      await withTimeout(
        approvals.wait(id),
        Math.max(1, timeoutMs - (Date.now() - start)),
        `quorum on batch ${id}`,
      );
      return approvals.state(id);
    },
    status,
    close: closeAll,
  };
}

/** In replay mode the transaction gateway only answers the read-only endpoints. */
function replayGatewayRouter(variant: "P" | "G"): ReturnType<typeof gatewayRouter> {
  return gatewayRouter({
    variant,
    pool: new TxPool<unknown>(),
    machine: {
      parse: () => {
        throw new HttpError(409, "REPLAY_MODE", "tx: replay mode takes no transactions");
      },
      apply: () => undefined,
      changes: () => ({}),
      alternative: () => null,
    },
    contractAddress: DEFAULT_CONTRACT_ADDRESS,
    allowDynamicConfig: false,
    blockedTxTypes: new Set(),
    onAdded: () => undefined,
    alternativeConfig: null,
  });
}
