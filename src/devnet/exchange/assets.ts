/**
 * The devnet's on-chain assets: what each asset id of its state (the traffic's spot tokens, the
 * perpetual collateral) pays when a user withdraws after an escape, in StarkEx's encoding (the
 * asset info is the selector of ERC20Token(address) and the token's address, or of ETH()).
 */
import { concat, encodeAbiParameters, toFunctionSelector, type Address, type Hex } from "viem";

export interface DevnetAsset {
  /** The asset id the devnet's vaults (or, perpetual, the collateral) hold. */
  readonly assetType: bigint;
  /** The devnet's own ERC-20 token (contracts/DevnetToken.sol), or ETH. */
  readonly kind: "erc20" | "eth";
  /** Units of the token per quantized unit. */
  readonly quantum: bigint;
}

/** The perpetual collateral's asset type (the exchange's getSystemAssetType()). */
export const SYSTEM_ASSET_TYPE = 0x02893294412a4c8f915f75892b395ebbf6859ec246ec365c3b1f56f47c3a0a5dn;

/** The devnet token's whole supply, minted to the exchange (10^30 units: no escape can exhaust it). */
export const TOKEN_SUPPLY = 10n ** 30n;

/** The spot tokens the traffic uses (0xa000..0xa002) and the perpetual collateral. */
const SPOT: readonly DevnetAsset[] = [
  { assetType: 0xa000n, kind: "erc20", quantum: 1000n },
  { assetType: 0xa001n, kind: "eth", quantum: 10n ** 10n },
  { assetType: 0xa002n, kind: "erc20", quantum: 1n },
];
const PERPETUAL: readonly DevnetAsset[] = [{ assetType: SYSTEM_ASSET_TYPE, kind: "erc20", quantum: 1n }];

export function devnetAssets(perpetual: boolean): readonly DevnetAsset[] {
  return perpetual ? PERPETUAL : SPOT;
}

/** StarkEx's asset info of an asset: ERC20Token(address) with the token, or ETH(). */
export function assetInfo(asset: DevnetAsset, token: Address): Hex {
  return asset.kind === "eth"
    ? toFunctionSelector("ETH()")
    : concat([
        toFunctionSelector("ERC20Token(address)"),
        encodeAbiParameters([{ type: "address" }], [token]),
      ]);
}
