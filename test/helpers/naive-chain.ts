import { memoH as H, naiveMerkleRoot, naivePatriciaRoot, type Hash2 } from "./naive-trees.js";

/**
 * A chain of batches replayed from their wire bodies (`get_batch_data`'s `update`) into full leaf
 * sets, each root recomputed naively: leaf encodings written from docs/escape-formats.md with
 * @scure/starknet's Pedersen, trees from naive-trees.ts. It shares no code with src/ (not the
 * parser, the leaf hashing nor the trees), so a devnet's stated roots (computed with dacd's own
 * `computeRoots`) and a member's are held against something dacd did not compute.
 */

export type NaiveProfile = "spot" | "spot-v4.0" | "perpetual";

interface NaiveTree {
  /** The tree's name as dacd and the wire's `<name>_root` call it. */
  readonly name: string;
  /** The wire's field holding its leaves. */
  readonly field: string;
  readonly kind: "merkle" | "patricia";
  readonly height: number;
  readonly leaf: "vault" | "order" | "position";
}

/** Each profile's trees at their deployed heights (docs/escape-formats.md, docs/reference-member.md). */
const TREES: Record<NaiveProfile, NaiveTree[]> = {
  spot: [
    { name: "vault", field: "vaults", kind: "merkle", height: 31, leaf: "vault" },
    { name: "order", field: "orders", kind: "patricia", height: 251, leaf: "order" },
    { name: "rollup_vault", field: "rollup_vaults", kind: "merkle", height: 31, leaf: "vault" },
  ],
  "spot-v4.0": [
    { name: "vault", field: "vaults", kind: "merkle", height: 31, leaf: "vault" },
    { name: "order", field: "orders", kind: "merkle", height: 63, leaf: "order" },
  ],
  perpetual: [
    { name: "position", field: "positions", kind: "merkle", height: 64, leaf: "position" },
    { name: "order", field: "orders", kind: "merkle", height: 64, leaf: "order" },
  ],
};

const B63 = 2n ** 63n;

/** A vault's leaf: H(H(stark key, token), balance); a vault of balance 0 is the empty vault (all zeros). */
export function naiveVaultLeaf(
  v: { stark_key: string; token: string; balance: string },
  hash: Hash2 = H,
): bigint {
  const balance = BigInt(v.balance);
  if (balance === 0n) return hash(hash(0n, 0n), 0n);
  return hash(hash(BigInt(v.stark_key), BigInt(v.token)), balance);
}

/**
 * A position's leaf: the Pedersen chain from 0 over each asset (ascending id) as
 * id << 128 | (funding + 2^63) << 64 | (balance + 2^63), then the public key, then
 * (collateral + 2^63) << 16 | the asset count.
 */
