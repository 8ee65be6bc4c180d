import { createHash } from "node:crypto";
import { access, mkdir, rm } from "node:fs/promises";
import { dirname, join, basename } from "node:path";
import { DacdError } from "../errors.js";
import { storeProfile, storedRootGen } from "../inspect/inspect.js";
import type { LevelStore } from "../storage/level-store.js";
import { bytesEqual, toHex64, writeBigint32, ZERO32 } from "../util/bytes.js";
import { buildMerkle, buildPatricia } from "../verifier/trees/bulk/bulk-build.js";
import { emptyRoots } from "../verifier/trees/update/compute-roots.js";
import type { HashEngine } from "../verifier/hash/engine.js";
import { decodeLeafRecord } from "../verifier/trees/format/leaves.js";
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
import { walkLeaves } from "../verifier/trees/read/walk-leaves.js";
import { fileSink, type DumpFileSink } from "./dump.js";

export interface ReferenceRowsOptions {
  readonly batchId?: number;
  /** Order subtrees, a power of two (default 4, as the reference member writes). */
  readonly subtrees?: number;
  readonly progress?: (tree: string, leaves: number) => void;
  /** Awaited before each read of a walk (the daemon: yield to a batch being verified). */
  readonly pace?: () => Promise<void>;
  /** Subtrees per store read. */
  readonly chunk?: number;
}

export interface ReferenceDumpOptions extends ReferenceRowsOptions {
  readonly out: string;
}

/** An archive's row files as written, and what its info.json and tar headers hold. */
export interface ReferenceRows {
  readonly info: ReferenceInfo;
  /** The batch's verification time: every tar header's mtime, so that a batch's archive is always the same bytes. */
  readonly mtime: string;
  readonly leaves: { vault: number; order: number };
  /** Each row file's size and SHA-256, in archive order. */
  readonly files: { readonly name: string; readonly bytes: number; readonly sha256: string }[];
}

export interface ReferenceDumpResult {
  readonly out: string;
  readonly batch_id: number;
  readonly sequence_number: number;
  readonly roots: Record<string, string>;
  readonly leaves: { vault: number; order: number };
  readonly order_subtree_roots: string[];
}

/** Where the row files go, one after another (a directory, or the daemon's control socket). */
export type RowFileSink = (name: string) => DumpFileSink;

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
  return writeReferenceArchive(opts.out, (sink) => referenceRows(store, engine, opts, sink));
}

/**
 * The archive at `out` from row files that `rows` writes into a directory beside it (the caller's
 * rows: this store's, or a running daemon's): refused if `out` exists; the files are removed after.
 */
export async function writeReferenceArchive(
  out: string,
  rows: (sink: RowFileSink) => Promise<ReferenceRows | undefined>,
): Promise<ReferenceDumpResult>;
export async function writeReferenceArchive(
  out: string,
  rows: (sink: RowFileSink) => Promise<ReferenceRows | undefined>,
  allowNone: true,
): Promise<ReferenceDumpResult | undefined>;
export async function writeReferenceArchive(
  out: string,
  rows: (sink: RowFileSink) => Promise<ReferenceRows | undefined>,
  allowNone = false,
): Promise<ReferenceDumpResult | undefined> {
  const exists = await access(out).then(
    () => true,
    () => false,
  );
  if (exists) throw new DacdError("BAD_INPUT", `${out} exists; name a new file`);
  const parts = join(dirname(out), `.${basename(out)}.parts`);
  await rm(parts, { recursive: true, force: true });
  await mkdir(parts, { recursive: true, mode: 0o700 });
  try {
    const written = new Map<string, { bytes: number; sha256: string }>();
    const result = await rows((name) => {
      if (!/^[a-z][a-z0-9_]*\.csv$/.test(name))
        throw new DacdError("STORE", `a reference archive has no file ${JSON.stringify(name)}`);
      return checkedFile(join(parts, name), (stats) => written.set(name, stats));
    });
    if (result === undefined) {
      if (allowNone) return undefined;
      throw new DacdError("STORE", "no rows were written");
    }
    for (const f of result.files) {
      const got = written.get(f.name);
      if (!got || got.bytes !== f.bytes || got.sha256 !== f.sha256)
        throw new DacdError(
          "STORE",
          `the archive's ${f.name} as received (${got?.bytes ?? 0} bytes, sha256 ${got?.sha256 ?? "none"}) is not the one written (${f.bytes} bytes, sha256 ${f.sha256})`,
        );
    }
    const entries: ArchiveEntry[] = [
      { name: INFO_FILE, data: JSON.stringify(result.info, null, 4) },
      ...result.files.map((f) => ({ name: f.name, path: join(parts, f.name) })),
    ];
    const mtime = new Date(result.mtime);
    await writeArchive(out, entries, Number.isNaN(mtime.getTime()) ? new Date(0) : mtime);
    const { info } = result;
    return {
      out,
      batch_id: info.batch_id,
      sequence_number: info.batch_info.sequence_number,
      roots: { ...info.batch_info.merkle_roots },
      leaves: result.leaves,
      order_subtree_roots: info.order_subtree_roots,
    };
  } finally {
    await rm(parts, { recursive: true, force: true });
  }
}

