import { keccak_256 } from "@noble/hashes/sha3.js";
import type { HashEngine } from "../../verifier/hash/engine.js";
import { FIELD_PRIME } from "../../model/field.js";
import { bigintToBytes32, bytesToBigint } from "../../util/bytes.js";
import type { ProofVerdict } from "../proof.js";

/**
 * Checks an on-chain escape proof (`dacd proof … --format starkex`) with no store, from the text of
 * docs/escape-formats.md alone: it shares no code with the encoder (spot.ts, perpetual.ts,
 * rows.ts, abi.ts), so a mistake there is not repeated here. The words are read back into rows;
 * every row's Pedersen hash must be the next row's left or right value as the index's bit says;
 * the zero bits must be zero and every value below the STARK prime; the index must be in the
 * tree; the JSON's fields must be what the words say; for spot, the claim hash and the call data
 * are recomputed (keccak and ABI words built here by hand, not with viem). For the same reason its
 * leaf rules and encodings (the 2^63 bias, the asset id bound, the word layout) are its own, not
 * src/model/leaf-rules.ts's, which every other path shares.
 */

export const ONCHAIN_FORMATS = ["starkex-escape-spot/1", "starkex-escape-perpetual/1"] as const;

/** A proof for this checker: its format names an on-chain escape (any version, so that an unknown one is named). */
export function isOnchainFormat(json: unknown): boolean {
  const format = (json as { format?: unknown } | null)?.format;
  return typeof format === "string" && format.startsWith("starkex-escape-");
}

class Refused extends Error {}
const refuse = (reason: string): never => {
  throw new Refused(reason);
};

const TWO_248 = 1n << 248n;
const MASK_252 = (1n << 252n) - 1n;
const MASK_64 = (1n << 64n) - 1n;
const BIAS = 1n << 63n;
/** Word counts the deployed verifiers accept (EscapeVerifier: 68..198; the perpetual one: 4..402). */
const SPOT_WORDS = { min: 68, max: 198 };
const PERPETUAL_WORDS = { min: 4, max: 402 };

interface Row {
  left: bigint;
  right: bigint;
}

/** A JSON uint256: 0x and 1 to 64 hex digits. */
function uint(v: unknown, what: string): bigint {
  if (typeof v !== "string" || !/^0x[0-9a-fA-F]{1,64}$/.test(v))
    return refuse(`${what} is not 0x hex of at most 64 digits`);
  return BigInt(v);
}

function decimal(v: unknown, what: string, signed = false): bigint {
  const re = signed ? /^(0|-?[1-9][0-9]{0,77})$/ : /^(0|[1-9][0-9]{0,77})$/;
  if (typeof v !== "string" || !re.test(v))
    return refuse(`${what} is not a ${signed ? "signed " : ""}decimal string`);
  return BigInt(v);
}

function smallInt(v: unknown, what: string, min: number, max: number): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max)
    return refuse(`${what} is not an integer from ${min} to ${max}`);
  return v;
}

/**
 * The rows of the words: row i is words 2i (high) and 2i+1 (low) of the 512-bit number
 * left (252 bits) ‖ right (252 bits) ‖ 8 zero bits.
 */
function readRows(words: unknown, what: string, bounds: { min: number; max: number }): Row[] {
  if (!Array.isArray(words)) return refuse(`${what} is not an array of words`);
  if (words.length % 2 !== 0) refuse(`${what} has ${words.length} words: rows are pairs of words`);
  if (words.length < bounds.min || words.length > bounds.max)
    refuse(`${what} has ${words.length} words; the verifier accepts ${bounds.min} to ${bounds.max}`);
  const rows: Row[] = [];
  for (let i = 0; i < words.length; i += 2) {
    const row = i / 2;
    const n = (uint(words[i], `${what}[${i}]`) << 256n) | uint(words[i + 1], `${what}[${i + 1}]`);
    if ((n & 0xffn) !== 0n) refuse(`row ${row}: the 8 low bits of word ${i + 1} are not zero`);
    const left = n >> 260n;
    const right = (n >> 8n) & MASK_252;
    if (left >= FIELD_PRIME) refuse(`row ${row}: the left value is not below the STARK prime`);
    if (right >= FIELD_PRIME) refuse(`row ${row}: the right value is not below the STARK prime`);
    rows.push({ left, right });
  }
  return rows;
}

