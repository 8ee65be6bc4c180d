/** The escape API's JSON answers, each read from one snapshot of the store. */
import { makeProof } from "../escape/proof.js";
import { showLeaf, storeProfile } from "../inspect/inspect.js";
import type { BatchRecord } from "../storage/batch-record.js";
import type { LevelStore } from "../storage/level-store.js";
import { withSnapshot } from "../storage/snapshot.js";
import type { HashEngine } from "../verifier/hash/engine.js";
import type { ExitSettings } from "../escape/exit/settings.js";
import { ApiError } from "./api-error.js";
import { leafId, signedBatch, treeOf } from "./request-params.js";
import type { ApiRoute } from "./routes.js";

/** The routes answered with JSON computed from the store. */
export type JsonRoute = Extract<
  ApiRoute,
  "batches_latest" | "leaf" | "proof" | "escape" | "exit" | "keys" | "escape_info"
>;

export interface JsonAnswer {
  readonly body: unknown;
  /** The request named its batch: the answer never changes. */
  readonly batchGiven: boolean;
}

export interface AnswerSource {
  readonly store: LevelStore;
  readonly engine: HashEngine;
  /** The base chain's contracts, shown on the escape page. */
  readonly contracts: { readonly exchange: string; readonly verifier: string } | undefined;
  /** The exit plans' contracts and RPC URL. */
  readonly exit?: ExitSettings;
}

/** Each base-chain read's time-out for an exit plan's state (within the answer's time-out). */
const EXIT_RPC_TIMEOUT_MS = 4_000;

/** The answer of `route` for the path segments `seg` ("", "v1", ...) at the batch asked for. */
export function answerJson(
  source: AnswerSource,
  route: JsonRoute,
  seg: readonly string[],
  batchText: string | undefined,
): Promise<JsonAnswer> {
  if (route === "exit") return exitAnswer(source, seg, batchText);
  if (route === "keys") return keyAnswer(source, seg, batchText);
  if (route === "escape_info") return escapeInfoAnswer(source, batchText);
  return withSnapshot(source.store, async (view) => {
    const record = await signedBatch(view, batchText);
    if (route === "batches_latest") return { body: await latestBatch(view, record), batchGiven: false };
    return {
      body: await leafAnswer(view, source.engine, route, seg, record),
      batchGiven: batchText !== undefined,
    };
  });
}

/**
 * What the escape page needs besides a proof: the tree, the latest root, the contracts, and the
 * base chain's id (read from base_chain_rpc_url, outside the snapshot) so that the page checks the
 * user's wallet against it.
 */
async function escapeInfoAnswer(source: AnswerSource, batchText: string | undefined): Promise<JsonAnswer> {
  const rpcUrl = source.exit?.rpcUrl;
  let chainId: number | null = null;
  if (rpcUrl !== undefined) {
    const { baseChainId } = await import("../chain/exit-reader.js");
    chainId = await baseChainId(rpcUrl, EXIT_RPC_TIMEOUT_MS);
  }
  const body = await withSnapshot(source.store, async (view) =>
    escapeInfo(view, await signedBatch(view, batchText), source, chainId),
  );
  return { body, batchGiven: false };
}

async function escapeInfo(
  view: LevelStore,
  record: BatchRecord,
  source: AnswerSource,
  chainId: number | null,
): Promise<unknown> {
  const { profile } = await storeProfile(view);
  return {
    profile: profile.name,
    tree: profile.main.name,
    batch_id: record.batch_id,
    sequence_number: record.sequence_number,
    root: "0x" + (record.roots[profile.main.name] ?? ""),
    tree_height: profile.main.height,
    escape_contracts: source.contracts ?? null,
    chain_id: chainId,
  };
}

/**
 * The batch the other answers default to: the latest this member signed, or once the exchange is
 * frozen the batch it froze at (escapes are checked against its state). Both ids are given, so a
 * reader sees which one this is and why.
 */
async function latestBatch(view: LevelStore, record: BatchRecord): Promise<unknown> {
  return {
    batch_id: record.batch_id,
    sequence_number: record.sequence_number,
    roots: record.roots,
    claim_hash: record.claim_hash,
    accepted_at: record.accepted_at ?? null,
    latest_signed_batch_id: (await view.getCursor())?.last_accepted_batch_id ?? null,
    frozen_batch_id: (await view.onchain.frozenBatchId()) ?? null,
  };
}

/** A leaf, its proof, or its on-chain escape (vault and position trees only). */
async function leafAnswer(
  view: LevelStore,
  engine: HashEngine,
  route: "leaf" | "proof" | "escape",
  seg: readonly string[],
  record: BatchRecord,
): Promise<unknown> {
  const spec = await treeOf(view, seg[3]!);
  if (route === "escape" && spec.name !== "vault" && spec.name !== "position")
    throw new ApiError(
      404,
      `the ${spec.name} tree has no on-chain escape: only vault (spot) and position (perpetual) do`,
      "tree",
    );
  const id = leafId(seg[4]!, spec);
  if (route === "leaf") return showLeaf(view, engine, spec.name, id, record.batch_id);
  if (route === "escape")
    return (await onchain()).makeOnchainProof(view, engine, spec.name, id, record.batch_id);
  return makeProof(view, engine, spec.name, id, record.batch_id);
}

/**
 * A vault's or position's exit plan: from the snapshot, then (with an RPC URL and the exchange's
 * address) the chain's state, read after the snapshot is released. With the chain read, the answer
 * changes with the chain, so it is cached as the latest batch's is.
 */
async function exitAnswer(
  source: AnswerSource,
  seg: readonly string[],
  batchText: string | undefined,
): Promise<JsonAnswer> {
  const settings = source.exit ?? {};
  const { makeExitPlan } = await import("../escape/exit/from-store.js");
  const plan = await withSnapshot(source.store, async (view) => {
    const record = await signedBatch(view, batchText);
    const spec = await treeOf(view, seg[3]!);
    const id = leafId(seg[4]!, spec);
    return makeExitPlan(view, source.engine, spec.name, id, record.batch_id, {
      exchange: address(settings.exchange),
      verifier: address(settings.verifier),
    });
  });
  if (settings.rpcUrl === undefined || plan.exchange === null)
    return { body: plan, batchGiven: batchText !== undefined };
  const { withChainState } = await import("../chain/exit-reader.js");
  return { body: await withChainState(plan, settings.rpcUrl, EXIT_RPC_TIMEOUT_MS), batchGiven: false };
}

/** A stark key's vaults or positions at the batch: a walk of the tree (by-key.ts). */
async function keyAnswer(
  source: AnswerSource,
  seg: readonly string[],
  batchText: string | undefined,
): Promise<JsonAnswer> {
  const { leavesOfKey, parseStarkKey } = await import("../escape/exit/by-key.js");
  const body = await withSnapshot(source.store, async (view) => {
    const record = await signedBatch(view, batchText);
    let key: bigint;
    try {
      key = parseStarkKey(seg[4]!);
    } catch (err) {
      throw new ApiError(400, (err as Error).message, "starkKey");
    }
    return leavesOfKey(view, source.engine, key, record.batch_id);
  });
  return { body, batchGiven: batchText !== undefined };
}

const address = (a: string | undefined): `0x${string}` | null =>
  a === undefined ? null : (a.toLowerCase() as `0x${string}`);

/** The on-chain format's module, with the ABI encoder: loaded with the first escape asked for. */
const onchain = (): Promise<typeof import("../escape/onchain/from-proof.js")> =>
  import("../escape/onchain/from-proof.js");
