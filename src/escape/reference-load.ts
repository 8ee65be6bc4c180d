import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { basename } from "node:path";
import { pipeline } from "node:stream/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { extract as tarExtract } from "tar-stream";
import { DacdError } from "../errors.js";
import { computeClaimHash } from "../signer/claim.js";
import type { StoreIdentity } from "../storage/batch-record.js";
import { Meta } from "../storage/keys.js";
import { BULK_LOAD_WRITE_BUFFER, type BulkWriter } from "../storage/bulk-writer.js";
import { LevelStore } from "../storage/level-store.js";
import { bytesEqual, hexToBytes32, toHex0x, toHex64, writeBigint32, ZERO32 } from "../util/bytes.js";
import { buildMerkle, buildPatricia, type NodeSink } from "../verifier/trees/bulk/bulk-build.js";
import { MAX_GEN } from "../storage/records/node-record.js";
import { emptyRoots, type Roots } from "../verifier/trees/update/compute-roots.js";
import type { HashEngine } from "../verifier/hash/engine.js";
import { hashAndEncodeLeaves } from "../verifier/trees/format/leaves.js";
import type { NodeWrite } from "../storage/records/node-source.js";
import {
  keptHeights,
  makeProfile,
  siblingProfiles,
  type Heights,
  type Profile,
  type ProfileName,
} from "../model/profile.js";
import { vaultProblem } from "../model/leaf-rules.js";
import type { VaultLeaf } from "../model/state-update.js";
import { bunzip2 } from "./bzip2.js";
import type { LoadedBatchRecord } from "./common.js";
import {
  classifyName,
  INFO_FILE,
  ORDER_FIELDS,
  ordersFile,
  parseInfo,
  RowParser,
  RowSplitter,
  subtreeCountOf,
  VAULT_FIELDS,
  VAULTS_FILE,
  type ReferenceInfo,
  type StatedBatch,
} from "./reference-format.js";
import type { ImportedFrom, OrdersMissing } from "./reference-store.js";
import { buildBeside } from "./store-placement.js";

export interface ReferenceProgress {
  readonly phase: "reading" | "vault tree" | "order tree" | "writing";
  /** Rows read so far (reading), node records built (trees) or records written (writing). */
  readonly count: number;
  /** Compressed bytes read of `totalBytes` (reading), or the records to write (writing). */
  readonly done?: number;
  readonly total?: number;
}

export interface ReferenceLoadOptions {
  readonly archive: string;
  /** The store directory to create; built beside it and moved into place when every root matches. */
  readonly dataDir: string;
  readonly profile: ProfileName;
  readonly heights?: Heights;
  /** Replace a non-empty store (it is removed only once the new one is complete). */
  readonly force?: boolean;
  /** Vault rows hashed per engine round (default 65536). */
  readonly block?: number;
  readonly progress?: (p: ReferenceProgress) => void;
  /** Told the directory the store is built in, once it is this import's own; null once it is moved into place. */
  readonly onBuilding?: (dir: string | null) => void;
  /** The batch as stated outside the archive: needed when it has no info.json, checked against it otherwise. */
  readonly stated?: StatedBatch;
}

export interface ReferenceLoadResult {
  readonly batch_id: number;
  readonly sequence_number: number;
  readonly roots: Record<string, string>;
  readonly leaves: { vault: number; order: number };
  readonly order_subtrees: number;
  readonly nodes_written: number;
  readonly claim_hash: string;
  /** The archive had no order files: the store keeps the stated order root and does not validate orders. */
  readonly orders_missing: boolean;
}

/**
 * Imports the reference member's state archive into a new store at `dataDir`: the archive is
 * decompressed and parsed as a stream, every row range-checked, the vault and order trees built
 * with the bulk loader, their roots and each order subtree's root compared with info.json (or the
 * batch stated outside the archive), and batch N's record and the cursor (continue at N + 1)
 * written. Without order files the order root is kept as stated and the store is marked so
 * (reference-store.ts): it runs without validating orders. The store is built beside dataDir
 * and moved into place only when all of that succeeded; on any refusal nothing is left behind.
 */