/** The last row: root ‖ 4 zero bits ‖ a 248-bit index. */
function lastRow(rows: Row[]): { root: bigint; index: bigint } {
  const last = rows[rows.length - 1]!;
  if (last.right >= TWO_248) refuse("the last row: the 4 bits between the root and the index are not zero");
  return { root: last.left, index: last.right };
}

/**
 * Every row but the last hashes to one value of the next row: its left where bit r of
 * `selectors` is 0, its right where it is 1.
 */
async function checkChain(engine: HashEngine, rows: Row[], selectors: bigint): Promise<void> {
  const n = rows.length - 1;
  const xs = new Uint8Array(n * 32);
  const ys = new Uint8Array(n * 32);
  rows.slice(0, n).forEach((r, i) => {
    xs.set(bigintToBytes32(r.left), i * 32);
    ys.set(bigintToBytes32(r.right), i * 32);
  });
  const hashes = await engine.hashMany(xs, ys);
  for (let r = 0; r < n; r++) {
    const h = bytesToBigint(hashes, r * 32);
    const right = ((selectors >> BigInt(r)) & 1n) === 1n;
    const want = right ? rows[r + 1]!.right : rows[r + 1]!.left;
    if (h !== want)
      refuse(
        `row ${r} hashes to 0x${h.toString(16)}, not the ${right ? "right" : "left"} value of row ${r + 1}`,
      );
  }
}

function checkRoot(root: bigint, expectedRoot: string | undefined): void {
  if (expectedRoot === undefined) return;
  const hex = expectedRoot.replace(/^0x/i, "");
  if (!/^[0-9a-fA-F]{1,64}$/.test(hex)) refuse("--root is not a hex value of at most 64 digits");
  if (BigInt("0x" + hex) !== root)
    refuse(`the proof's root 0x${root.toString(16)} is not the expected root 0x${hex.toLowerCase()}`);
}

function same(field: string, got: bigint, fromWords: bigint): void {
  if (got !== fromWords)
    refuse(`${field} is not the value the proof's words hold (0x${fromWords.toString(16)})`);
}

const words32 = (values: readonly bigint[]): Uint8Array => {
  const out = new Uint8Array(values.length * 32);
  values.forEach((v, i) => out.set(bigintToBytes32(v), i * 32));
  return out;
};
const hex = (b: Uint8Array): string => "0x" + Buffer.from(b).toString("hex");
const selector = (signature: string): Uint8Array =>
  keccak_256(new TextEncoder().encode(signature)).subarray(0, 4);
const concat = (...parts: Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};

