import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { DacdError } from "../errors.js";
import { inBatchRange, MAX_BATCH_NUMBER } from "../model/batch-range.js";
import { MAX_GEN } from "../storage/records/node-record.js";
import { computeClaimHash } from "../signer/claim.js";
import type { StoreIdentity } from "../storage/batch-record.js";
import type { BulkWriter } from "../storage/bulk-writer.js";
import { LevelStore } from "../storage/level-store.js";
import { hexToBytes32, toHex0x, toHex64 } from "../util/bytes.js";
import { buildMerkle, buildPatricia, type NodeSink } from "../verifier/trees/bulk/bulk-build.js";
import { emptyRoots, type Roots } from "../verifier/trees/update/compute-roots.js";
import type { HashEngine } from "../verifier/hash/engine.js";
import type { NodeWrite } from "../storage/records/node-source.js";
import { hashAndEncodeLeaves } from "../verifier/trees/format/leaves.js";
import {
  isProfileName,
  keptTrees,
  makeProfile,
  type Profile,
  type TreeName,
  type TreeSpec,
} from "../model/profile.js";
import type { Leaf } from "../model/state-update.js";
import type { LoadedBatchRecord } from "./common.js";
import {
  CSV_HEADERS,
  DUMP_FILES,
  DUMP_FORMAT,
  parseLeafLine,
  type Manifest,
  type ManifestTree,
} from "./formats.js";

export interface LoadOptions {
  readonly fromDir: string;
  /** When loading for a configured member: its profile must be the dump's. */
  readonly expectProfile?: string;
  /** Leaves hashed per engine round (default 65536). */
  readonly block?: number;
  /**
   * Progress: leaves read and nodes built per tree, then ("all trees", "writing") the records
   * written so far, of `total`.
   */
  readonly progress?: (
    tree: string,
    phase: "leaves" | "tree" | "writing",
    count: number,
    total?: number,
  ) => void;
}

export interface LoadResult {
  readonly batch_id: number;
  readonly sequence_number: number;
  readonly roots: Record<string, string>;
  readonly leaves: Record<string, number>;
  readonly nodes_written: number;
  readonly claim_hash: string;
}

/**
 * Builds a fresh store from a dump: files checked against the manifest first, then every tree
 * built bottom-up and its root compared (the records spilled to files meanwhile, BulkWriter), then
 * the records written in key order, then identity, a batch record marked loaded_from_dump and the
 * cursor (continue at batch_id + 1). On any refusal the store is left empty again.
 */
export async function loadDump(
  store: LevelStore,
  engine: HashEngine,
  opts: LoadOptions,
): Promise<LoadResult> {
  const dump = await openDump(store, opts);
  const writer = store.bulkWriter();
  try {
    const built: BuiltTrees = { roots: {}, rootGens: {}, leaves: {}, nodesWritten: 0 };
    for (const spec of dump.trees) await buildTree(writer, engine, dump, spec, built, opts);
    // Every tree checked: the records go to LevelDB, in key order, before the batch record.
    const total = writer.taken;
    opts.progress?.("all trees", "writing", 0, total);
    await writer.finish(dump.gen, (written) => opts.progress?.("all trees", "writing", written, total));
    const record = await putLoadedBatch(store, dump, built);
    return {
      batch_id: record.batch_id,
      sequence_number: record.sequence_number,
      roots: record.roots,
      leaves: built.leaves,
      nodes_written: built.nodesWritten,
      claim_hash: record.claim_hash,
    };
  } catch (err) {
    await writer.abandon();
    await store.clear(); // it was empty: leave nothing half-built behind
    throw err;
  }
}

/** A dump checked before anything is written: its manifest, profile, kept trees and files. */
interface CheckedDump {
  readonly manifest: Manifest;
  readonly profile: Profile;
  readonly trees: readonly TreeSpec[];
  /** The batch the records are written under (storage/keys.ts). */
  readonly gen: number;
}

