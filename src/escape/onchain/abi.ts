import { encodeAbiParameters, encodeFunctionData, keccak256, parseAbi, type Hex } from "viem";

/**
 * The Ethereum side of an escape: the fact hash the spot verifier registers and the call data for
 * the two transactions, through viem's ABI encoder (docs/escape-formats.md).
 */

const SPOT_ABI = parseAbi([
  "function verifyEscape(uint256[] escapeProof)",
  "function escape(uint256 starkKey, uint256 vaultId, uint256 assetId, uint256 quantizedAmount)",
]);

const SIX_WORDS = Array.from({ length: 6 }, () => ({ type: "uint256" }) as const);

export interface SpotClaim {
  readonly starkKey: bigint;
  readonly assetId: bigint;
  readonly quantizedAmount: bigint;
  readonly vaultRoot: bigint;
  readonly treeHeight: number;
  readonly vaultId: bigint;
}

/** keccak256(abi.encode(starkKey, assetId, quantizedAmount, vaultRoot, treeHeight, vaultId)). */
export function spotClaimHash(c: SpotClaim): Hex {
  return keccak256(
    encodeAbiParameters(SIX_WORDS, [
      c.starkKey,
      c.assetId,
      c.quantizedAmount,
      c.vaultRoot,
      BigInt(c.treeHeight),
      c.vaultId,
    ]),
  );
}

/** `EscapeVerifier.verifyEscape(uint256[] escapeProof)`, selector included. */
export function verifyEscapeCalldata(words: readonly bigint[]): Hex {
  return encodeFunctionData({ abi: SPOT_ABI, functionName: "verifyEscape", args: [words] });
}

/** The frozen exchange's `escape(uint256 starkKey, uint256 vaultId, uint256 assetId, uint256 quantizedAmount)`. */
export function escapeCalldata(c: SpotClaim): Hex {
  return encodeFunctionData({
    abi: SPOT_ABI,
    functionName: "escape",
    args: [c.starkKey, c.vaultId, c.assetId, c.quantizedAmount],
  });
}

const PERPETUAL_ABI = parseAbi([
  "function verifyEscape(uint256[] merkleProof, uint256 nAssets, uint256[] sharedState)",
  "function escape(uint256 starkKey, uint256 vaultId, uint256 quantizedAmount)",
  "function withdraw(uint256 ownerKey, uint256 assetType)",
]);

/** `PerpetualEscapeVerifier.verifyEscape(uint256[] merkleProof, uint256 nAssets, uint256[] sharedState)`. */
export function perpetualVerifyEscapeCalldata(
  merkleProof: readonly bigint[],
  nAssets: number,
  sharedState: readonly bigint[],
): Hex {
  return encodeFunctionData({
    abi: PERPETUAL_ABI,
    functionName: "verifyEscape",
    args: [merkleProof, BigInt(nAssets), sharedState],
  });
}

/** The frozen perpetual exchange's `escape(uint256 starkKey, uint256 vaultId, uint256 quantizedAmount)`: the position id as vaultId. */
export function perpetualEscapeCalldata(publicKey: bigint, positionId: bigint, amount: bigint): Hex {
  return encodeFunctionData({
    abi: PERPETUAL_ABI,
    functionName: "escape",
    args: [publicKey, positionId, amount],
  });
}

/** `withdraw(uint256 ownerKey, uint256 assetType)`: the escaped collateral, by its owner. */
export function withdrawCalldata(ownerKey: bigint, assetType: bigint): Hex {
  return encodeFunctionData({ abi: PERPETUAL_ABI, functionName: "withdraw", args: [ownerKey, assetType] });
}