async function checkSpot(
  engine: HashEngine,
  j: Record<string, unknown>,
  expectedRoot?: string,
): Promise<void> {
  const height = smallInt(j.tree_height, "tree_height", 1, 247);
  const rows = readRows(j.escape_proof, "escape_proof", SPOT_WORDS);
  // Vault row, leaf row, one row per level, root row.
  if (rows.length !== height + 3)
    refuse(`escape_proof has ${rows.length} rows; tree_height ${height} needs ${height + 3}`);
  const { root, index } = lastRow(rows);
  if (index >= 1n << BigInt(height)) refuse(`the vault id ${index} is outside a tree of height ${height}`);
  // The first row's hash sits on the left of the second; then the vault id's bits, leaf level first.
  await checkChain(engine, rows, index << 1n);

  const starkKey = rows[0]!.left;
  const assetId = rows[0]!.right;
  const amount = rows[1]!.right;
  same("vault_id", decimal(j.vault_id, "vault_id"), index);
  same("stark_key", uint(j.stark_key, "stark_key"), starkKey);
  same("asset_id", uint(j.asset_id, "asset_id"), assetId);
  same("quantized_amount", decimal(j.quantized_amount, "quantized_amount"), amount);
  same("vault_root", uint(j.vault_root, "vault_root"), root);
  const empty = starkKey === 0n && assetId === 0n && amount === 0n;
  if (j.empty !== undefined && j.empty !== empty)
    refuse(`empty is ${String(j.empty)}, but the vault is ${empty ? "" : "not "}empty`);
  checkRoot(root, expectedRoot);

  const claimWords = [starkKey, assetId, amount, root, BigInt(height), index];
  const claim = hex(keccak_256(words32(claimWords)));
  if (typeof j.claim_hash !== "string" || j.claim_hash.toLowerCase() !== claim)
    refuse(`claim_hash is not keccak256 of the six claim words (${claim})`);

  const calldata = (j.calldata ?? {}) as Record<string, unknown>;
  const words = rows.flatMap((r) => {
    const n = (r.left << 260n) | (r.right << 8n);
    return [n >> 256n, n & ((1n << 256n) - 1n)];
  });
  const verify = hex(
    concat(selector("verifyEscape(uint256[])"), words32([32n, BigInt(words.length), ...words])),
  );
  if (typeof calldata.verify_escape !== "string" || calldata.verify_escape.toLowerCase() !== verify)
    refuse("calldata.verify_escape is not verifyEscape(uint256[]) of escape_proof");
  const escape = hex(
    concat(selector("escape(uint256,uint256,uint256,uint256)"), words32([starkKey, index, assetId, amount])),
  );
  if (typeof calldata.escape !== "string" || calldata.escape.toLowerCase() !== escape)
    refuse("calldata.escape is not escape(stark_key, vault_id, asset_id, quantized_amount)");
}

async function checkPerpetual(
  engine: HashEngine,
  j: Record<string, unknown>,
  expectedRoot?: string,
): Promise<void> {
  const height = smallInt(j.tree_height, "tree_height", 1, 247);
  const nAssets = smallInt(j.n_assets, "n_assets", 0, 0xffff);
  const chain = nAssets + 2;
  const rows = readRows(j.merkle_proof, "merkle_proof", PERPETUAL_WORDS);
  if (rows.length !== chain + height + 1)
    refuse(
      `merkle_proof has ${rows.length} rows; n_assets ${nAssets} and tree_height ${height} need ${chain + height + 1}`,
    );
  const { root, index } = lastRow(rows);
  if ((index & ((1n << BigInt(chain)) - 1n)) !== 0n)
    refuse(`the index's low ${chain} bits (the position's hash chain) are not zero`);
  const positionId = index >> BigInt(chain);
  if (positionId >= 1n << BigInt(height))
    refuse(`the position id ${positionId} is outside a tree of height ${height}`);
  if (rows[0]!.left !== 0n) refuse("the position's hash chain does not start from 0");
  // Row r's hash goes where bit r + 1 of the index says (bit 0 is the chain's start, unused).
  await checkChain(engine, rows, index >> 1n);

  // The chain's right values are the position: assets, public key, collateral << 16 | count.
  const values = rows.slice(0, chain).map((r) => r.right);
  const last = values[chain - 1]!;
  if ((last & 0xffffn) !== BigInt(nAssets))
    refuse(`the position holds ${last & 0xffffn} assets, not n_assets ${nAssets}`);
  if (last >> 16n > MASK_64) refuse("the collateral balance is not a biased 64-bit value");
  same("collateral_balance", decimal(j.collateral_balance, "collateral_balance", true), (last >> 16n) - BIAS);
  same("public_key", uint(j.public_key, "public_key"), values[nAssets]!);
  same("position_id", decimal(j.position_id, "position_id"), positionId);
  same("position_root", uint(j.position_root, "position_root"), root);
  if (!Array.isArray(j.assets) || j.assets.length !== nAssets)
    refuse(`assets does not list n_assets ${nAssets} assets`);
  const assets = j.assets as Record<string, unknown>[];
  let previous = -1n;
  for (let i = 0; i < nAssets; i++) {
    const v = values[i]!;
    const id = v >> 128n;
    if (id >= 1n << 120n) refuse(`asset ${i}: the asset id is not below 2^120`);
    if (id <= previous) refuse(`asset ${i}: the assets are not ascending by id`);
    previous = id;
    const a = (assets[i] ?? {}) as Record<string, unknown>;
    same(`assets[${i}].asset_id`, uint(a.asset_id, `assets[${i}].asset_id`), id);
    same(
      `assets[${i}].cached_funding_index`,
      decimal(a.cached_funding_index, "cached_funding_index", true),
      ((v >> 64n) & MASK_64) - BIAS,
    );
    same(`assets[${i}].balance`, decimal(a.balance, "balance", true), (v & MASK_64) - BIAS);
  }
  const empty = values[nAssets] === 0n && nAssets === 0 && last >> 16n === BIAS;
  if (j.empty !== undefined && j.empty !== empty)
    refuse(`empty is ${String(j.empty)}, but the position is ${empty ? "" : "not "}empty`);
  checkRoot(root, expectedRoot);
  if (j.shared_state !== undefined) checkSharedState(j, rows, values, root, height, positionId);
}