/**
 * A batch's archive rows, file by file, into `sink` (vaults.csv, then orders_<k>.csv for k in
 * [n, 2n)), and what info.json states: everything of an archive but its packing.
 */
export async function referenceRows(
  store: LevelStore,
  engine: HashEngine,
  opts: ReferenceRowsOptions,
  sink: RowFileSink,
): Promise<ReferenceRows> {
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
  const orderRoot = rootOf(record, profile.order);
  if (record.root_gens[profile.order.name] === undefined)
    throw new DacdError(
      "BAD_INPUT",
      `the order tree of batch ${record.batch_id} is not stored (orders were not validated): the archive needs its orders`,
    );

  const files: ReferenceRows["files"] = [];
  const counted = (name: string): RowFile =>
    new RowFile(sink(name), (stats) => files.push({ name, ...stats }));
  const vaults = await dumpVaults(
    store,
    engine,
    profile.main,
    rootOf(record, profile.main),
    storedRootGen(record, profile.main),
    counted(VAULTS_FILE),
    opts,
  );
  const orderGen = storedRootGen(record, profile.order);
  const orders = await dumpOrders(store, engine, profile.order, orderRoot, orderGen, n, counted, opts);
  const roots: ReferenceInfo["batch_info"]["merkle_roots"] = {
    vault: record.roots[profile.main.name]!,
    order: record.roots[profile.order.name]!,
    ...(record.roots.rollup_vault === undefined ? {} : { rollup_vault: record.roots.rollup_vault }),
  };
  return {
    info: {
      batch_id: record.batch_id,
      batch_info: { merkle_roots: roots, sequence_number: record.sequence_number },
      order_subtree_roots: orders.subtreeRoots,
    },
    mtime: record.verified_at,
    leaves: { vault: vaults, order: orders.count },
    files,
  };
}

/** A row file: text written in order (latin1), its size and SHA-256 told when it ends. */
class RowFile {
  private readonly sha = createHash("sha256");
  private bytes = 0;
  private ended = false;
  constructor(
    private readonly file: DumpFileSink,
    private readonly onEnd: (stats: { bytes: number; sha256: string }) => void,
  ) {}
  async write(text: string): Promise<void> {
    if (text === "") return;
    const buf = Buffer.from(text, "latin1");
    this.sha.update(buf);
    this.bytes += buf.length;
    await this.file.write(buf);
  }
  async close(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    await this.file.end();
    this.onEnd({ bytes: this.bytes, sha256: this.sha.digest("hex") });
  }
}

/** A file on disk as a DumpFileSink, its size and SHA-256 told when it ends. */
function checkedFile(path: string, onEnd: (stats: { bytes: number; sha256: string }) => void): DumpFileSink {
  const inner = fileSink(path);
  const sha = createHash("sha256");
  let bytes = 0;
  return {
    async write(buf) {
      sha.update(buf);
      bytes += buf.length;
      await inner.write(buf);
    },
    async end() {
      await inner.end();
      onEnd({ bytes, sha256: sha.digest("hex") });
    },
  };
}

async function dumpVaults(
  store: LevelStore,
  engine: HashEngine,
  spec: TreeSpec,
  root: Uint8Array,
  rootGen: number,
  file: RowFile,
  opts: ReferenceRowsOptions,
): Promise<number> {
  let count = 0;
  try {
    for await (const block of walkLeaves(engine, spec, root, rootGen, walkOptions(store, opts))) {
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

function walkOptions(store: LevelStore, opts: ReferenceRowsOptions): Parameters<typeof walkLeaves>[4] {
  return {
    chunk: opts.chunk,
    getNodes: async (h, gens) => {
      await opts.pace?.();
      return store.getNodes(h, gens);
    },
  };
}

/** The order rows, one file per subtree, and the subtrees' roots from the tree rebuilt from them. */
async function dumpOrders(
  store: LevelStore,
  engine: HashEngine,
  spec: TreeSpec,
  root: Uint8Array,
  rootGen: number,
  n: number,
  open: (name: string) => RowFile,
  opts: ReferenceRowsOptions,
): Promise<{ count: number; subtreeRoots: string[] }> {
  const shift = BigInt(spec.height - Math.log2(n));
  const ids: bigint[] = [];
  let values = new Uint8Array(32 * 4096);
  let current = n;
  let file = open(ordersFile(n));
  let text = "";
  try {
    for await (const block of walkLeaves(engine, spec, root, rootGen, walkOptions(store, opts))) {
      for (const t of block) {
        const k = n + Number(t.index >> shift);
        while (current < k) {
          await file.write(text);
          text = "";
          await file.close();
          file = open(ordersFile(++current));
        }
        const amount = decodeLeafRecord("order", t.hash) as bigint;
        text += `${t.index},${amount}\r\n`;
        if ((ids.length + 1) * 32 > values.length) {
          const bigger = new Uint8Array(values.length * 2);
          bigger.set(values);
          values = bigger;
        }
        writeBigint32(amount, values, ids.length * 32);
        ids.push(t.index);
      }
      await file.write(text);
      text = "";
      opts.progress?.("order", ids.length);
    }
    while (current < 2 * n - 1) {
      await file.close();
      file = open(ordersFile(++current));
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