/** What the trees built so far come to. */
interface BuiltTrees {
  readonly roots: Roots;
  readonly rootGens: Record<string, number>;
  readonly leaves: Record<string, number>;
  nodesWritten: number;
}

/** The store must be empty, the manifest match the configuration, and each file its entry. */
async function openDump(store: LevelStore, opts: LoadOptions): Promise<CheckedDump> {
  if (!(await store.isEmpty()))
    throw new DacdError("BAD_INPUT", `the store ${store.dir} is not empty; load only builds a fresh store`);
  const manifest = await readManifest(opts.fromDir);
  if (opts.expectProfile !== undefined && opts.expectProfile !== manifest.profile) {
    throw new DacdError(
      "CONFIG",
      `the dump is of profile ${manifest.profile}, the configuration says ${opts.expectProfile}`,
    );
  }
  const profile = makeProfile(manifest.profile as "spot", manifest.heights);
  const trees = keptTrees(profile, manifest.heights.rollup_vault !== undefined);
  for (const spec of trees) checkTreeEntry(manifest, spec);
  for (const spec of trees) await checkFile(opts.fromDir, manifest.trees[spec.name]!, spec.name);
  const gen = manifest.batch_id;
  if (gen > MAX_GEN)
    throw new DacdError(
      "BAD_INPUT",
      `the dump's batch_id ${gen} is above ${MAX_GEN}, the largest the store keys take`,
    );
  return { manifest, profile, trees, gen };
}

/** One tree: its leaves read and hashed, the tree built into the writer, its root compared. */
async function buildTree(
  writer: BulkWriter,
  engine: HashEngine,
  dump: CheckedDump,
  spec: TreeSpec,
  built: BuiltTrees,
  opts: LoadOptions,
): Promise<void> {
  const entry = dump.manifest.trees[spec.name]!;
  const want = hexToBytes32(entry.root)!;
  if (entry.file === null) {
    built.roots[spec.name] = want; // not stored at dump time: kept as stated
    return;
  }
  const path = join(opts.fromDir, entry.file);
  const { ids, hashes } = await readLeaves(writer, engine, spec, path, dump.profile.orderAmountLimit, opts);
  if (ids.length !== entry.leaves) {
    throw new DacdError(
      "BAD_INPUT",
      `${entry.file} holds ${ids.length} leaves, the manifest says ${entry.leaves}`,
    );
  }
  built.leaves[spec.name] = ids.length;
  const sink: NodeSink = async (nodes) => {
    await writer.putNodes(nodes);
    built.nodesWritten += nodes.length;
    opts.progress?.(spec.name, "tree", built.nodesWritten);
  };
  const what = `${spec.name} tree`;
  const gen = dump.gen;
  const root =
    spec.kind === "merkle"
      ? await buildMerkle(
          engine,
          await emptyRoots(engine, spec.leaf, spec.height),
          { ids, hashes },
          sink,
          { gen },
          what,
        )
      : await buildPatricia(engine, spec.height, { ids, hashes }, sink, { gen }, what);
  if (toHex64(root) !== toHex64(want)) {
    throw new DacdError(
      "BAD_INPUT",
      `the ${spec.name} tree built from ${entry.file} has root ${toHex64(root)}, the manifest says ${toHex64(want)}`,
    );
  }
  built.roots[spec.name] = root;
  built.rootGens[spec.name] = ids.length === 0 ? 0 : gen;
}