const WORD = 1n << 256n;
const FXP = 1n << 32n;
const toInt256 = (x: bigint): bigint => {
  const m = ((x % WORD) + WORD) % WORD;
  return m >= WORD / 2n ? m - WORD : m;
};

/**
 * The amount the perpetual verifier lets a position withdraw, from the spec's description: the
 * collateral plus each asset's balance times its price, plus the funding owed since the cached
 * indices rounded down to a whole unit (all with 32 fractional bits), taken modulo 2^256 as the
 * contract's unchecked words, then whole units rounded down. Undefined: an asset without a
 * funding index or a price in the shared state.
 */
function expectedAmount(values: readonly bigint[], state: readonly bigint[]): bigint | undefined {
  const nAssets = values.length - 2;
  const nFunding = Number(state[4] ?? 0n);
  const fundingEnd = 5 + 2 * nFunding;
  const nPrices = Number(state[fundingEnd + 1] ?? 0n);
  const table = (from: number, n: number): Map<bigint, bigint> =>
    new Map(Array.from({ length: n }, (_, k) => [state[from + 2 * k] ?? -1n, state[from + 2 * k + 1] ?? 0n]));
  const funding = table(5, nFunding);
  const prices = table(fundingEnd + 2, nPrices);
  let total = ((values[nAssets + 1]! >> 16n) - BIAS) * FXP;
  let fundingOwed = 0n;
  for (const v of values.slice(0, nAssets)) {
    const id = v >> 128n;
    const index = funding.get(id);
    const price = prices.get(id);
    if (index === undefined || price === undefined) return undefined;
    const balance = (v & MASK_64) - BIAS;
    // Both indices are biased alike: their difference is the funding per unit since the cache.
    fundingOwed -= balance * (index - ((v >> 64n) & MASK_64));
    total += balance * price;
  }
  // Rounded down to a multiple of 2^32 (the low bits of the 256-bit word cleared).
  const owedMod = ((fundingOwed % FXP) + FXP) % FXP;
  return toInt256(total + fundingOwed - owedMod) >> 32n;
}

