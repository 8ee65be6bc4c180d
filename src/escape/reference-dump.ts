import { createWriteStream, type WriteStream } from "node:fs";
import { access, mkdir, rm } from "node:fs/promises";
import { once } from "node:events";
import { dirname, join, basename } from "node:path";
import { DacdError } from "../errors.js";
import { storeProfile, storedRootGen } from "../inspect/inspect.js";
import type { LevelStore } from "../storage/level-store.js";
import { bytesEqual, toHex64, writeBigint32, ZERO32 } from "../util/bytes.js";
import { buildMerkle, buildPatricia } from "../trees/bulk-build.js";
import { emptyRoots } from "../trees/compute-roots.js";
import type { HashEngine } from "../hash/engine.js";
import { decodeLeafRecord } from "../trees/leaves.js";
import type { TreeSpec } from "../model/profile.js";
import type { VaultLeaf } from "../model/state-update.js";
import { resolveBatch, rootOf } from "./common.js";
import { writeArchive, type ArchiveEntry } from "./reference-archive.js";
import {
  DEFAULT_ORDER_SUBTREES,
  INFO_FILE,
  MAX_ORDER_SUBTREES,
  ordersFile,
  VAULTS_FILE,
  type ReferenceInfo,
} from "./reference-format.js";
import { walkLeaves } from "../trees/walk-leaves.js";

export interface ReferenceDumpOptions {
  readonly out: string;
  readonly batchId?: number;
  /** Order subtrees, a power of two (default 4, as the reference member writes). */
  readonly subtrees?: number;
  readonly progress?: (tree: string, leaves: number) => void;
}

export interface ReferenceDumpResult {
  readonly out: string;
  readonly batch_id: number;
  readonly sequence_number: number;
  readonly roots: Record<string, string>;
  readonly leaves: { vault: number; order: number };
  readonly order_subtree_roots: string[];
}

/**
 * Writes a batch's state as the reference member's state archive (what its `load_state` reads, and
 * `dacd load --from-reference`): the rows go to files beside `out` in id order, streaming, then
 * into the bzip2 tar. The order subtree roots come from rebuilding the order tree from the rows
 * (its root checked against the batch's), so the archive is checked against the store as it is made.
 */
export async function dumpReference(
  store: LevelStore,
  engine: HashEngine,
  opts: ReferenceDumpOptions,
): Promise<ReferenceDumpResult> {
  const { profile } = await storeProfile(store);
  if (profile.variant !== "G")
    throw new DacdError(
      "BAD_INPUT",
      `the reference state archive holds vaults; this store is ${profile.name}`,
    );
  const n = opts.subtrees ?? DEFAULT_ORDER_SUBTREES;
  if (
    !Number.isInteger(n) ||
    n < 1 ||
    n > MAX_ORDER_SUBTREES ||
    (n & (n - 1)) !== 0 ||
    Math.log2(n) > profile.order.height
  )
    throw new DacdError(
      "BAD_INPUT",
      `--subtrees ${n}: a power of two from 1 to ${MAX_ORDER_SUBTREES} is needed`,
    );
  const record = await resolveBatch(store, opts.batchId);
  const exists = await access(opts.out).then(
    () => true,
    () => false,
  );
  if (exists) throw new DacdError("BAD_INPUT", `${opts.out} exists; name a new file`);
  const orderRoot = rootOf(record, profile.order);
  if (record.root_gens[profile.order.name] === undefined)
    throw new DacdError(
      "BAD_INPUT",
      `the order tree of batch ${record.batch_id} is not stored (orders were not validated): the archive needs its orders`,
    );

  const parts = join(dirname(opts.out), `.${basename(opts.out)}.parts`);
  await rm(parts, { recursive: true, force: true });
  await mkdir(parts, { recursive: true, mode: 0o700 });
  try {
    const vaults = await dumpVaults(
      store,
      engine,
      profile.main,
      rootOf(record, profile.main),
      storedRootGen(record, profile.main),
      join(parts, VAULTS_FILE),
      opts,
    );
    const orderGen = storedRootGen(record, profile.order);
    const orders = await dumpOrders(store, engine, profile.order, orderRoot, orderGen, n, parts, opts);
    const roots: ReferenceInfo["batch_info"]["merkle_roots"] = {
      vault: record.roots[profile.main.name]!,
      order: record.roots[profile.order.name]!,
      ...(record.roots.rollup_vault === undefined ? {} : { rollup_vault: record.roots.rollup_vault }),
    };
    const info: ReferenceInfo = {
      batch_id: record.batch_id,
      batch_info: { merkle_roots: roots, sequence_number: record.sequence_number },
      order_subtree_roots: orders.subtreeRoots,
    };
    const entries: ArchiveEntry[] = [
      { name: INFO_FILE, data: JSON.stringify(info, null, 4) },
      { name: VAULTS_FILE, path: join(parts, VAULTS_FILE) },
    ];
    for (let k = n; k < 2 * n; k++) entries.push({ name: ordersFile(k), path: join(parts, ordersFile(k)) });
    await writeArchive(opts.out, entries);
    return {
      out: opts.out,
      batch_id: record.batch_id,
      sequence_number: record.sequence_number,
      roots: { ...roots },
      leaves: { vault: vaults, order: orders.count },
      order_subtree_roots: orders.subtreeRoots,
    };
  } finally {
    await rm(parts, { recursive: true, force: true });
  }
}

