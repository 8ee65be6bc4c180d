import { DacdError } from "../errors.js";
import { leafFromHash, leafToJson, resolveTree, storedRootGen } from "../inspect/inspect.js";
import type { LevelStore } from "../storage/level-store.js";
import { addSmall, bigintToBytes32, bytesEqual, hexToBytes32, toHex64 } from "../util/bytes.js";
import { emptyRoots } from "../verifier/trees/update/compute-roots.js";
import type { HashEngine } from "../verifier/hash/engine.js";
import { hashLeaves, hashPairs } from "../verifier/trees/format/leaves.js";
import {
  isProfileName,
  makeProfile,
  profileTrees,
  type LeafKind,
  type ProfileName,
  type TreeKind,
  type TreeName,
} from "../model/profile.js";
import { readLeaf } from "../verifier/trees/read/read-leaf.js";
import type { Leaf, VaultLeaf } from "../model/state-update.js";
import { resolveBatch, rootOf } from "./common.js";
import { parseLeafLine } from "./formats.js";

export const PROOF_FORMAT = "dacd-proof/1";

export type ProofStep =
  | { kind: "binary"; height: number; left: string; right: string }
  | { kind: "edge"; height: number; bottom: string; path: string; length: number };

/** A leaf's membership (or, for an empty leaf, non-membership) proof under one batch's root. */
export interface Proof {
  format: string;
  profile: string;
  batch_id: number;
  sequence_number: number;
  tree: TreeName;
  kind: TreeKind;
  leaf_kind: LeafKind;
  height: number;
  root: string;
  leaf_id: string;
  empty: boolean;
  leaf: Record<string, unknown>;
  leaf_hash: string;
  /** Merkle: sibling hashes from the leaf's level upward (height entries). */
  siblings?: string[];
  /** Patricia: the nodes from the root down, as far as the leaf's path goes into the tree. */
  steps?: ProofStep[];
}

export async function makeProof(
  store: LevelStore,
  engine: HashEngine,
  object: string,
  id: string,
  batchId?: number,
): Promise<Proof> {
  if (!/^(0|[1-9][0-9]*)$/.test(id))
    throw new DacdError("BAD_INPUT", `leaf id ${JSON.stringify(id)} is not a decimal integer`);
  const record = await resolveBatch(store, batchId);
  const { spec, profile } = await resolveTree(store, object, record.batch_id);
  const root = rootOf(record, spec);
  const found = await readLeaf(engine, store, spec, root, storedRootGen(record, spec), BigInt(id));
  const leaf = await leafFromHash(store, spec, found.leafHash, found.leafGen, found.empty);
  const proof: Proof = {
    format: PROOF_FORMAT,
    profile: profile.name,
    batch_id: record.batch_id,
    sequence_number: record.sequence_number,
    tree: spec.name,
    kind: spec.kind,
    leaf_kind: spec.leaf,
    height: spec.height,
    root: toHex64(root),
    leaf_id: id,
    empty: found.empty,
    leaf: leafToJson(leaf, spec),
    leaf_hash: toHex64(found.leafHash),
  };
  if (found.siblings) proof.siblings = found.siblings.map(toHex64);
  if (found.steps) {
    proof.steps = found.steps.map((s) =>
      s.kind === "binary"
        ? { kind: "binary", height: s.height, left: toHex64(s.left), right: toHex64(s.right) }
        : {
            kind: "edge",
            height: s.height,
            bottom: toHex64(s.bottom),
            path: "0x" + s.path.toString(16),
            length: s.length,
          },
    );
  }
  return proof;
}

export interface ProofVerdict {
  valid: boolean;
  reason: string;
}

class Invalid extends Error {}

const fail = (reason: string): never => {
  throw new Invalid(reason);
};

function hex32(v: unknown, what: string): Uint8Array {
  if (typeof v !== "string" || !/^[0-9a-f]{64}$/.test(v))
    return fail(`${what} is not 64 lower-case hex digits`);
  return hexToBytes32(v)!;
}

