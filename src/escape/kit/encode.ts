import { keccak_256 } from "@noble/hashes/sha3.js";
import type { PositionLeaf, VaultLeaf } from "../../model/state-update.js";
import {
  PERPETUAL_ESCAPE_FORMAT,
  SHARED_STATE_NOTE,
  sharedStateFields,
  type EscapeSharedState,
} from "../onchain/perpetual.js";
import { SPOT_ESCAPE_FORMAT } from "../onchain/spot.js";
import { sourceFields, type EscapeSource } from "../onchain/source.js";

/**
 * The text of an on-chain proof for the kit, byte for byte what `dacd proof … --format starkex`
 * prints (the onchain module's spotEscape / perpetualEscape through printJson), built from proof
 * rows that are already text (path-stack.ts). The onchain module encodes one proof in about a
 * millisecond (viem's ABI encoder, bigint words); a kit of millions of leaves cannot afford that,
 * and most of a leaf's rows are its neighbour's. build.ts compares this text with the onchain
 * module's for a sample of the leaves and stops on any difference.
 */

const MASK_248 = (1n << 248n) - 1n;

const selector = (signature: string): string =>
  Buffer.from(keccak_256(new TextEncoder().encode(signature)).subarray(0, 4)).toString("hex");
const VERIFY_ESCAPE = selector("verifyEscape(uint256[])");
const ESCAPE = selector("escape(uint256,uint256,uint256,uint256)");
const PERPETUAL_VERIFY_ESCAPE = selector("verifyEscape(uint256[],uint256,uint256[])");

const hex64 = (v: bigint): string => v.toString(16).padStart(64, "0");
const hex63 = (v: bigint): string => {
  if (v < 0n || v >> 252n !== 0n) throw new RangeError(`0x${v.toString(16)} is not a field element`);
  return v.toString(16).padStart(63, "0");
};
/** A row of two values (each below 2^252) as 128 hex digits. */
const row = (left: bigint, right: bigint): string => hex63(left) + hex63(right) + "00";
/** The last row: root ‖ 4 zero bits ‖ a 248-bit index. */
const lastRow = (rootHex63: string, index: bigint): string => {
  if (index < 0n || index > MASK_248) throw new RangeError(`index ${index} does not fit 248 bits`);
  return rootHex63 + hex63(index) + "00";
};
const words = (rows: readonly string[]): string[] =>
  rows.flatMap((r) => ["0x" + r.slice(0, 64), "0x" + r.slice(64)]);

export interface KitTree {
  /** The tree's root as 63 hex digits (a field element). */
  readonly rootHex63: string;
  readonly height: number;
  readonly source: EscapeSource;
  /** Perpetual, at the frozen batch: its shared state, and the state's words as call data (length first). */
  readonly shared?: { readonly state: EscapeSharedState; readonly calldataHex: string };
}

/** A kit tree's shared state, its call data tail written once. */
export function kitSharedState(state: EscapeSharedState): NonNullable<KitTree["shared"]> {
  return { state, calldataHex: hex64(BigInt(state.words.length)) + state.words.map(hex64).join("") };
}

/** Hex or decimal digits need no escaping: the JSON string is the text in quotes. */
const quoted = (plain: string): string => `"${plain}"`;
/** A row's two words as the lines of a JSON array of strings, four spaces in. */
const rowWords = (r: string): string => `    "0x${r.slice(0, 64)}",\n    "0x${r.slice(64)}"`;

/** The proof's first lines, up to the fields of the leaf: `{`, the format and the source. */
function spotHead(tree: KitTree): string {
  const head = JSON.stringify({ format: SPOT_ESCAPE_FORMAT, ...sourceFields(tree.source) }, null, 2);
  return head.slice(0, head.length - 2) + ",\n";
}
const spotHeads = new WeakMap<KitTree, string>();

/**
 * The spot proof (SpotEscape) of a vault; `pathRows` are the tree's rows, leaf level first. The
 * text is put together as JSON.stringify(…, null, 2) lays the object out, without building it:
 * the kit prints millions of them.
 */