export async function importReference(
  engine: HashEngine,
  opts: ReferenceLoadOptions,
): Promise<ReferenceLoadResult> {
  const profile = referenceProfile(opts.profile, opts.heights);
  return buildBeside(
    opts.dataDir,
    opts.force === true,
    async (dir) => {
      const store = await LevelStore.open(dir, { writeBufferSize: BULK_LOAD_WRITE_BUFFER });
      try {
        return await loadInto(store, engine, profile, opts);
      } finally {
        await store.close();
      }
    },
    opts.onBuilding,
  );
}

/** The reference archive holds vaults and orders: a spot member's state. */
export function referenceProfile(name: ProfileName, heights?: Heights): Profile {
  const profile = makeProfile(name, heights);
  if (profile.variant !== "G")
    throw new DacdError(
      "CONFIG",
      `the reference member's state archive holds vaults and orders; profile ${name} keeps positions`,
    );
  return profile;
}

/** Growable packed 32-byte values. */
class Packed {
  buf = new Uint8Array(32 * 4096);
  n = 0;
  room(k: number): void {
    if ((this.n + k) * 32 <= this.buf.length) return;
    const bigger = new Uint8Array(Math.max(this.buf.length * 2, (this.n + k) * 32));
    bigger.set(this.buf.subarray(0, this.n * 32));
    this.buf = bigger;
  }
  push(values: readonly Uint8Array[]): void {
    this.room(values.length);
    for (const v of values) this.buf.set(v, 32 * this.n++);
  }
  pushBigint(v: bigint): void {
    this.room(1);
    writeBigint32(v, this.buf, 32 * this.n++);
  }
  get view(): Uint8Array {
    return this.buf.subarray(0, this.n * 32);
  }
}

/** The leaves of one file: ids in file order, their hashes (values, for orders) packed alike. */
class FileLeaves {
  readonly ids: bigint[] = [];
  readonly hashes = new Packed();
  sorted = true;

  constructor(readonly parser: RowParser) {}

  add(line: number, id: bigint): void {
    const last = this.ids[this.ids.length - 1];
    if (last !== undefined && id <= last) {
      if (id === last) this.parser.fail(line, this.parser.idName, `id ${id} is repeated (line ${line - 1})`);
      this.sorted = false;
    }
    this.ids.push(id);
  }

  /** Ids ascending (rows need not be in order), a repeated id refused with both of its lines. */
  inOrder(): { ids: bigint[]; hashes: Uint8Array } {
    if (this.sorted) return { ids: this.ids, hashes: this.hashes.view };
    const ids = this.ids;
    const order = ids
      .map((_, i) => i)
      .sort((a, b) => (ids[a]! < ids[b]! ? -1 : ids[a]! > ids[b]! ? 1 : a - b));
    const sortedIds = order.map((i) => ids[i]!);
    const hashes = new Uint8Array(order.length * 32);
    const src = this.hashes.view;
    order.forEach((i, k) => hashes.set(src.subarray(i * 32, i * 32 + 32), k * 32));
    for (let k = 1; k < sortedIds.length; k++) {
      if (sortedIds[k] === sortedIds[k - 1]) {
        // Every line of the file is a row, so a row's line is its index + 1.
        const [first, second] = [order[k - 1]! + 1, order[k]! + 1].sort((a, b) => a - b);
        this.parser.fail(second!, this.parser.idName, `id ${sortedIds[k]} is repeated (line ${first})`);
      }
    }
    return { ids: sortedIds, hashes };
  }
}

/** The batch the archive holds: info.json's or the stated one, and where it was read. */
interface BatchInfo {
  readonly batch_id: number;
  readonly batch_info: ReferenceInfo["batch_info"];
  /** info.json's order subtree roots (none when the batch was stated outside the archive). */
  readonly order_subtree_roots?: readonly string[];
  readonly source: string;
}

/** What the stream held, once read. */
interface Contents {
  info?: ReferenceInfo;
  vaults?: FileLeaves;
  orders: Map<number, FileLeaves>;
  rows: number;
}