/** The leaf of a proof back as a value (the same JSON as `dacd show leaf`). */
function leafFromJson(kind: LeafKind, j: Record<string, unknown>, orderAmountLimit: bigint): Leaf {
  const where = "leaf";
  if (typeof j !== "object" || j === null) return fail("leaf is not an object");
  try {
    if (kind === "vault")
      return parseLeafLine("vault", `0,${j.stark_key},${j.token},${j.balance}`, where, orderAmountLimit).leaf;
    if (kind === "order")
      return parseLeafLine("order", `0,${j.fulfilled_amount}`, where, orderAmountLimit).leaf;
    return parseLeafLine("position", JSON.stringify({ ...j, position_id: "0" }), where, orderAmountLimit)
      .leaf;
  } catch (err) {
    return fail((err as Error).message);
  }
}

/**
 * Checks a proof with no store: the leaf hash from the leaf, then the path up to the root, the
 * path following the leaf id's bits. With `expectedRoot`, the proof's root must also be that one.
 */
export async function verifyProof(
  engine: HashEngine,
  proof: Proof,
  expectedRoot?: string,
): Promise<ProofVerdict> {
  try {
    await check(engine, proof, expectedRoot);
    return {
      valid: true,
      reason: proof.empty
        ? "the leaf is empty under the root (non-membership)"
        : "the leaf is in the tree under the root",
    };
  } catch (err) {
    if (err instanceof Invalid) return { valid: false, reason: err.message };
    if (err instanceof RangeError)
      return { valid: false, reason: `a value is not a field element: ${err.message}` };
    throw err;
  }
}

