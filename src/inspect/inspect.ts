import { DacdError } from "../errors.js";
import type { BatchRecord, Cursor } from "../storage/batch-record.js";
import type { LevelStore } from "../storage/level-store.js";
import type { OnchainBatch, OnchainCursor } from "../storage/onchain-record.js";
import { hexToBytes32, toHex64 } from "../util/bytes.js";
import type { HashEngine } from "../verifier/hash/engine.js";
import { decodeLeafRecord, emptyLeaf } from "../verifier/trees/format/leaves.js";
import { isProfileName, keptTrees, makeProfile, type Profile, type TreeSpec } from "../model/profile.js";
import { readLeaf } from "../verifier/trees/read/read-leaf.js";
import { TREE_ALIASES } from "../model/tree-aliases.js";
import { defaultBatchId, modeOfRecord, newestVerifiedBatch } from "./newest-verified.js";
import type { Leaf, PositionLeaf, VaultLeaf } from "../model/state-update.js";

/**
 * Read-only views of a store, shared by the CLI (store opened directly) and the running daemon
 * (answering over its control socket), so both print the same JSON.
 */

/** The profile and trees a store was created for, from its identity record. */
export async function storeProfile(store: LevelStore): Promise<{ profile: Profile; trees: TreeSpec[] }> {
  const id = await store.meta.identity();
  if (!id || !isProfileName(id.profile))
    throw new DacdError("STORE", `the store ${store.dir} holds no dacd state`);
  const profile = makeProfile(id.profile, id.heights);
  const trees = keptTrees(profile, id.heights.rollup_vault !== undefined);
  return { profile, trees };
}

export interface StoreStatus {
  profile: string | null;
  /** The last batch the gateway accepted a signature for; the daemon continues after it. */
  cursor: Cursor | null;
  /**
   * The mode of the run that handled the newest batch (a running daemon answers with its own):
   * `shadow` verifies and signs but never posts, `active` signs and posts.
   */
  mode: "shadow" | "active" | null;
  last_signed_batch:
    | (Pick<BatchRecord, "batch_id" | "sequence_number" | "roots" | "claim_hash" | "accepted_at"> & {
        loaded_from_dump?: true;
      })
    | null;
  /** The newest batch verified and passed: accepted, verified in shadow mode, or loaded. */
  newest_verified_batch:
    | (Pick<BatchRecord, "batch_id" | "sequence_number" | "verified_at" | "accepted_at" | "shadowed_at"> & {
        loaded_from_dump?: true;
      })
    | null;
  /** The batch the member last failed on and why (cleared once it gets past it). */
  failing: unknown;
  /** Verified and stored, signature not yet acknowledged by the gateway. */
  pending_batch: Pick<BatchRecord, "batch_id" | "sequence_number" | "claim_hash" | "verified_at"> | null;
  /** What the base-chain watch has seen (null: the chain was never followed). */
  onchain: OnchainStatus | null;
}

export interface OnchainStatus {
  readonly contract: string;
  /** The newest root update in a confirmed block (null: none seen yet). */
  readonly batch_id: number | null;
  /** The contract's sequence number for it (its LogRootUpdate's: the count of its root updates). */
  readonly sequence_number: number | null;
  /** This member's sequence number for that batch (its claim's), when stored: see docs/base-chain.md. */
  readonly member_sequence_number: number | null;
  readonly block_number: number | null;
  /** The last confirmed block read. */
  readonly confirmed_block: number | null;
  readonly frozen: boolean;
  /** The batch the exchange froze at: escapes are served at it. */
  readonly frozen_batch_id: number | null;
  readonly frozen_block_number: number | null;
}

export function onchainStatus(
  cursor: OnchainCursor | undefined,
  memberSequenceNumber?: number,
): OnchainStatus | null {
  if (!cursor) return null;
  return {
    contract: cursor.contract,
    batch_id: cursor.last?.batch_id ?? null,
    sequence_number: cursor.last?.sequence_number ?? null,
    member_sequence_number: memberSequenceNumber ?? null,
    block_number: cursor.last?.block_number ?? null,
    confirmed_block: cursor.last_block?.number ?? null,
    frozen: cursor.frozen !== undefined,
    frozen_batch_id: cursor.frozen?.batch_id ?? null,
    frozen_block_number: cursor.frozen?.block_number ?? null,
  };
}

