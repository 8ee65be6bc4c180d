/**
 * Where the devnet's batches come from: a state machine fed by the transaction gateway (live), or
 * a recorded chain of get_batch_data answers (replay).
 */
import { Batcher } from "./batcher.js";
import type { ChainView } from "./chain.js";
import type { Faults } from "./faults.js";
import { DEFAULT_CONTRACT_ADDRESS, type DevnetOptions, type DevnetSettings } from "./options.js";
import { loadReplay, ReplayChain, replayProfile } from "./replay.js";
import type { GatewayContext } from "./servers/gateway.js";
import {
  computeRoots,
  keptTrees,
  makeProfile,
  MemoryNodeStore,
  type HashEngine,
  type Profile,
  type TreeName,
} from "./shared.js";
import { GState } from "./state/g-state.js";
import type { StateMachine } from "./state/machine.js";
import { PState } from "./state/p-state.js";
import { TxPool } from "./txpool.js";
import { toHex64 } from "../util/bytes.js";

export interface ChainSource {
  readonly profile: Profile;
  readonly chain: ChainView;
  /** In live mode: what cuts batches, the pool it cuts them from and the transaction gateway's view. */
  readonly live?: {
    readonly batcher: Batcher<unknown>;
    readonly pool: TxPool<unknown>;
    readonly gateway: GatewayContext<unknown>;
  };
}

/** A recorded chain, replayed on top of the empty trees of its profile. */
export async function replaySource(
  replay: string,
  opts: DevnetOptions,
  engine: HashEngine,
): Promise<ChainSource> {
  const src = await loadReplay(replay, opts.expected);
  const profile = replayProfile(src, opts.variant, opts.profile);
  if (profile.variant !== opts.variant)
    throw new RangeError(`replayed chain is variant ${profile.variant}, not ${opts.variant}`);
  const genesis = await emptyRoots(profile, engine);
  return { profile, chain: new ReplayChain(profile, genesis, src, (opts.now ?? Date.now)()) };
}

/** The roots of the profile's kept trees with no leaf set. */
async function emptyRoots(profile: Profile, engine: HashEngine): Promise<Partial<Record<TreeName, string>>> {
  const { roots } = await computeRoots(engine, new MemoryNodeStore(), keptTrees(profile, true), null, {}, 0);
  const genesis: Partial<Record<TreeName, string>> = {};
  for (const [k, v] of Object.entries(roots) as [TreeName, Uint8Array][]) genesis[k] = toHex64(v);
  return genesis;
}

/** A state machine of the variant, batches cut from its transaction pool. */
export async function liveSource(
  opts: DevnetOptions,
  settings: DevnetSettings,
  engine: HashEngine,
  faults: Faults,
  blockedTxTypes: Set<string>,
): Promise<ChainSource> {
  const profile = makeProfile(opts.profile ?? (opts.variant === "P" ? "perpetual" : "spot"));
  if (profile.variant !== opts.variant)
    throw new RangeError(`profile ${profile.name} is not variant ${opts.variant}`);
  const machine = stateMachineFor(profile);
  const pool = new TxPool<unknown>();
  const batcher = new Batcher(profile, machine, pool, engine, faults, {
    batchSize: settings.batchSize,
    intervalMs: settings.intervalMs,
    now: opts.now,
  });
  batcher.on("error", () => undefined);
  await batcher.init();
  const gateway: GatewayContext<unknown> = {
    variant: opts.variant,
    pool,
    machine,
    contractAddress: opts.contractAddress ?? DEFAULT_CONTRACT_ADDRESS,
    allowDynamicConfig: opts.allowDynamicConfig === true,
    blockedTxTypes,
    onAdded: () => batcher.onAdded(),
    alternativeConfig: null,
  };
  return { profile, chain: batcher, live: { batcher, pool, gateway } };
}

function stateMachineFor(profile: Profile): StateMachine<unknown> {
  return (
    profile.variant === "P"
      ? new PState({ positionHeight: profile.main.height, orderHeight: profile.order.height })
      : new GState(
          { vaultHeight: profile.main.height, orderHeight: profile.order.height },
          profile.rollup !== undefined,
        )
  ) as StateMachine<unknown>;
}
