import { DacdError } from "../../errors.js";
import type { HashEngine } from "../../verifier/hash/engine.js";
import type { LevelStore } from "../../storage/level-store.js";
import type { FrozenSharedState } from "../../storage/onchain-record.js";
import type { PositionLeaf, VaultLeaf } from "../../model/state-update.js";
import { parseLeafLine } from "../formats.js";
import { makeProof, type Proof } from "../proof.js";
import { frozenBatchNote } from "../exit/plan.js";
import { hashChain, pathNodes, pedersen } from "./path.js";
import {
  perpetualEscape,
  positionValues,
  type EscapeSharedState,
  type PerpetualEscape,
} from "./perpetual.js";
import type { MerklePath } from "./rows.js";
import type { EscapeSource } from "./source.js";
import { spotEscape, type SpotEscape } from "./spot.js";

/**
 * A dacd proof (dacd-proof/1) as the base chain's escape verifiers take it: the vault tree of a
 * spot profile or the position tree of the perpetual one. Escapes are for validium vaults, so the
 * rollup_vault tree (whose data is on the chain already) and the order trees have none.
 */

export type OnchainEscape = SpotEscape | PerpetualEscape;

/** The objects with an on-chain escape, as `dacd proof` names them. */
export const ONCHAIN_OBJECTS: Readonly<Record<string, "vault" | "position">> = {
  vault: "vault",
  vaults: "vault",
  position: "position",
  positions: "position",
};

const big = (hex: string): bigint => BigInt("0x" + hex);

/** `shared`: the frozen batch's shared state, for a position proof at that batch. */
export async function onchainFromProof(
  engine: HashEngine,
  proof: Proof,
  shared?: EscapeSharedState,
): Promise<OnchainEscape> {
  if (proof.kind !== "merkle" || !proof.siblings || (proof.tree !== "vault" && proof.tree !== "position"))
    throw new DacdError(
      "BAD_INPUT",
      `the ${proof.tree} tree has no on-chain escape: only vault (spot) and position (perpetual) do`,
    );
  const index = BigInt(proof.leaf_id);
  const leafHash = big(proof.leaf_hash);
  const siblings = proof.siblings.map(big);
  const path: MerklePath = { index, siblings, nodes: await pathNodes(engine, leafHash, siblings, index) };
  if (path.nodes[siblings.length] !== big(proof.root))
    throw new DacdError("STORE", `the ${proof.tree} ${proof.leaf_id} path does not lead to the batch's root`);
  const source: EscapeSource = {
    profile: proof.profile,
    batch_id: proof.batch_id,
    sequence_number: proof.sequence_number,
  };
  const j = proof.leaf;
  if (proof.tree === "vault") {
    const v = parseLeafLine("vault", `0,${j.stark_key},${j.token},${j.balance}`, "leaf").leaf as VaultLeaf;
    const keyAssetHash = await pedersen(engine, v.key, v.token);
    if ((await pedersen(engine, keyAssetHash, v.balance)) !== leafHash)
      throw new DacdError("STORE", `vault ${proof.leaf_id}: the vault does not hash to its leaf`);
    return spotEscape(
      { starkKey: v.key, assetId: v.token, quantizedAmount: v.balance },
      keyAssetHash,
      path,
      source,
    );
  }
  const p = parseLeafLine("position", JSON.stringify({ ...j, position_id: "0" }), "leaf")
    .leaf as PositionLeaf;
  const states = await hashChain(engine, positionValues(p));
  if (states[states.length - 1] !== leafHash)
    throw new DacdError("STORE", `position ${proof.leaf_id}: the position does not hash to its leaf`);
  return perpetualEscape(p, states, path, source, shared);
}

/** The shared state the base-chain watch stored for the frozen batch, if the proof is at that batch. */
export async function frozenSharedState(
  store: LevelStore,
  batchId: number,
): Promise<EscapeSharedState | undefined> {
  const s = (await store.onchain.cursor())?.frozen?.shared_state;
  if (!s || s.batch_id !== batchId) return undefined;
  return escapeSharedState(s);
}

/** The stored shared state as an escape takes it. */
export function escapeSharedState(s: FrozenSharedState): EscapeSharedState {
  return {
    words: s.words.map((w) => BigInt(w)),
    txHash: s.tx_hash,
    ...(s.system_asset_type === undefined ? {} : { systemAssetType: BigInt(s.system_asset_type) }),
  };
}

/** `dacd proof vault|position ID --format starkex [--batch N]`: the proof, on-chain. */
export async function makeOnchainProof(
  store: LevelStore,
  engine: HashEngine,
  object: string,
  id: string,
  batchId?: number,
): Promise<OnchainEscape> {
  if (ONCHAIN_OBJECTS[object] === undefined)
    throw new DacdError(
      "BAD_INPUT",
      `${object} has no on-chain escape: only vault (spot profiles) and position (perpetual) do`,
    );
  const proof = await makeProof(store, engine, object, id, batchId);
  const shared = proof.tree === "position" ? await frozenSharedState(store, proof.batch_id) : undefined;
  const frozen = await store.onchain.frozenBatchId();
  return withFrozenLabel(await onchainFromProof(engine, proof, shared), frozen);
}

/**
 * A proof at another batch than the one the exchange froze at (when the store's base-chain watch
 * saw the freeze) says so: the escape verifier refuses it. A proof at the frozen batch is left as
 * it is, the same as the escape kit's file of it.
 */
export function withFrozenLabel(escape: OnchainEscape, frozenBatchId: number | undefined): OnchainEscape {
  if (frozenBatchId === undefined || escape.batch_id === undefined || escape.batch_id === frozenBatchId)
    return escape;
  return {
    ...escape,
    frozen_batch_id: frozenBatchId,
    at_frozen_batch: false,
    frozen_batch_note: frozenBatchNote(escape.batch_id, frozenBatchId),
  };
}