export async function storeStatus(store: LevelStore): Promise<StoreStatus> {
  const identity = await store.meta.identity();
  const cursor = await store.getCursor();
  const last =
    cursor && cursor.last_accepted_batch_id >= 0
      ? await store.getBatch(cursor.last_accepted_batch_id)
      : undefined;
  const newest = await store.lastBatchId();
  const newestRecord = newest !== undefined ? await store.getBatch(newest) : undefined;
  const verified = await newestVerifiedBatch(store);
  const loaded = (r: BatchRecord): { loaded_from_dump?: true } =>
    (r as { loaded_from_dump?: true }).loaded_from_dump ? { loaded_from_dump: true } : {};
  return {
    profile: identity?.profile ?? null,
    mode: modeOfRecord(newestRecord) ?? null,
    cursor: cursor ?? null,
    last_signed_batch: last
      ? {
          batch_id: last.batch_id,
          sequence_number: last.sequence_number,
          roots: last.roots,
          claim_hash: last.claim_hash,
          accepted_at: last.accepted_at,
          ...loaded(last),
        }
      : null,
    newest_verified_batch: verified
      ? {
          batch_id: verified.batch_id,
          sequence_number: verified.sequence_number,
          verified_at: verified.verified_at,
          accepted_at: verified.accepted_at,
          shadowed_at: verified.shadowed_at,
          ...loaded(verified),
        }
      : null,
    failing: (await store.meta.note("failing")) ?? null,
    // A batch a shadow run verified is never posted, so it is never waiting for acceptance.
    pending_batch:
      newestRecord &&
      !newestRecord.accepted_at &&
      !newestRecord.shadowed_at &&
      newestRecord.batch_id !== verified?.batch_id
        ? {
            batch_id: newestRecord.batch_id,
            sequence_number: newestRecord.sequence_number,
            claim_hash: newestRecord.claim_hash,
            verified_at: newestRecord.verified_at,
          }
        : null,
    onchain: await onchainOf(store),
  };
}

/** The watch's status, with this member's sequence number for the newest batch on-chain. */
async function onchainOf(store: LevelStore): Promise<OnchainStatus | null> {
  const cursor = await store.onchain.cursor();
  const id = cursor?.last?.batch_id;
  const record = id === undefined ? undefined : await store.getBatch(id);
  return onchainStatus(cursor, record?.sequence_number);
}

export async function showBatch(store: LevelStore, batchId: number): Promise<BatchRecord> {
  const record = await store.getBatch(batchId);
  if (!record) throw new DacdError("BAD_INPUT", `batch ${batchId} is not in the store`);
  return record;
}

/**
 * `dacd show batch N`: the stored record and where the batch is on the base chain (`onchain`:
 * the root update read for it, with `matches` when compared; null when none was read).
 */
export async function showBatchOnchain(
  store: LevelStore,
  batchId: number,
): Promise<BatchRecord & { onchain: OnchainBatch | null }> {
  const record = await showBatch(store, batchId);
  return { ...record, onchain: (await store.onchain.batch(batchId)) ?? null };
}

export { TREE_ALIASES };

/** Resolves `<object> [--batch N]` to a tree spec and the batch record to read it at. */
export async function resolveTree(
  store: LevelStore,
  object: string,
  batchId?: number,
): Promise<{ spec: TreeSpec; record: BatchRecord; profile: Profile }> {
  const { profile, trees } = await storeProfile(store);
  const name = TREE_ALIASES[object];
  const spec = trees.find((t) => t.name === name);
  if (!spec) {
    throw new DacdError(
      "BAD_INPUT",
      `no ${object} tree in a ${profile.name} store (trees: ${trees.map((t) => t.name).join(", ")})`,
    );
  }
  const id = batchId ?? (await defaultBatchId(store));
  if (id === undefined) throw new DacdError("BAD_INPUT", "the store holds no batch yet");
  return { spec, record: await showBatch(store, id), profile };
}