/** With a shared state: it must be this proof's, and the amount, fact and call data what it gives. */
function checkSharedState(
  j: Record<string, unknown>,
  rows: Row[],
  values: readonly bigint[],
  root: bigint,
  height: number,
  positionId: bigint,
): void {
  if (!Array.isArray(j.shared_state) || j.shared_state.length < 8)
    refuse("shared_state is not an array of at least 8 words");
  const state = (j.shared_state as unknown[]).map((w, i) => uint(w, `shared_state[${i}]`));
  same("shared_state[0] (the position root)", state[0]!, root);
  same("shared_state[1] (the position tree height)", state[1]!, BigInt(height));
  const stateHash = keccak_256(words32(state));
  if (typeof j.shared_state_hash !== "string" || j.shared_state_hash.toLowerCase() !== hex(stateHash))
    refuse(`shared_state_hash is not keccak256 of the shared state's words (${hex(stateHash)})`);
  const amount = expectedAmount(values, state);
  if (amount === undefined) {
    if (j.withdrawal_amount !== undefined || j.calldata !== undefined)
      refuse(
        "the shared state lacks a funding index or price of the position's assets: the verifier refuses it",
      );
    return;
  }
  same("withdrawal_amount", decimal(j.withdrawal_amount, "withdrawal_amount", true), amount);
  if (amount <= 0n) {
    if (j.fact_hash !== undefined || j.calldata !== undefined)
      refuse(`the withdrawal amount ${amount} is not positive: the verifier refuses it, so there is no fact`);
    return;
  }
  const publicKey = values[values.length - 2]!;
  const fact = hex(keccak_256(concat(words32([publicKey, amount]), stateHash, words32([positionId]))));
  if (typeof j.fact_hash !== "string" || j.fact_hash.toLowerCase() !== fact)
    refuse(
      `fact_hash is not keccak256(public_key, withdrawal_amount, shared_state_hash, position_id) (${fact})`,
    );

  const calldata = (j.calldata ?? {}) as Record<string, unknown>;
  const proof = rows.flatMap((r) => {
    const n = (r.left << 260n) | (r.right << 8n);
    return [n >> 256n, n & (WORD - 1n)];
  });
  const nAssets = BigInt(values.length - 2);
  // Head: the offsets of the two arrays and nAssets; then each array as its length and words.
  const verify = hex(
    concat(
      selector("verifyEscape(uint256[],uint256,uint256[])"),
      words32([96n, nAssets, 96n + 32n * BigInt(proof.length + 1), BigInt(proof.length), ...proof]),
      words32([BigInt(state.length), ...state]),
    ),
  );
  if (typeof calldata.verify_escape !== "string" || calldata.verify_escape.toLowerCase() !== verify)
    refuse("calldata.verify_escape is not verifyEscape(merkle_proof, n_assets, shared_state)");
  const escape = hex(
    concat(selector("escape(uint256,uint256,uint256)"), words32([publicKey, positionId, amount])),
  );
  if (typeof calldata.escape !== "string" || calldata.escape.toLowerCase() !== escape)
    refuse("calldata.escape is not escape(public_key, position_id, withdrawal_amount)");
  if (j.system_asset_type !== undefined) {
    const assetType = uint(j.system_asset_type, "system_asset_type");
    const withdraw = hex(concat(selector("withdraw(uint256,uint256)"), words32([publicKey, assetType])));
    if (typeof calldata.withdraw !== "string" || calldata.withdraw.toLowerCase() !== withdraw)
      refuse("calldata.withdraw is not withdraw(public_key, system_asset_type)");
  }
}

/**
 * The verdict on an on-chain proof. It proves the leaf under the root in the words; with
 * `expectedRoot` (read from the base chain) that root must also be this one. The perpetual fact
 * hash needs the exchange's shared state, which only the chain has: it is checked when the proof
 * carries one.
 */
export async function verifyOnchainProof(
  engine: HashEngine,
  json: unknown,
  expectedRoot?: string,
): Promise<ProofVerdict> {
  try {
    if (typeof json !== "object" || json === null || Array.isArray(json)) refuse("not a JSON object");
    const j = json as Record<string, unknown>;
    const spot = j.format === ONCHAIN_FORMATS[0];
    if (spot) await checkSpot(engine, j, expectedRoot);
    else if (j.format === ONCHAIN_FORMATS[1]) await checkPerpetual(engine, j, expectedRoot);
    else refuse(`format is not one of ${ONCHAIN_FORMATS.join(", ")}`);
    const empty = j.empty === true ? " (an empty leaf: valid, nothing to withdraw)" : "";
    return {
      valid: true,
      reason: spot
        ? `every row hashes into the next up to the root; the claim hash and the call data match${empty}`
        : `every row hashes into the next up to the root; the position matches the hash chain${
            j.fact_hash !== undefined
              ? "; the withdrawal amount, fact hash and call data match the shared state"
              : ""
          }${empty}`,
    };
  } catch (err) {
    if (err instanceof Refused) return { valid: false, reason: err.message };
    throw err;
  }
}