async function loadInto(
  store: LevelStore,
  engine: HashEngine,
  profile: Profile,
  opts: ReferenceLoadOptions,
): Promise<ReferenceLoadResult> {
  const writer = store.bulkWriter();
  try {
    const contents = await readArchive(writer, engine, profile, opts);
    const name = basename(opts.archive);
    if (!contents.vaults) throw new DacdError("BAD_INPUT", `${name}: the archive has no ${VAULTS_FILE}`);
    const info = batchOf(name, contents, opts.stated);
    const n = checkFiles(name, contents, info);
    // The records are written under the archive's batch (storage/keys.ts).
    if (info.batch_id > MAX_GEN)
      throw new DacdError(
        "BAD_INPUT",
        `${info.source}, field batch_id: ${info.batch_id} is above ${MAX_GEN}, the largest the store keys take`,
      );
    const result = await buildTrees(writer, engine, profile, contents, info, n, opts);
    const total = writer.taken;
    opts.progress?.({ phase: "writing", count: 0, done: 0, total });
    await writer.finish(info.batch_id, (written) =>
      opts.progress?.({ phase: "writing", count: written, done: written, total }),
    );
    const claimRoots = withStatedOrder(profile, info, result.roots);
    await writeBatch(store, profile, info, claimRoots, result.rootGens, n === 0);
    return {
      batch_id: info.batch_id,
      sequence_number: info.batch_info.sequence_number,
      roots: recordRoots(info, claimRoots),
      leaves: result.leaves,
      order_subtrees: n,
      nodes_written: result.nodesWritten,
      claim_hash: toHex0x(computeClaimHash(profile, claimRoots, info.batch_info.sequence_number)),
      orders_missing: n === 0,
    };
  } finally {
    await writer.abandon();
  }
}