export function leafToJson(leaf: Leaf, spec: TreeSpec): Record<string, unknown> {
  if (spec.leaf === "vault") {
    const v = leaf as VaultLeaf;
    return {
      stark_key: "0x" + v.key.toString(16),
      token: "0x" + v.token.toString(16),
      balance: v.balance.toString(),
    };
  }
  if (spec.leaf === "position") {
    const p = leaf as PositionLeaf;
    return {
      public_key: "0x" + p.publicKey.toString(16),
      collateral_balance: p.collateral.toString(),
      assets: Object.fromEntries(
        p.assets.map((a) => [
          "0x" + a.assetId.toString(16),
          { balance: a.balance.toString(), cached_funding_index: a.fundingIndex.toString() },
        ]),
      ),
    };
  }
  return { fulfilled_amount: (leaf as bigint).toString() };
}

/**
 * The gen of a tree's root record in a batch (0: an empty tree); refused for a tree of which only
 * the stated root is kept (an order tree that was not validated).
 */
export function storedRootGen(record: BatchRecord, spec: TreeSpec): number {
  const gen = record.root_gens[spec.name];
  if (gen === undefined)
    throw new DacdError(
      "BAD_INPUT",
      `the ${spec.name} tree of batch ${record.batch_id} is not stored (orders not validated)`,
    );
  return gen;
}

/** Decodes the leaf stored under a leaf hash, written by batch `leafGen` (orders: the hash is the amount). */
export async function leafFromHash(
  store: LevelStore,
  spec: TreeSpec,
  leafHash: Uint8Array,
  leafGen: number,
  empty: boolean,
): Promise<Leaf> {
  if (spec.leaf === "order") return decodeLeafRecord("order", leafHash);
  if (empty) return emptyLeaf(spec.leaf);
  const [rec] = await store.getLeafRecords([leafHash], [leafGen]);
  if (!rec) throw new DacdError("STORE", `${spec.name} leaf ${toHex64(leafHash)} has no stored record`);
  return decodeLeafRecord(spec.leaf, rec);
}

export async function showLeaf(
  store: LevelStore,
  engine: HashEngine,
  object: string,
  id: string,
  batchId?: number,
): Promise<Record<string, unknown>> {
  if (!/^(0|[1-9][0-9]*)$/.test(id))
    throw new DacdError("BAD_INPUT", `leaf id ${JSON.stringify(id)} is not a decimal integer`);
  const { spec, record } = await resolveTree(store, object, batchId);
  const root = hexToBytes32(record.roots[spec.name] ?? "");
  if (!root) throw new DacdError("STORE", `batch ${record.batch_id} has no ${spec.name} root`);
  const found = await readLeaf(engine, store, spec, root, storedRootGen(record, spec), BigInt(id));
  const leaf = await leafFromHash(store, spec, found.leafHash, found.leafGen, found.empty);
  const frozen = await store.onchain.frozenBatchId();
  return {
    batch_id: record.batch_id,
    tree: spec.name,
    id,
    empty: found.empty,
    leaf_hash: toHex64(found.leafHash),
    leaf: leafToJson(leaf, spec),
    // After a freeze, whether this is the state escapes are checked against.
    ...(frozen === undefined ? {} : { frozen_batch_id: frozen, at_frozen_batch: record.batch_id === frozen }),
  };
}

/**
 * Which batch a leaf or a proof was read at when none was asked for, and why; undefined before a
 * freeze (the newest verified batch, as always). Said on stderr by `dacd show leaf` and `dacd proof`,
 * which default to different batches once the exchange is frozen.
 */
export function defaultBatchNote(
  what: "leaf" | "proof",
  batchId: number,
  frozen: number | undefined,
): string | undefined {
  if (frozen === undefined) return undefined;
  if (batchId === frozen)
    return `${what} at batch ${batchId}, the batch the exchange froze at (escapes are checked against its state)`;
  return (
    `${what} at batch ${batchId}, the newest verified batch; the exchange froze at batch ${frozen}, ` +
    `whose state escapes are checked against (\`dacd proof\` answers at it): --batch ${frozen} for the ${what} there`
  );
}
