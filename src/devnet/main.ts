/**
 * `startDevnet`: a local operator serving the whole gateway interface (transaction gateway, feeder
 * gateway and availability gateway, each on its own port) for variant P or G, backed by a real state
 * machine — or, in replay mode, by a recorded chain of get_batch_data answers.
 */
import { adminHandlers } from "./admin.js";
import { Approvals, type QuorumState } from "./approvals.js";
import { freezeBaseChain, LocalBaseChain } from "./base-chain.js";
import type { BatchView, ChainView } from "./chain.js";
import { Faults } from "./faults.js";
import { listenGateways, type GatewayServers } from "./listeners.js";
import { checkPort, devnetSettings, type DevnetOptions } from "./options.js";
import { WasmEngine, type HashEngine, type Profile } from "./shared.js";
import { liveSource, replaySource } from "./source.js";
import { devnetStatus, type DevnetStatus } from "./status.js";
import { startTraffic, type Traffic } from "./traffic.js";
import { waitForBatch, waitForQuorum } from "./waits.js";
import type { DevnetExchange } from "./exchange/exchange.js";

export { DEFAULT_CONTRACT_ADDRESS, type DevnetOptions } from "./options.js";
export type { DevnetStatus } from "./status.js";

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

export async function startDevnet(opts: DevnetOptions): Promise<Devnet> {
  const settings = devnetSettings(opts);
  const engine: HashEngine = opts.engine ?? new WasmEngine();
  const faults = new Faults();
  const approvals = new Approvals(settings.quorum, settings.committee ? new Set(settings.committee) : null);
  const blockedTxTypes = new Set(opts.blockedTxTypes ?? []);
  const source = opts.replay
    ? await replaySource(opts.replay, opts, engine)
    : await liveSource(opts, settings, engine, faults, blockedTxTypes);
  const { profile, chain } = source;
  const batcher = source.live?.batcher;

  let baseChain: LocalBaseChain | undefined;
  let servers: GatewayServers | undefined;
  let traffic: Traffic | undefined;
  const status = (): DevnetStatus =>
    devnetStatus({
      opts,
      settings,
      source,
      faults,
      approvals,
      blockedTxTypes,
      traffic: () => traffic,
      baseChain: () => baseChain,
    });
  const freeze = (): Promise<{ frozen_batch_id: number }> => freezeBaseChain(baseChain);
  const close = async (): Promise<void> => {
    await traffic?.stop();
    batcher?.stop();
    await baseChain?.settlement.stop();
    await servers?.close();
    await baseChain?.node.close();
    await engine.close?.();
  };
  try {
    if (opts.baseChain)
      baseChain = await LocalBaseChain.start(
        checkPort("base chain port", opts.baseChainPort),
        chain,
        approvals,
        profile,
        { freezeGracePeriodS: opts.freezeGracePeriodS },
      );
    const admin = adminHandlers({ faults, batcher, mainTree: profile.main.name, blockedTxTypes, freeze });
    servers = await listenGateways(opts, {
      chain,
      approvals,
      faults,
      gateway: source.live?.gateway,
      admin,
      status,
    });
  } catch (e) {
    await close();
    throw e;
  }
  const urls = {
    gateway: servers.gateway.url,
    feeder: servers.feeder.url,
    availability: servers.availability.url,
  };
  batcher?.start();
  if (opts.traffic && opts.traffic > 0 && !opts.replay)
    traffic = startTraffic({
      variant: opts.variant,
      gatewayUrl: urls.gateway,
      rate: opts.traffic,
      seed: opts.seed ?? 1,
    });

  return {
    urls,
    variant: opts.variant,
    profile,
    chain,
    baseChain: baseChain ? { rpcUrl: baseChain.node.url, exchange: baseChain.exchange } : undefined,
    freeze,
    cutBatch: (allowEmpty = false) => (batcher ? batcher.cut(allowEmpty) : Promise.resolve(null)),
    waitForBatch: (id, timeoutMs) => waitForBatch(chain, batcher, id, timeoutMs),
    waitForQuorum: (id, timeoutMs) => waitForQuorum(chain, batcher, approvals, id, timeoutMs),
    status,
    close,
  };
}
