import type { Hex } from "viem";
import { escapeCalldata, spotClaimHash, verifyEscapeCalldata, type SpotClaim } from "./abi.js";
import { pathRows, rowsToWords, word0x, type MerklePath, type Row } from "./rows.js";
import { sourceFields, type EscapeSource } from "./source.js";

/**
 * The spot escape (docs/escape-formats.md, "Spot"): the words `EscapeVerifier.verifyEscape`
 * takes for a vault, the fact it registers and the call data of the two transactions.
 */

export const SPOT_ESCAPE_FORMAT = "starkex-escape-spot/1";

/** A vault as the verifier sees it: an empty vault is key 0, asset 0, amount 0. */
export interface SpotVault {
  readonly starkKey: bigint;
  readonly assetId: bigint;
  readonly quantizedAmount: bigint;
}

export interface SpotEscape {
  format: typeof SPOT_ESCAPE_FORMAT;
  profile?: string;
  batch_id?: number;
  sequence_number?: number;
  /** An empty vault: the proof is valid, and there is nothing to withdraw. */
  empty: boolean;
  vault_id: string;
  stark_key: Hex;
  asset_id: Hex;
  quantized_amount: string;
  vault_root: Hex;
  tree_height: number;
  /** The `uint256[] escapeProof` argument: 2·(tree_height + 3) words. */
  escape_proof: Hex[];
  /** keccak256(abi.encode(stark_key, asset_id, quantized_amount, vault_root, tree_height, vault_id)). */
  claim_hash: Hex;
  calldata: { verify_escape: Hex; escape: Hex };
  /** Only in a proof at another batch than the frozen one, from a store that saw the freeze (makeOnchainProof). */
  frozen_batch_id?: number;
  at_frozen_batch?: false;
  frozen_batch_note?: string;
}

/**
 * The rows: stark key ‖ asset id, H(stark key, asset id) ‖ amount (which hashes to the leaf), the
 * path from the leaf up, root ‖ vault id. `keyAssetHash` is H(starkKey, assetId).
 */
export function spotEscapeRows(vault: SpotVault, keyAssetHash: bigint, path: MerklePath): Row[] {
  return [
    [vault.starkKey, vault.assetId],
    [keyAssetHash, vault.quantizedAmount],
    ...pathRows(path, path.index),
  ];
}

/** The on-chain JSON of a vault's escape; `path.nodes[0]` must be the vault's leaf hash. */
export function spotEscape(
  vault: SpotVault,
  keyAssetHash: bigint,
  path: MerklePath,
  source?: EscapeSource,
): SpotEscape {
  const words = rowsToWords(spotEscapeRows(vault, keyAssetHash, path));
  const claim: SpotClaim = {
    ...vault,
    vaultRoot: path.nodes[path.nodes.length - 1]!,
    treeHeight: path.siblings.length,
    vaultId: path.index,
  };
  return {
    format: SPOT_ESCAPE_FORMAT,
    ...sourceFields(source),
    empty: vault.starkKey === 0n && vault.assetId === 0n && vault.quantizedAmount === 0n,
    vault_id: path.index.toString(),
    stark_key: word0x(vault.starkKey),
    asset_id: word0x(vault.assetId),
    quantized_amount: vault.quantizedAmount.toString(),
    vault_root: word0x(claim.vaultRoot),
    tree_height: claim.treeHeight,
    escape_proof: words.map(word0x),
    claim_hash: spotClaimHash(claim),
    calldata: { verify_escape: verifyEscapeCalldata(words), escape: escapeCalldata(claim) },
  };
}