/** Decompresses and parses the archive as a stream; vault leaves are hashed and their records spilled as they come. */
async function readArchive(
  writer: BulkWriter,
  engine: HashEngine,
  profile: Profile,
  opts: ReferenceLoadOptions,
): Promise<Contents> {
  const name = basename(opts.archive);
  let totalBytes: number;
  try {
    const st = await stat(opts.archive);
    if (!st.isFile()) throw new Error("not a file");
    totalBytes = st.size;
  } catch (err) {
    throw new DacdError("BAD_INPUT", `cannot read the archive ${opts.archive}: ${(err as Error).message}`);
  }
  const contents: Contents = { orders: new Map(), rows: 0 };
  const bz = bunzip2(name);
  const extract = tarExtract();
  let bytesIn = 0;
  const source = createReadStream(opts.archive);
  source.on("data", (c) => (bytesIn += c.length));
  const feeding = pipeline(source, bz.input);
  const unpacking = pipeline(bz.output, extract);
  feeding.catch(() => undefined);
  unpacking.catch(() => undefined);
  const report = (): void =>
    opts.progress?.({ phase: "reading", count: contents.rows, done: bytesIn, total: totalBytes });

  const seen = new Set<string>();
  try {
    for await (const entry of extract) {
      const file = entry.header.name.replace(/^\.\//, "");
      const kind = entry.header.type === "file" ? classifyName(file) : undefined;
      if (kind === undefined)
        throw new DacdError("BAD_INPUT", `${name}: extra file ${JSON.stringify(file)} in the archive`);
      if (seen.has(file)) throw new DacdError("BAD_INPUT", `${name}: ${file} appears twice in the archive`);
      seen.add(file);
      if (kind.kind === "info") {
        const chunks: Buffer[] = [];
        let size = 0;
        for await (const c of entry as AsyncIterable<Buffer>) {
          size += c.length;
          if (size > 8 << 20) throw new DacdError("BAD_INPUT", `${INFO_FILE}: larger than 8 MiB`);
          chunks.push(c);
        }
        contents.info = parseInfo(Buffer.concat(chunks).toString("utf8"), profile.order.height);
        continue;
      }
      const consume =
        kind.kind === "vaults"
          ? ((contents.vaults = new FileLeaves(new RowParser(VAULTS_FILE, "vault_id", profile.main.height))),
            vaultConsumer(writer, engine, contents.vaults, opts.block ?? 65536))
          : orderConsumer(profile, kind.k, contents.orders);
      const rows = new RowSplitter(consume.parser, consume.names);
      let lastReport = 0;
      for await (const c of entry as AsyncIterable<Buffer>) {
        const batch = rows.push(c);
        await consume.rows(batch, rows.line);
        rows.line += batch.length;
        contents.rows += batch.length;
        if (contents.rows - lastReport >= 16384) {
          lastReport = contents.rows;
          report();
        }
      }
      const last = rows.end();
      await consume.rows(last, rows.line);
      rows.line += last.length;
      contents.rows += last.length;
      await consume.end();
      report();
    }
    await Promise.all([feeding, unpacking]);
    await bz.done;
  } catch (err) {
    if (err instanceof DacdError) {
      // A row, a file or bzip2 itself refused: that is the reason; stop reading.
      bz.kill();
      source.destroy();
      await bz.done.catch(() => undefined);
      throw err;
    }
    // The tar stream broke. A damaged archive breaks it too, and then bzip2's own word says more:
    // give it a moment to exit with its reason before it is stopped.
    const bzErr = await Promise.race([
      bz.done.then(
        () => undefined,
        (e: unknown) => e as Error,
      ),
      sleep(2000, undefined, { ref: false }),
    ]);
    bz.kill();
    source.destroy();
    await bz.done.catch(() => undefined);
    if (bzErr && !/SIGTERM|SIGPIPE|broken pipe|I\/O or other error/i.test(bzErr.message)) throw bzErr;
    throw new DacdError(
      "BAD_INPUT",
      `${name}: not a tar archive of the reference member's state: ${(err as Error).message}`,
    );
  }
  report();
  return contents;
}

interface Consumer {
  readonly parser: RowParser;
  readonly names: readonly string[];
  /** Rows in file order; the first is on line `before + 1`. */
  rows(rows: string[], before: number): Promise<void>;
  end(): Promise<void>;
}

/** vaults.csv rows: parsed, hashed a block at a time (one block in the engine while the next is parsed). */
function vaultConsumer(writer: BulkWriter, engine: HashEngine, leaves: FileLeaves, block: number): Consumer {
  const p = leaves.parser;
  let pending: VaultLeaf[] = [];
  let inFlight: Promise<void> = Promise.resolve();
  const flush = (): void => {
    const batch = pending;
    pending = [];
    const prev = inFlight;
    inFlight = (async () => {
      const { hashes, records } = await hashAndEncodeLeaves(engine, "vault", batch);
      await prev;
      const writes: NodeWrite[] = [];
      for (let i = 0; i < batch.length; i++) writes.push({ hash: hashes[i]!, record: records[i]! });
      await writer.putLeaves(writes);
      leaves.hashes.push(hashes);
    })();
    inFlight.catch(() => undefined);
  };
  return {
    parser: p,
    names: VAULT_FIELDS,
    rows: async (rows, before) => {
      for (let i = 0; i < rows.length; i++) {
        const line = before + i + 1;
        const f = p.fields(line, rows[i]!, VAULT_FIELDS);
        leaves.add(line, p.id(line, f[0]!));
        const key = p.fieldElement(line, "stark_key", f[1]!);
        const token = p.fieldElement(line, "token", f[2]!);
        const balance = p.amount(line, "balance", f[3]!);
        const problem = vaultProblem({ key, token, balance });
        if (problem) p.fail(line, problem.field === "key" ? "stark_key" : "token", problem.message);
        pending.push({ key, token, balance });
        if (pending.length >= block) {
          // One block hashing while the next is parsed; no more.
          await inFlight;
          flush();
        }
      }
    },
    end: async () => {
      if (pending.length > 0) flush();
      await inFlight;
    },
  };
}

/** orders_<k>.csv rows: the ids must lie under order subtree k; an order's leaf is its amount. */
function orderConsumer(profile: Profile, k: number, files: Map<number, FileLeaves>): Consumer {
  const n = subtreeCountOf(k);
  const file = ordersFile(k);
  const height = profile.order.height;
  if (Math.log2(n) > height) throw new DacdError("BAD_INPUT", `${file}: the order tree has no node ${k}`);
  const leaves = new FileLeaves(new RowParser(file, "order_id", height));
  files.set(k, leaves);
  const p = leaves.parser;
  const shift = BigInt(height - Math.log2(n));
  const prefix = BigInt(k - n);
  return {
    parser: p,
    names: ORDER_FIELDS,
    rows: (rows, before) => {
      for (let i = 0; i < rows.length; i++) {
        const line = before + i + 1;
        const f = p.fields(line, rows[i]!, ORDER_FIELDS);
        const mismatch = (): void => {
          const other = otherSpotProfile(profile, k, f[0]!);
          if (other)
            p.fail(
              line,
              "order_id",
              `the archive's orders fit profile ${other}'s order tree, not ${profile.name}'s: the profile does not match the archive (load it with profile ${other})`,
            );
        };
        let id: bigint;
        try {
          id = p.id(line, f[0]!);
        } catch (err) {
          mismatch();
          throw err;
        }
        if (id >> shift !== prefix) {
          mismatch();
          p.fail(
            line,
            "order_id",
            `order ${id} is not under the order tree's node ${k} (its subtree ${k - n} of ${n})`,
          );
        }
        leaves.add(line, id);
        leaves.hashes.pushBigint(p.amount(line, "fulfilled_amount", f[1]!));
      }
      return Promise.resolve();
    },
    end: () => Promise.resolve(),
  };
}

/**
 * The other spot profile, when an order id that does not fit this profile's order tree fits its
 * order tree under the same subtree: the usual reason is an archive of the other StarkEx version
 * (Patricia order tree of 251 levels, or Merkle of 63), which a row error would not say.
 */
function otherSpotProfile(profile: Profile, k: number, idText: string): ProfileName | undefined {
  if (!/^(0|[1-9][0-9]*)$/.test(idText)) return undefined;
  const [other] = siblingProfiles(profile.name);
  if (!other) return undefined;
  const height = makeProfile(other).order.height;
  const id = BigInt(idText);
  const n = subtreeCountOf(k);
  if (id >= 1n << BigInt(height)) return undefined;
  return id >> BigInt(height - Math.log2(n)) === BigInt(k - n) ? other : undefined;
}

/**
 * The batch the archive holds: info.json's, or the one stated outside it (both: they must agree).
 * An archive without info.json and no stated batch is refused: that is how the reference member's
 * own dump_state leaves it, and the command must be told the batch.
 */
function batchOf(name: string, c: Contents, stated: StatedBatch | undefined): BatchInfo {
  if (!c.info) {
    if (!stated)
      throw new DacdError(
        "USAGE",
        `${name} has no ${INFO_FILE} (the reference member's dump_state writes none): name its batch with --batch N, with its roots and sequence number from --batch-info FILE or the gateway (--config)`,
      );
    return { ...stated };
  }
  const info = { ...c.info, source: INFO_FILE };
  if (!stated) return info;
  const differ = (what: string, inArchive: unknown, given: unknown): never => {
    throw new DacdError(
      "BAD_INPUT",
      `${name}: ${INFO_FILE} states ${what} ${String(inArchive)}, ${stated.source} ${String(given)}`,
    );
  };
  if (info.batch_id !== stated.batch_id) differ("batch", info.batch_id, stated.batch_id);
  const a = info.batch_info;
  const b = stated.batch_info;
  if (a.sequence_number !== b.sequence_number)
    differ("sequence number", a.sequence_number, b.sequence_number);
  for (const tree of ["vault", "order", "rollup_vault"] as const)
    if (b.merkle_roots[tree] !== undefined && a.merkle_roots[tree] !== b.merkle_roots[tree])
      differ(`the ${tree} root`, a.merkle_roots[tree] ?? "none", b.merkle_roots[tree]);
  return info;
}

/**
 * Every file the archive must hold, once: vaults.csv, and either no order file at all (the
 * reference member's own archive) or orders_<k>.csv for every k in [n, 2n), n as info.json says
 * or, without it, as the lowest file's k says. Returns n (0: no order files).
 */
function checkFiles(name: string, c: Contents, info: BatchInfo): number {
  const missing = (file: string): never => {
    throw new DacdError("BAD_INPUT", `${name}: the archive has no ${file}`);
  };
  if (!c.vaults) return missing(VAULTS_FILE);
  if (c.orders.size === 0) return 0;
  const n = info.order_subtree_roots?.length ?? subtreeCountOf(Math.min(...c.orders.keys()));
  for (const k of c.orders.keys())
    if (k < n || k >= 2 * n)
      throw new DacdError(
        "BAD_INPUT",
        `${name}: extra file ${ordersFile(k)} (${info.order_subtree_roots ? `${INFO_FILE} has` : "the files make"} ${n} order subtrees: orders_${n}.csv to orders_${2 * n - 1}.csv)`,
      );
  for (let k = n; k < 2 * n; k++) if (!c.orders.has(k)) missing(ordersFile(k));
  return n;
}

/** Builds both trees (their records spilled to the writer) and checks every stated root. */
async function buildTrees(
  writer: BulkWriter,
  engine: HashEngine,
  profile: Profile,
  c: Contents,
  info: BatchInfo,
  n: number,
  opts: ReferenceLoadOptions,
): Promise<{
  roots: Roots;
  rootGens: Record<string, number>;
  leaves: { vault: number; order: number };
  nodesWritten: number;
}> {
  let nodesWritten = 0;
  const sinkFor =
    (phase: "vault tree" | "order tree"): NodeSink =>
    async (nodes) => {
      await writer.putNodes(nodes);
      nodesWritten += nodes.length;
      opts.progress?.({ phase, count: nodesWritten });
    };
  const mismatch = (field: string, tree: string, stated: string, computed: Uint8Array): never => {
    throw new DacdError(
      "BAD_INPUT",
      info.source === INFO_FILE
        ? `${INFO_FILE}, field ${field}: the ${tree} root built from the archive is ${toHex64(computed)}, info.json states ${stated}`
        : `the ${tree} root built from the archive is ${toHex64(computed)}; ${info.source} states ${stated} for batch ${info.batch_id}`,
    );
  };

  const vaults = c.vaults!.inOrder();
  const main = profile.main;
  const vaultRoot = await buildMerkle(
    engine,
    await emptyRoots(engine, main.leaf, main.height),
    vaults,
    sinkFor("vault tree"),
    { gen: info.batch_id },
    "vault tree",
  );
  const statedVault = info.batch_info.merkle_roots.vault;
  if (toHex64(vaultRoot) !== statedVault)
    mismatch("batch_info.merkle_roots.vault", "vault tree", statedVault, vaultRoot);

  const main0 = { [main.name]: vaults.ids.length === 0 ? 0 : info.batch_id };
  if (n === 0)
    return {
      roots: { [main.name]: vaultRoot },
      rootGens: main0,
      leaves: { vault: vaults.ids.length, order: 0 },
      nodesWritten,
    };

  // The order files in subtree order: each one's ids lie under its own node, so the whole is sorted.
  const ids: bigint[] = [];
  const hashes = new Packed();
  for (let k = n; k < 2 * n; k++) {
    const part = c.orders.get(k)!.inOrder();
    for (const id of part.ids) ids.push(id);
    hashes.room(part.ids.length);
    hashes.buf.set(part.hashes, hashes.n * 32);
    hashes.n += part.ids.length;
  }
  const order = profile.order;
  const probeHeight = order.height - Math.log2(n);
  const subtrees = new Map<bigint, Uint8Array>();
  const probe = { height: probeHeight, onNode: (i: bigint, h: Uint8Array) => subtrees.set(i, h) };
  const emptyOrders =
    order.kind === "merkle" ? await emptyRoots(engine, order.leaf, order.height) : undefined;
  const orderRoot =
    order.kind === "merkle"
      ? await buildMerkle(
          engine,
          emptyOrders!,
          { ids, hashes: hashes.view },
          sinkFor("order tree"),
          { probe, gen: info.batch_id },
          "order tree",
        )
      : await buildPatricia(
          engine,
          order.height,
          { ids, hashes: hashes.view },
          sinkFor("order tree"),
          { probe, gen: info.batch_id },
          "order tree",
        );
  const statedOrder = info.batch_info.merkle_roots.order;
  if (toHex64(orderRoot) !== statedOrder)
    mismatch("batch_info.merkle_roots.order", "order tree", statedOrder, orderRoot);
  const emptySubtree = emptyOrders ? emptyOrders[probeHeight]! : ZERO32;
  const subtreeRoots = info.order_subtree_roots ?? [];
  for (let j = 0; j < subtreeRoots.length; j++) {
    const computed = subtrees.get(BigInt(j)) ?? emptySubtree;
    const stated = subtreeRoots[j]!;
    if (!bytesEqual(computed, hexToBytes32(stated)!))
      throw new DacdError(
        "BAD_INPUT",
        `${INFO_FILE}, field order_subtree_roots[${j}]: the root of order subtree ${n + j} built from ${ordersFile(n + j)} is ${toHex64(computed)}, info.json states ${stated}`,
      );
  }
  return {
    roots: { [main.name]: vaultRoot, [order.name]: orderRoot },
    // An empty tree has no record; the others' roots were written under the batch's id.
    rootGens: { ...main0, [order.name]: ids.length === 0 ? 0 : info.batch_id },
    leaves: { vault: vaults.ids.length, order: ids.length },
    nodesWritten,
  };
}

/** The roots the claim is made of: those built, and the order root as stated when no order files were read. */
function withStatedOrder(profile: Profile, info: BatchInfo, roots: Roots): Roots {
  if (roots[profile.order.name]) return roots;
  return { ...roots, [profile.order.name]: hexToBytes32(info.batch_info.merkle_roots.order)! };
}

/** The batch record's roots: the two built (or stated), and a stated rollup vault root kept as stated. */
function recordRoots(info: BatchInfo, roots: Roots): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, root] of Object.entries(roots)) out[name] = toHex64(root);
  const rollup = info.batch_info.merkle_roots.rollup_vault;
  if (rollup !== undefined) out.rollup_vault = rollup;
  return out;
}

