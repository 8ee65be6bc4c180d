import type { PositionLeaf } from "../../../model/state-update.js";
import {
  perpetualEscape,
  positionValues,
  type EscapeSharedState,
  type PerpetualEscape,
} from "../../onchain/perpetual.js";
import type { MerklePath } from "../../onchain/rows.js";
import type { EscapeSource } from "../../onchain/source.js";
import { spotEscape, type SpotEscape } from "../../onchain/spot.js";
import type { LeafKind } from "./format.js";
import { leafSiblings, type ShardOut } from "./shard.js";

/**
 * A leaf's on-chain proof from its shard: its path put together from the shard's siblings, its
 * nodes hashed up to the root, which must be the kit's, then the proof object `dacd proof …
 * --format starkex` builds from the store (the onchain module's spotEscape / perpetualEscape).
 * Browser-safe: the hash is passed in.
 */

/** H(x, y), the StarkWare Pedersen hash; sync or async. */
export type Pedersen = (x: bigint, y: bigint) => bigint | Promise<bigint>;
export type KitProof = SpotEscape | PerpetualEscape;

export interface LeafProofContext {
  readonly tree: string;
  readonly leaf: LeafKind;
  readonly height: number;
  readonly root: bigint;
  readonly source: EscapeSource;
  readonly shared?: EscapeSharedState;
  readonly hash: Pedersen;
  /** The empty subtrees' roots, E[0] (the empty leaf's hash) to E[height]. */
  readonly empties: readonly bigint[];
}

export class RootMismatch extends Error {
  override readonly name = "RootMismatch";
}

const hex64 = (v: bigint): string => "0x" + v.toString(16).padStart(64, "0");

/** A Pedersen hash chain from 0: states[0] = 0, states[i + 1] = H(states[i], values[i]). */
export async function hashChain(hash: Pedersen, values: readonly bigint[]): Promise<bigint[]> {
  const states = [0n];
  for (const v of values) states.push(await hash(states[states.length - 1]!, v));
  return states;
}

/** E[0] … E[height]: the empty leaf's hash and the empty subtrees' roots above it. */
export async function emptySubtrees(hash: Pedersen, leaf: LeafKind, height: number): Promise<bigint[]> {
  const e = [
    leaf === "vault"
      ? await hash(await hash(0n, 0n), 0n)
      : (await hashChain(hash, positionValues({ publicKey: 0n, collateral: 0n, assets: [] })))[2]!,
  ];
  for (let k = 0; k < height; k++) e.push(await hash(e[k]!, e[k]!));
  return e;
}

/** Leaf j's proof; throws RootMismatch when its path does not lead to the context's root. */
export async function shardLeafProof(
  ctx: LeafProofContext,
  shard: ShardOut,
  j: number,
  where: string,
): Promise<KitProof> {
  const { hash } = ctx;
  const leaf = shard.leaves[j]!;
  const id = leaf.id;
  const siblings = leafSiblings(shard, j).map((s, k) => s ?? ctx.empties[k]!);
  let leafHash: bigint;
  let keyAsset = 0n;
  let states: bigint[] = [];
  if (leaf.vault) {
    keyAsset = await hash(leaf.vault.key, leaf.vault.token);
    leafHash = await hash(keyAsset, leaf.vault.balance);
  } else {
    states = await hashChain(hash, positionValues(leaf.position!));
    leafHash = states[states.length - 1]!;
  }
  const nodes = [leafHash];
  for (let k = 0; k < siblings.length; k++) {
    const node = nodes[k]!;
    const right = ((id >> BigInt(k)) & 1n) === 1n;
    nodes.push(await (right ? hash(siblings[k]!, node) : hash(node, siblings[k]!)));
  }
  const top = nodes[siblings.length]!;
  if (top !== ctx.root)
    throw new RootMismatch(
      `${ctx.tree} ${id}: its path in ${where} leads to ${hex64(top)}, not to the kit's root ${hex64(ctx.root)}`,
    );
  const path: MerklePath = { index: id, siblings, nodes };
  if (leaf.vault)
    return spotEscape(
      { starkKey: leaf.vault.key, assetId: leaf.vault.token, quantizedAmount: leaf.vault.balance },
      keyAsset,
      path,
      ctx.source,
    );
  return perpetualEscape(leaf.position as PositionLeaf, states, path, ctx.source, ctx.shared);
}
