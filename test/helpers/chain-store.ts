import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { EthSigner } from "../../src/signer/eth-signer.js";
import { LevelStore } from "../../src/storage/level-store.js";
import type { HashEngine } from "../../src/verifier/hash/engine.js";
import { createEngine } from "../../src/verifier/hash/select.js";
import { makeProfile, type Profile } from "../../src/model/profile.js";
import { parseVerifySignAndStore, type StageContext } from "../../src/poller/member/batch-stages.js";
import { loadChain, privateKeyBytes, type ChainName, type Expected } from "./vectors.js";
import { levelDb } from "../../src/storage/level-db.js";
import { Prefix, TREE_KEY_LENGTH, treeKeyParts, TreeKind } from "../../src/storage/keys.js";
import { tempDir } from "./temp-dir.js";

/** Shared set-up of the escape tests: stores holding a vector chain (in temp-dir.ts directories). */

/**
 * The fastest engine built here (the native addon, WASM where it is not built): the escape tests
 * hash hundreds of thousands of pairs. The engines' agreement is tested on its own (engines.test.ts,
 * the vectors, climb-chains).
 */
export const engine: HashEngine = createEngine("auto");

export interface ChainStore {
  store: LevelStore;
  dir: string;
  ctx: StageContext;
  profile: Profile;
  responses: { update: unknown }[];
  expected: Expected;
  /** Verifies and stores batch `id` of the chain. */
  verify(id: number): Promise<void>;
}

export function contextFor(store: LevelStore, chain: ChainName): StageContext {
  const { expected } = loadChain(chain);
  const profile = makeProfile(expected.profile, expected.heights);
  return {
    profile,
    engine,
    store,
    signer: new EthSigner(privateKeyBytes(expected.private_key)),
    options: { validateOrders: true, validateRollup: profile.rollup ? true : undefined },
  };
}

/** A fresh store with batches [0, upTo) of a chain verified and stored. */
export async function chainStore(chain: ChainName, upTo?: number): Promise<ChainStore> {
  const { responses, expected } = loadChain(chain);
  const dir = await tempDir("dacd-escape-");
  const store = await LevelStore.open(join(dir, "db"));
  const ctx = contextFor(store, chain);
  await store.meta.ensureIdentity({
    profile: ctx.profile.name,
    heights: Object.fromEntries(Object.entries(expected.heights)),
  });
  const verify = async (id: number): Promise<void> => {
    await parseVerifySignAndStore(ctx, id, responses[id]!.update);
  };
  for (let id = 0; id < (upTo ?? responses.length); id++) await verify(id);
  return { store, dir: join(dir, "db"), ctx, profile: ctx.profile, responses, expected, verify };
}

/** Every file of a dump directory except the manifest, as name → content. */
export async function dumpFiles(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const f of (await readdir(dir)).sort())
    if (f !== "manifest.json") out[f] = await readFile(join(dir, f), "utf8");
  return out;
}

export async function countKeys(store: LevelStore, prefix: number): Promise<number> {
  let n = 0;
  for await (const _ of levelDb(store).keys({ gte: Uint8Array.of(prefix), lt: Uint8Array.of(prefix + 1) }))
    n++;
  return n;
}

/** How many node and leaf records the store holds, of every gen (keys.ts: 0x00 ‖ gen ‖ kind ‖ hash). */
export async function countTreeRecords(store: LevelStore): Promise<{ nodes: number; leaves: number }> {
  const counts = { nodes: 0, leaves: 0 };
  for await (const k of levelDb(store).keys({
    gte: Uint8Array.of(Prefix.tree),
    lt: Uint8Array.of(Prefix.tree + 1),
  })) {
    if (k.length !== TREE_KEY_LENGTH) continue; // a retire key (never kept, but not a record)
    const { kind } = treeKeyParts(k);
    if (kind === TreeKind.node) counts.nodes++;
    else if (kind === TreeKind.leaf) counts.leaves++;
  }
  return counts;
}

/** Bytes of LevelDB table files (after a compaction the write-ahead log holds no data). */
export async function tableBytes(dir: string): Promise<number> {
  let total = 0;
  for (const f of await readdir(dir))
    if (f.endsWith(".ldb") || f.endsWith(".sst")) total += (await stat(join(dir, f))).size;
  return total;
}

/** A random value of `bits` bits from a seeded generator (src/util/prng.ts). */
export function randomBig(r: () => number, bits: number): bigint {
  let v = 0n;
  for (let i = 0; i < bits; i += 16) v = (v << 16n) | BigInt(Math.floor(r() * 65536));
  return v & ((1n << BigInt(bits)) - 1n);
}