/** Identity, batch N's record, the import marker and the cursor: one fsynced write, after every record. */
async function writeBatch(
  store: LevelStore,
  profile: Profile,
  info: BatchInfo,
  roots: Roots,
  rootGens: Record<string, number>,
  ordersMissing: boolean,
): Promise<void> {
  const sequenceNumber = info.batch_info.sequence_number;
  const heights = keptHeights(profile, false);
  const record: LoadedBatchRecord = {
    batch_id: info.batch_id,
    // Not in the archive; the record is never posted, and `dacd check` accepts a loaded first batch.
    prev_batch_id: info.batch_id - 1,
    sequence_number: sequenceNumber,
    roots: recordRoots(info, roots),
    root_gens: rootGens,
    heights,
    claim_hash: toHex0x(computeClaimHash(profile, roots, sequenceNumber)),
    signature: "",
    member_key: "",
    verified_at: new Date().toISOString(),
    loaded_from_dump: true,
  };
  const identity: StoreIdentity = { profile: profile.name, heights };
  const imported: ImportedFrom = {
    format: "reference-state-archive",
    batch_id: info.batch_id,
    at: record.verified_at,
  };
  const meta: Record<string, unknown> = { [Meta.importedFrom]: imported };
  if (ordersMissing) {
    const missing: OrdersMissing = { batch_id: info.batch_id, at: record.verified_at };
    meta[Meta.ordersMissing] = missing;
  }
  await store.batches.moveCursor({ kind: "loaded", record }, { identity, meta });
}
