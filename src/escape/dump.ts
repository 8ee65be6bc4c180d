import { createHash } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, readdir, rename, writeFile } from "node:fs/promises";
import { once } from "node:events";
import { join } from "node:path";
import { DacdError } from "../errors.js";
import { storeProfile } from "../inspect/inspect.js";
import type { LevelStore } from "../storage/level-store.js";
import { toHex64 } from "../util/bytes.js";
import type { HashEngine } from "../verifier/hash/engine.js";
import { decodeLeafRecord } from "../verifier/trees/format/leaves.js";
import type { TreeSpec } from "../model/profile.js";
import type { Leaf } from "../model/state-update.js";
import { resolveBatch, rootOf } from "./common.js";
import {
  CSV_HEADERS,
  DUMP_FILES,
  DUMP_FORMAT,
  leafLine,
  type Manifest,
  type ManifestTree,
} from "./formats.js";
import { walkLeaves } from "../verifier/trees/read/walk-leaves.js";

export interface DumpOptions {
  /** Where the files go: a directory (created; must be empty)… */
  readonly outDir?: string;
  /** …or any other destination (the daemon streams a dump over its control socket). */
  readonly sink?: DumpSink;
  readonly batchId?: number;
  /** Subtrees per store read (default 4096). */
  readonly chunk?: number;
  /** Called after each block of leaves written. */
  readonly progress?: (tree: string, leaves: number) => void;
  /** Awaited before each read of the walk (the daemon: yield to a batch being verified). */
  readonly pace?: () => Promise<void>;
}

/** One file of a dump being written, in order; `write` resolves when more may be written. */
export interface DumpFileSink {
  write(buf: Buffer): Promise<void>;
  end(): Promise<void>;
}

/** Where a dump goes: its files one after another, then its manifest. */
export interface DumpSink {
  /** Called once the batch is known, before any file (e.g. checks an output directory). */
  begin(): Promise<void>;
  file(name: string): DumpFileSink;
  manifest(manifest: Manifest): Promise<void>;
}

export interface TreeDumpStats {
  readonly leaves: number;
  readonly bytes: number;
  readonly sha256: string;
}

/**
 * Writes every non-empty leaf of every tree of a batch to files in `outDir` (or to `sink`),
 * streaming in id order with bounded memory, then `manifest.json` (written last, so a dump
 * without one is incomplete).
 */
export async function dumpStore(store: LevelStore, engine: HashEngine, opts: DumpOptions): Promise<Manifest> {
  const { profile, trees } = await storeProfile(store);
  const identity = (await store.meta.identity())!;
  const record = await resolveBatch(store, opts.batchId);
  const sink = opts.sink ?? (opts.outDir !== undefined ? directorySink(opts.outDir) : undefined);
  if (!sink) throw new DacdError("BAD_INPUT", "a dump needs an output directory");
  await sink.begin();

  const out: Partial<Record<string, ManifestTree>> = {};
  for (const spec of trees) {
    const root = rootOf(record, spec);
    // No gen: only the stated root is kept (an order tree that was not validated).
    const rootGen = record.root_gens[spec.name];
    const base = { kind: spec.kind, leaf: spec.leaf, height: spec.height, root: toHex64(root) };
    if (rootGen === undefined) {
      out[spec.name] = { ...base, file: null, leaves: null, bytes: null, sha256: null };
      continue;
    }
    const file = DUMP_FILES[spec.name];
    const stats = await dumpTree(store, engine, spec, root, rootGen, sink.file(file), opts);
    out[spec.name] = { ...base, file, ...stats };
  }
  const manifest: Manifest = {
    format: DUMP_FORMAT,
    profile: profile.name,
    batch_id: record.batch_id,
    prev_batch_id: record.prev_batch_id,
    sequence_number: record.sequence_number,
    claim_hash: record.claim_hash,
    heights: identity.heights,
    roots: record.roots,
    trees: out,
    created_at: new Date().toISOString(),
  };
  await sink.manifest(manifest);
  return manifest;
}

/** A dump into a directory: created if needed, refused unless empty; the manifest written atomically. */
export function directorySink(outDir: string): DumpSink {
  return {
    async begin() {
      await mkdir(outDir, { recursive: true });
      if ((await readdir(outDir)).length > 0)
        throw new DacdError("BAD_INPUT", `the output directory ${outDir} is not empty`);
    },
    file: (name) => fileSink(join(outDir, name)),
    async manifest(manifest) {
      const tmp = join(outDir, "manifest.json.tmp");
      await writeFile(tmp, JSON.stringify(manifest, null, 2) + "\n");
      await rename(tmp, join(outDir, "manifest.json"));
    },
  };
}

/** A file written with the stream's backpressure; an error of the stream rejects the next call. */
export function fileSink(path: string): DumpFileSink {
  const ws = createWriteStream(path);
  const failed = new Promise<never>((_, reject) => ws.once("error", reject));
  failed.catch(() => undefined);
  return {
    async write(buf) {
      if (!ws.write(buf)) await Promise.race([once(ws, "drain"), failed]);
    },
    async end() {
      ws.end();
      await Promise.race([once(ws, "finish"), failed]);
    },
  };
}

/**
 * Streams one tree's dump file (CSV with a header for vaults and orders, JSON lines for
 * positions) into `sink`, in leaf id order; the sink is ended, even on an error.
 */
export async function dumpTree(
  store: LevelStore,
  engine: HashEngine,
  spec: TreeSpec,
  root: Uint8Array,
  rootGen: number,
  sink: DumpFileSink,
  opts: Pick<DumpOptions, "chunk" | "progress" | "pace"> = {},
): Promise<TreeDumpStats> {
  const sha = createHash("sha256");
  let bytes = 0;
  let leaves = 0;
  const write = async (s: string): Promise<void> => {
    const buf = Buffer.from(s, "utf8");
    sha.update(buf);
    bytes += buf.length;
    await sink.write(buf);
  };
  let ended = false;
  try {
    const header = CSV_HEADERS[spec.leaf];
    if (header) await write(header + "\n");
    for await (const block of walkLeaves(engine, spec, root, rootGen, {
      chunk: opts.chunk,
      getNodes: async (h, gens) => {
        await opts.pace?.();
        return store.getNodes(h, gens);
      },
    })) {
      let values: Leaf[];
      if (spec.leaf === "order") {
        values = block.map((t) => decodeLeafRecord("order", t.hash));
      } else {
        const records = await store.getLeafRecords(
          block.map((t) => t.hash),
          block.map((t) => t.gen),
        );
        values = records.map((rec, i) => {
          if (!rec)
            throw new DacdError(
              "STORE",
              `${spec.name} leaf ${block[i]!.index}: no record for leaf hash ${toHex64(block[i]!.hash)}`,
            );
          return decodeLeafRecord(spec.leaf, rec);
        });
      }
      let text = "";
      block.forEach((t, i) => (text += leafLine(spec.leaf, t.index, values[i]!)));
      await write(text);
      leaves += block.length;
      opts.progress?.(spec.name, leaves);
    }
    ended = true;
    await sink.end();
  } finally {
    if (!ended) await sink.end().catch(() => undefined);
  }
  return { leaves, bytes, sha256: sha.digest("hex") };
}