/** A file written row by row, waiting when the stream's buffer is full. */
class RowFile {
  private readonly ws: WriteStream;
  private readonly failed: Promise<never>;
  constructor(path: string) {
    this.ws = createWriteStream(path);
    this.failed = new Promise<never>((_, reject) => this.ws.once("error", reject));
    this.failed.catch(() => undefined);
  }
  async write(text: string): Promise<void> {
    if (!this.ws.write(text, "latin1")) await Promise.race([once(this.ws, "drain"), this.failed]);
  }
  async close(): Promise<void> {
    this.ws.end();
    await Promise.race([once(this.ws, "finish"), this.failed]);
  }
}

async function dumpVaults(
  store: LevelStore,
  engine: HashEngine,
  spec: TreeSpec,
  root: Uint8Array,
  rootGen: number,
  path: string,
  opts: ReferenceDumpOptions,
): Promise<number> {
  const file = new RowFile(path);
  let count = 0;
  try {
    const getNodes = (h: readonly Uint8Array[], gens: ArrayLike<number>) => store.getNodes(h, gens);
    for await (const block of walkLeaves(engine, spec, root, rootGen, { getNodes })) {
      const records = await store.getLeafRecords(
        block.map((t) => t.hash),
        block.map((t) => t.gen),
      );
      let text = "";
      block.forEach((t, i) => {
        const rec = records[i];
        if (!rec)
          throw new DacdError("STORE", `vault ${t.index}: no record for leaf hash ${toHex64(t.hash)}`);
        const v = decodeLeafRecord("vault", rec) as VaultLeaf;
        text += `${t.index},${v.key},${v.token},${v.balance}\r\n`;
      });
      await file.write(text);
      count += block.length;
      opts.progress?.("vault", count);
    }
  } finally {
    await file.close();
  }
  return count;
}

/** The order rows, one file per subtree, and the subtrees' roots from the tree rebuilt from them. */
async function dumpOrders(
  store: LevelStore,
  engine: HashEngine,
  spec: TreeSpec,
  root: Uint8Array,
  rootGen: number,
  n: number,
  parts: string,
  opts: ReferenceDumpOptions,
): Promise<{ count: number; subtreeRoots: string[] }> {
  const shift = BigInt(spec.height - Math.log2(n));
  const ids: bigint[] = [];
  let values = new Uint8Array(32 * 4096);
  let current = n;
  let file = new RowFile(join(parts, ordersFile(n)));
  try {
    const getNodes = (h: readonly Uint8Array[], gens: ArrayLike<number>) => store.getNodes(h, gens);
    for await (const block of walkLeaves(engine, spec, root, rootGen, { getNodes })) {
      for (const t of block) {
        const k = n + Number(t.index >> shift);
        while (current < k) {
          await file.close();
          file = new RowFile(join(parts, ordersFile(++current)));
        }
        const amount = decodeLeafRecord("order", t.hash) as bigint;
        await file.write(`${t.index},${amount}\r\n`);
        if ((ids.length + 1) * 32 > values.length) {
          const bigger = new Uint8Array(values.length * 2);
          bigger.set(values);
          values = bigger;
        }
        writeBigint32(amount, values, ids.length * 32);
        ids.push(t.index);
      }
      opts.progress?.("order", ids.length);
    }
    while (current < 2 * n - 1) {
      await file.close();
      file = new RowFile(join(parts, ordersFile(++current)));
    }
  } finally {
    await file.close();
  }

  const probeHeight = spec.height - Math.log2(n);
  const found = new Map<bigint, Uint8Array>();
  const probe = { height: probeHeight, onNode: (i: bigint, h: Uint8Array) => found.set(i, h) };
  const leaves = { ids, hashes: values.subarray(0, ids.length * 32) };
  const empty = spec.kind === "merkle" ? await emptyRoots(engine, spec.leaf, spec.height) : undefined;
  const rebuilt = empty
    ? await buildMerkle(engine, empty, leaves, () => undefined, { probe })
    : await buildPatricia(engine, spec.height, leaves, () => undefined, { probe });
  if (!bytesEqual(rebuilt, root))
    throw new DacdError(
      "STORE",
      `the order tree rebuilt from the stored orders has root ${toHex64(rebuilt)}, the batch says ${toHex64(root)}`,
    );
  const emptySubtree = empty ? empty[probeHeight]! : ZERO32;
  const subtreeRoots = Array.from({ length: n }, (_, j) => toHex64(found.get(BigInt(j)) ?? emptySubtree));
  return { count: ids.length, subtreeRoots };
}