export function naivePositionLeaf(
  p: {
    public_key: string;
    collateral_balance: string;
    assets: Record<string, { balance: string; cached_funding_index: string }>;
  },
  hash: Hash2 = H,
): bigint {
  const assets = Object.entries(p.assets)
    .map(([id, a]) => ({
      id: BigInt(id),
      balance: BigInt(a.balance),
      funding: BigInt(a.cached_funding_index),
    }))
    .sort((x, y) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
  let state = 0n;
  for (const a of assets)
    state = hash(state, (a.id << 128n) | ((a.funding + B63) << 64n) | (a.balance + B63));
  state = hash(state, BigInt(p.public_key));
  return hash(state, ((BigInt(p.collateral_balance) + B63) << 16n) | BigInt(assets.length));
}

function leafOf(kind: NaiveTree["leaf"], value: unknown, hash: Hash2): bigint {
  if (kind === "vault") return naiveVaultLeaf(value as Parameters<typeof naiveVaultLeaf>[0], hash);
  if (kind === "position") return naivePositionLeaf(value as Parameters<typeof naivePositionLeaf>[0], hash);
  return BigInt((value as { fulfilled_amount: string }).fulfilled_amount);
}

const EMPTY_LEAF: Record<NaiveTree["leaf"], (hash: Hash2) => bigint> = {
  vault: (hash) => naiveVaultLeaf({ stark_key: "0", token: "0", balance: "0" }, hash),
  position: (hash) => naivePositionLeaf({ public_key: "0", collateral_balance: "0", assets: {} }, hash),
  order: () => 0n,
};

function rootOf(t: NaiveTree, leaves: Map<bigint, bigint>, hash: Hash2): bigint {
  return t.kind === "patricia"
    ? naivePatriciaRoot(t.height, leaves, hash)
    : naiveMerkleRoot(t.height, leaves, EMPTY_LEAF[t.leaf](hash), hash);
}

/** Roots by tree name, as numbers. */
export type NaiveRoots = Record<string, bigint>;

export class NaiveChain {
  /** Each batch's full leaf sets (tree name → leaf id → leaf hash), by batch id; -1 is the empty state. */
  private readonly states = new Map<number, Map<string, Map<bigint, bigint>>>([[-1, new Map()]]);
  readonly roots = new Map<number, NaiveRoots>();
  private readonly trees: NaiveTree[];

  /** `hash`: @scure/starknet's BigInt Pedersen unless a test's state is too large for it (fastH). */
  constructor(
    profile: NaiveProfile,
    private readonly hash: Hash2 = H,
  ) {
    this.trees = TREES[profile];
  }

  /** The empty state's roots (batch -1). */
  genesis(): NaiveRoots {
    return Object.fromEntries(this.trees.map((t) => [t.name, rootOf(t, new Map(), this.hash)]));
  }

  /**
   * Applies batch `batchId`'s wire body on its `prev_batch_id`'s state and returns its roots (the
   * trees whose leaves the body carries: the rollup tree only when asked with validate_rollup).
   */
  add(batchId: number, update: Record<string, unknown>): NaiveRoots {
    const prevId = update.prev_batch_id as number;
    const prev = this.states.get(prevId);
    if (!prev) throw new Error(`batch ${batchId} names prev_batch_id ${prevId}, not replayed yet`);
    const state = new Map<string, Map<bigint, bigint>>();
    const roots: NaiveRoots = {};
    for (const t of this.trees) {
      const leaves = new Map(prev.get(t.name) ?? []);
      const body = update[t.field] as Record<string, unknown> | undefined;
      if (body === undefined) continue;
      for (const [id, value] of Object.entries(body))
        leaves.set(BigInt(id), leafOf(t.leaf, value, this.hash));
      state.set(t.name, leaves);
      roots[t.name] = rootOf(t, leaves, this.hash);
    }
    this.states.set(batchId, state);
    this.roots.set(batchId, roots);
    return roots;
  }
}

/** A root as the wire and dacd's stated roots spell it (64 hex digits, no 0x), or a decimal / 0x string: as a number. */
export function rootValue(s: string): bigint {
  return /^[0-9a-f]{64}$/i.test(s) ? BigInt("0x" + s) : BigInt(s);
}

/** What the devnet helpers need of a devnet's chain (its `ChainView`, and the batcher's computed roots). */
interface DevnetChainLike {
  readonly profile: { readonly name: string };
  lastBatchId(): number;
  batch(id: number):
    | {
        prevBatchId: number;
        stated: Record<string, string | undefined>;
        update(validateRollup: boolean): Record<string, unknown>;
      }
    | undefined;
}

/**
 * The batches a devnet cut (0..`upTo`, all by default), replayed naively from the bodies it serves
 * (rollup leaves included): each batch's naive roots, and which stated roots differ from them (a
 * `wrong_root` fault).
 */
export function naiveDevnetRoots(
  chain: DevnetChainLike,
  upTo = chain.lastBatchId(),
  hash: Hash2 = H,
): {
  roots: Map<number, NaiveRoots>;
  wrongStated: Map<number, string[]>;
} {
  const naive = new NaiveChain(chain.profile.name as NaiveProfile, hash);
  const wrongStated = new Map<number, string[]>();
  for (let id = 0; id <= upTo; id++) {
    const b = chain.batch(id)!;
    const roots = naive.add(id, b.update(true));
    const wrong = Object.keys(roots).filter(
      (t) => b.stated[t] === undefined || rootValue(b.stated[t]!) !== roots[t],
    );
    if (wrong.length > 0) wrongStated.set(id, wrong);
  }
  return { roots: naive.roots, wrongStated };
}

/** 64 hex digits, as dacd's `toHex64` and the devnet's stated roots spell a root. */
export const hex64 = (v: bigint): string => v.toString(16).padStart(64, "0");

/**
 * A member's recorded roots of batches `ids` (each recorded: signed) equal a naive replay of the
 * devnet's chain: the devnet states dacd's own roots, so a member agreeing with it proves nothing
 * alone. Returns the naive roots.
 */
export async function expectMemberRootsNaive(
  chain: DevnetChainLike,
  store: { getBatch(id: number): Promise<{ roots: Record<string, string> } | undefined> },
  ids: readonly number[],
  hash: Hash2 = H,
): Promise<Map<number, NaiveRoots>> {
  const naive = naiveDevnetRoots(chain, Math.max(...ids), hash).roots;
  for (const id of ids) {
    const rec = await store.getBatch(id);
    if (!rec) throw new Error(`batch ${id} is not recorded by the member`);
    const trees = Object.keys(rec.roots);
    if (trees.length === 0) throw new Error(`batch ${id}'s record names no roots`);
    for (const t of trees) {
      const want = naive.get(id)![t];
      if (want === undefined) throw new Error(`batch ${id}: the naive replay has no ${t} tree`);
      if (rec.roots[t] !== hex64(want))
        throw new Error(
          `batch ${id} ${t}: the member recorded ${rec.roots[t]}, a naive replay gives ${hex64(want)}`,
        );
    }
  }
  return naive;
}
