/**
 * The exit plan with the chain's state, for the daemon and the CLI: the plan from the store, then
 * (with an RPC URL and the exchange's address) readExitState over the base chain's node. The chain
 * is read after the store's snapshot is released; a node that cannot be reached leaves the plan
 * without state and says why in `chain.unread`.
 */
import {
  emptyChainState,
  readExitState,
  type EthCall,
  type PlanWithState,
} from "../escape/exit/chain-state.js";
import { makeExitPlan } from "../escape/exit/from-store.js";
import type { ExitPlan } from "../escape/exit/plan.js";
import type { ExitSettings } from "../escape/exit/settings.js";
import type { LevelStore } from "../storage/level-store.js";
import { withSnapshot } from "../storage/snapshot.js";
import type { HashEngine } from "../verifier/hash/engine.js";
import { rpcClient, rpcMessage } from "./rpc.js";

const DEFAULT_TIMEOUT_MS = 10_000;

/** Lower case: viem refuses an address whose mixed case is not its checksum, and the caller's may be any case. */
const lowerAddress = (a: string): `0x${string}` => a.toLowerCase() as `0x${string}`;

const address = (a: string | undefined): `0x${string}` | null =>
  a === undefined ? null : (a.toLowerCase() as `0x${string}`);

/** The plan of `object` `id` at `batchId` (default: the frozen batch, else the latest), with the chain's state when it can be read. */
export async function exitAnswer(
  store: LevelStore,
  engine: HashEngine,
  object: string,
  id: string,
  batchId: number | undefined,
  settings: ExitSettings,
): Promise<ExitPlan | PlanWithState> {
  const plan = await withSnapshot(store, (view) =>
    makeExitPlan(view, engine, object, id, batchId, {
      exchange: address(settings.exchange),
      verifier: address(settings.verifier),
    }),
  );
  if (settings.rpcUrl === undefined || plan.exchange === null) return plan;
  return withChainState(plan, settings.rpcUrl, settings.timeoutMs ?? DEFAULT_TIMEOUT_MS);
}

/** A node's chain id never changes: asked once per URL (a failure is not kept, so it is asked again). */
const chainIds = new Map<string, number>();

/** The chain id of the node at `rpcUrl`, or null when it cannot be read within `timeoutMs`. */
export async function baseChainId(rpcUrl: string, timeoutMs: number): Promise<number | null> {
  const known = chainIds.get(rpcUrl);
  if (known !== undefined) return known;
  try {
    const id = await rpcClient(rpcUrl, timeoutMs).getChainId();
    chainIds.set(rpcUrl, id);
    return id;
  } catch {
    return null;
  }
}

/** readExitState over the node at `rpcUrl`, with its chain id and its latest block's time. */
export async function withChainState(
  plan: ExitPlan,
  rpcUrl: string,
  timeoutMs: number,
): Promise<PlanWithState> {
  const client = rpcClient(rpcUrl, timeoutMs);
  const call: EthCall = async ({ to, data, from }) =>
    (await client.call({ to, data, ...(from ? { account: lowerAddress(from) } : {}) })).data ?? "0x";
  let chainId: number;
  let now: bigint;
  try {
    [chainId, now] = await Promise.all([
      client.getChainId(),
      client.getBlock({ blockTag: "latest" }).then((b) => b.timestamp),
    ]);
  } catch (err) {
    return { ...plan, chain: emptyChainState([`the base chain's node: ${rpcMessage(err)}`]) };
  }
  return readExitState(call, { ...plan, chain_id: chainId }, { now });
}