/** The claim checked against the manifest, then the batch record, the identity and the cursor. */
async function putLoadedBatch(
  store: LevelStore,
  dump: CheckedDump,
  built: BuiltTrees,
): Promise<LoadedBatchRecord> {
  const { manifest, profile } = dump;
  const claim = toHex0x(computeClaimHash(profile, built.roots, manifest.sequence_number));
  if (claim !== manifest.claim_hash) {
    throw new DacdError(
      "BAD_INPUT",
      `the manifest's claim_hash ${manifest.claim_hash} does not match its roots and sequence number (${claim})`,
    );
  }
  const record: LoadedBatchRecord = {
    batch_id: manifest.batch_id,
    prev_batch_id: manifest.prev_batch_id,
    sequence_number: manifest.sequence_number,
    roots: Object.fromEntries(Object.entries(manifest.roots).map(([k, v]) => [k, v.toLowerCase()])),
    root_gens: built.rootGens,
    heights: manifest.heights,
    claim_hash: claim,
    signature: "",
    member_key: "",
    verified_at: new Date().toISOString(),
    loaded_from_dump: true,
  };
  const identity: StoreIdentity = { profile: profile.name, heights: manifest.heights };
  await store.batches.moveCursor({ kind: "loaded", record }, { identity });
  return record;
}

async function readManifest(dir: string): Promise<Manifest> {
  const path = join(dir, "manifest.json");
  let m: Manifest;
  try {
    m = JSON.parse(await readFile(path, "utf8")) as Manifest;
  } catch (err) {
    throw new DacdError("BAD_INPUT", `cannot read the dump's manifest ${path}: ${(err as Error).message}`);
  }
  const bad = (what: string): never => {
    throw new DacdError("BAD_INPUT", `manifest.json: ${what}`);
  };
  if (m.format !== DUMP_FORMAT) bad(`format ${JSON.stringify(m.format)} is not ${DUMP_FORMAT}`);
  if (!isProfileName(m.profile)) bad(`unknown profile ${JSON.stringify(m.profile)}`);
  for (const k of ["batch_id", "sequence_number"] as const)
    if (!inBatchRange(m[k])) bad(`${k} ${JSON.stringify(m[k])} is not an integer in 0 … ${MAX_BATCH_NUMBER}`);
  if (!Number.isSafeInteger(m.prev_batch_id) || m.prev_batch_id < -1)
    bad("prev_batch_id is not an integer >= -1");
  if (typeof m.heights !== "object" || m.heights === null) bad("heights missing");
  if (typeof m.roots !== "object" || m.roots === null) bad("roots missing");
  if (typeof m.trees !== "object" || m.trees === null) bad("trees missing");
  if (typeof m.claim_hash !== "string") bad("claim_hash missing");
  try {
    makeProfile(m.profile as "spot", m.heights);
  } catch (err) {
    bad((err as Error).message);
  }
  return m;
}

function checkTreeEntry(m: Manifest, spec: TreeSpec): void {
  const e = m.trees[spec.name];
  const bad = (what: string): never => {
    throw new DacdError("BAD_INPUT", `manifest.json: ${spec.name} tree: ${what}`);
  };
  if (!e) return bad("missing");
  if (e.kind !== spec.kind || e.height !== spec.height || e.leaf !== spec.leaf)
    bad(`kind, leaf or height differ from the ${m.profile} profile`);
  if (!hexToBytes32(e.root ?? "") || m.roots[spec.name]?.toLowerCase() !== e.root.toLowerCase())
    bad("root missing or not the one in roots");
  if (e.file === null) {
    if (spec.name !== "order") bad("only an unchecked order tree may come without a file");
    return;
  }
  if (e.file !== DUMP_FILES[spec.name]) bad(`file should be ${DUMP_FILES[spec.name]}`);
  if (!Number.isSafeInteger(e.leaves) || typeof e.sha256 !== "string") bad("leaves or sha256 missing");
}

async function checkFile(dir: string, e: ManifestTree, tree: TreeName): Promise<void> {
  if (e.file === null) return;
  const path = join(dir, e.file);
  try {
    await stat(path);
  } catch {
    throw new DacdError(
      "BAD_INPUT",
      `the dump has no ${e.file} (the ${tree} tree's file named in the manifest)`,
    );
  }
  const sha = createHash("sha256");
  let bytes = 0;
  for await (const chunk of createReadStream(path)) {
    sha.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
  }
  const digest = sha.digest("hex");
  if (digest !== e.sha256?.toLowerCase()) {
    throw new DacdError(
      "BAD_INPUT",
      `${e.file}: SHA-256 ${digest} does not match the manifest's ${e.sha256}`,
    );
  }
  if (e.bytes !== null && e.bytes !== bytes)
    throw new DacdError("BAD_INPUT", `${e.file}: ${bytes} bytes, the manifest says ${e.bytes}`);
}