export function spotProofText(
  tree: KitTree,
  index: bigint,
  vault: VaultLeaf,
  keyAssetHash: Uint8Array,
  pathRows: readonly string[],
): string {
  let head = spotHeads.get(tree);
  if (head === undefined) spotHeads.set(tree, (head = spotHead(tree)));
  const rows = [
    row(vault.key, vault.token),
    Buffer.from(keyAssetHash).toString("hex").slice(1) + hex63(vault.balance) + "00",
    ...pathRows,
    lastRow(tree.rootHex63, index),
  ];
  const key64 = hex64(vault.key);
  const token64 = hex64(vault.token);
  const balance64 = hex64(vault.balance);
  const index64 = hex64(index);
  const claim = keccak_256(
    Buffer.from(
      key64 + token64 + balance64 + "0" + tree.rootHex63 + hex64(BigInt(tree.height)) + index64,
      "hex",
    ),
  );
  const empty = vault.key === 0n && vault.token === 0n && vault.balance === 0n;
  const verifyEscape = `0x${VERIFY_ESCAPE}${hex64(32n)}${hex64(BigInt(rows.length * 2))}${rows.join("")}`;
  const escape = `0x${ESCAPE}${key64}${index64}${token64}${balance64}`;
  const fields: [string, string][] = [
    ["empty", String(empty)],
    ["vault_id", quoted(index.toString())],
    ["stark_key", quoted("0x" + key64)],
    ["asset_id", quoted("0x" + token64)],
    ["quantized_amount", quoted(vault.balance.toString())],
    ["vault_root", quoted("0x0" + tree.rootHex63)],
    ["tree_height", String(tree.height)],
    ["escape_proof", `[\n${rows.map(rowWords).join(",\n")}\n  ]`],
    ["claim_hash", quoted("0x" + Buffer.from(claim).toString("hex"))],
    ["calldata", `{\n    "verify_escape": "${verifyEscape}",\n    "escape": "${escape}"\n  }`],
  ];
  return head + fields.map(([name, value]) => `  "${name}": ${value}`).join(",\n") + "\n}\n";
}

/**
 * The perpetual proof (PerpetualEscape) of a position: `values` are its hash chain's values
 * (positionValues) and `states` the chain's states from 0 (states[values.length] the leaf).
 */
export function perpetualProofText(
  tree: KitTree,
  index: bigint,
  position: PositionLeaf,
  values: readonly bigint[],
  states: readonly bigint[],
  pathRows: readonly string[],
): string {
  const rows = [
    ...values.map((v, i) => row(states[i]!, v)),
    ...pathRows,
    lastRow(tree.rootHex63, index << BigInt(values.length)),
  ];
  const proof = words(rows);
  const shared = tree.shared;
  // verifyEscape(merkleProof, nAssets, sharedState): the two arrays' offsets around nAssets, then each array.
  const verifyCalldata = (): `0x${string}` =>
    `0x${PERPETUAL_VERIFY_ESCAPE}${hex64(96n)}${hex64(BigInt(position.assets.length))}${hex64(
      96n + 32n * BigInt(proof.length + 1),
    )}${hex64(BigInt(proof.length))}${rows.join("")}${shared!.calldataHex}`;
  const withShared = shared
    ? sharedStateFields(
        values,
        BigInt("0x" + tree.rootHex63),
        tree.height,
        index,
        shared.state,
        verifyCalldata,
      )
    : { note: SHARED_STATE_NOTE };
  return (
    JSON.stringify(
      {
        format: PERPETUAL_ESCAPE_FORMAT,
        ...sourceFields(tree.source),
        empty: position.publicKey === 0n && position.collateral === 0n && position.assets.length === 0,
        position_id: index.toString(),
        public_key: "0x" + hex64(position.publicKey),
        collateral_balance: position.collateral.toString(),
        assets: position.assets.map((a) => ({
          asset_id: "0x" + hex64(a.assetId),
          balance: a.balance.toString(),
          cached_funding_index: a.fundingIndex.toString(),
        })),
        n_assets: position.assets.length,
        position_root: "0x0" + tree.rootHex63,
        tree_height: tree.height,
        merkle_proof: proof,
        ...withShared,
      },
      null,
      2,
    ) + "\n"
  );
}