async function check(engine: HashEngine, p: Proof, expectedRoot?: string): Promise<void> {
  if (typeof p !== "object" || p === null) fail("not a JSON object");
  if (p.format !== PROOF_FORMAT) fail(`format is not ${PROOF_FORMAT}`);
  if (!isProfileName(p.profile)) fail("unknown profile");
  const profile = makeProfile(p.profile as ProfileName);
  const spec = profileTrees(profile).find((t) => t.name === p.tree);
  if (!spec) fail(`no ${String(p.tree)} tree in the ${p.profile} profile`);
  if (p.kind !== spec!.kind || p.leaf_kind !== spec!.leaf) fail("kind or leaf_kind do not match the tree");
  if (!Number.isInteger(p.height) || p.height < 1 || p.height > 251) fail("height is out of range");
  const height = p.height;
  const root = hex32(p.root, "root");
  if (expectedRoot !== undefined) {
    const want = hexToBytes32(expectedRoot.toLowerCase());
    if (!want) fail("--root is not a hex value of at most 64 digits");
    if (!bytesEqual(want!, root))
      fail(`the proof's root ${p.root} is not the expected root ${toHex64(want!)}`);
  }
  if (typeof p.leaf_id !== "string" || !/^(0|[1-9][0-9]*)$/.test(p.leaf_id))
    fail("leaf_id is not a decimal integer");
  const id = BigInt(p.leaf_id);
  if (id >= 1n << BigInt(height)) fail("leaf_id is outside the tree");

  const leafHash = hex32(p.leaf_hash, "leaf_hash");
  const leaf = leafFromJson(spec!.leaf, p.leaf, profile.orderAmountLimit);
  const v = leaf as VaultLeaf;
  if (spec!.leaf === "vault" && v.balance === 0n && (v.key !== 0n || v.token !== 0n)) {
    fail("an empty vault (balance 0) is written with key 0 and token 0");
  }
  const [computed] = await hashLeaves(engine, spec!.leaf, [leaf]);
  if (!bytesEqual(computed!, leafHash))
    fail(`the leaf hashes to ${toHex64(computed!)}, not leaf_hash ${p.leaf_hash}`);

  if (spec!.kind === "merkle") {
    const empty = await emptyRoots(engine, spec!.leaf, height);
    if (p.empty !== bytesEqual(leafHash, empty[0]!)) fail("the empty flag does not match the leaf");
    if (!Array.isArray(p.siblings) || p.siblings.length !== height)
      fail(`a Merkle proof needs ${height} siblings`);
    let h: Uint8Array = leafHash;
    for (let k = 0; k < height; k++) {
      const sib = hex32(p.siblings![k], `siblings[${k}]`);
      const right = ((id >> BigInt(k)) & 1n) === 1n;
      h = (right ? await hashPairs(engine, [sib], [h]) : await hashPairs(engine, [h], [sib]))[0]!;
    }
    if (!bytesEqual(h, root)) fail(`the path folds to ${toHex64(h)}, not the root`);
    return;
  }

  // Patricia: walk down from the root, recomputing each step's hash and following the id's bits.
  const zero = new Uint8Array(32);
  if (p.empty !== bytesEqual(leafHash, zero)) fail("the empty flag does not match the leaf");
  if (!Array.isArray(p.steps)) fail("a Patricia proof needs steps");
  let expected = root;
  let h = height;
  let i = 0;
  for (; i < p.steps!.length; i++) {
    const s = p.steps![i]!;
    if (h === 0 || bytesEqual(expected, zero)) fail(`step ${i} is past the end of the path`);
    if (s.height !== h) fail(`step ${i} is at height ${s.height}, expected ${h}`);
    if (s.kind === "binary") {
      const left = hex32(s.left, `steps[${i}].left`);
      const right = hex32(s.right, `steps[${i}].right`);
      if (bytesEqual(left, zero) || bytesEqual(right, zero))
        fail(`step ${i}: a binary node has an empty child`);
      const [hash] = await hashPairs(engine, [left], [right]);
      if (!bytesEqual(hash!, expected))
        fail(`step ${i}: the binary node hashes to ${toHex64(hash!)}, not ${toHex64(expected)}`);
      expected = ((id >> BigInt(h - 1)) & 1n) === 1n ? right : left;
      h -= 1;
    } else if (s.kind === "edge") {
      const bottom = hex32(s.bottom, `steps[${i}].bottom`);
      if (typeof s.path !== "string" || !/^0x[0-9a-f]+$/.test(s.path)) fail(`steps[${i}].path is not 0x hex`);
      const path = BigInt(s.path);
      const length = s.length;
      if (!Number.isInteger(length) || length < 1 || length > h || path >> BigInt(length) !== 0n)
        fail(`step ${i}: bad edge length or path`);
      if (bytesEqual(bottom, zero)) fail(`step ${i}: an edge to an empty subtree`);
      const [raw] = await hashPairs(engine, [bottom], [bigintToBytes32(path)]);
      const hash = addSmall(raw!, length);
      if (!bytesEqual(hash, expected))
        fail(`step ${i}: the edge hashes to ${toHex64(hash)}, not ${toHex64(expected)}`);
      const bits = (id >> BigInt(h - length)) & ((1n << BigInt(length)) - 1n);
      if (bits !== path) {
        // The leaf's path leaves the tree here: it is empty.
        if (i !== p.steps!.length - 1) fail(`step ${i}: the leaf id leaves the edge but more steps follow`);
        if (!p.empty) fail(`step ${i}: the leaf id leaves the edge, so the leaf must be empty`);
        return;
      }
      expected = bottom;
      h -= length;
    } else {
      fail(`step ${i} has an unknown kind`);
    }
  }
  if (h === 0) {
    if (!bytesEqual(expected, leafHash)) fail(`the path ends at ${toHex64(expected)}, not leaf_hash`);
    return;
  }
  // The path ran into an empty subtree (or the tree is empty): only an empty leaf is proven.
  if (!bytesEqual(expected, zero)) fail("the steps end before the leaf");
  if (!p.empty) fail("the path ends in an empty subtree, so the leaf must be empty");
}