/** Growable packed 32-byte values. */
class Packed {
  buf = new Uint8Array(32 * 1024);
  n = 0;
  push(values: readonly Uint8Array[]): void {
    while ((this.n + values.length) * 32 > this.buf.length) {
      const bigger = new Uint8Array(this.buf.length * 2);
      bigger.set(this.buf.subarray(0, this.n * 32));
      this.buf = bigger;
    }
    for (const v of values) this.buf.set(v, 32 * this.n++);
  }
  get view(): Uint8Array {
    return this.buf.subarray(0, this.n * 32);
  }
}

/** Parses a dump file, hashes its leaves in large engine calls and writes their leaf records. */
async function readLeaves(
  writer: BulkWriter,
  engine: HashEngine,
  spec: TreeSpec,
  path: string,
  orderAmountLimit: bigint,
  opts: LoadOptions,
): Promise<{ ids: bigint[]; hashes: Uint8Array }> {
  const block = opts.block ?? 65536;
  const file = DUMP_FILES[spec.name];
  const ids: bigint[] = [];
  const hashes = new Packed();
  let pending: Leaf[] = [];
  const flush = async (): Promise<void> => {
    if (pending.length === 0) return;
    const { hashes: hs, records: encoded } = await hashAndEncodeLeaves(engine, spec.leaf, pending);
    const records: NodeWrite[] = [];
    for (let i = 0; i < pending.length; i++) {
      const record = encoded[i];
      if (record) records.push({ hash: hs[i]!, record });
    }
    await writer.putLeaves(records);
    hashes.push(hs);
    pending = [];
    opts.progress?.(spec.name, "leaves", ids.length);
  };

  const header = CSV_HEADERS[spec.leaf];
  let lineNo = 0;
  let sorted = true;
  const lines = createInterface({ input: createReadStream(path, "utf8"), crlfDelay: Infinity });
  for await (const line of lines) {
    lineNo++;
    if (lineNo === 1 && header !== undefined) {
      if (line !== header) throw new DacdError("BAD_INPUT", `${file}: the header must be ${header}`);
      continue;
    }
    if (line === "") continue;
    const { id, leaf } = parseLeafLine(spec.leaf, line, `${file} line ${lineNo}`, orderAmountLimit);
    if (id >= 1n << BigInt(spec.height))
      throw new DacdError("BAD_INPUT", `${file} line ${lineNo}: id ${id} is outside the ${spec.name} tree`);
    if (ids.length > 0 && id <= ids[ids.length - 1]!) sorted = false;
    ids.push(id);
    pending.push(leaf);
    if (pending.length >= block) await flush();
  }
  await flush();
  if (sorted) return { ids, hashes: hashes.view };

  // Not in id order (a hand-made dump): sort, and refuse duplicates.
  const order = ids.map((_, i) => i).sort((a, b) => (ids[a]! < ids[b]! ? -1 : ids[a]! > ids[b]! ? 1 : 0));
  const sortedIds = order.map((i) => ids[i]!);
  const sortedHashes = new Uint8Array(order.length * 32);
  order.forEach((i, k) => sortedHashes.set(hashes.view.subarray(i * 32, i * 32 + 32), k * 32));
  for (let k = 1; k < sortedIds.length; k++) {
    if (sortedIds[k] === sortedIds[k - 1])
      throw new DacdError("BAD_INPUT", `${file}: leaf id ${sortedIds[k]} appears twice`);
  }
  return { ids: sortedIds, hashes: sortedHashes };
}
