import { createHash } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, readdir, rename, writeFile } from "node:fs/promises";
import { once } from "node:events";
import { join } from "node:path";
import { DacdError } from "../errors.js";
import { storeProfile } from "../inspect/inspect.js";
import type { LevelStore } from "../storage/level-store.js";
import { bytesEqual, toHex64 } from "../util/bytes.js";
import { emptyRoot } from "../verifier/compute-roots.js";
import type { HashEngine } from "../verifier/hash/engine.js";
import { decodeLeafRecord } from "../verifier/leaves.js";
import type { TreeSpec } from "../verifier/profile.js";
import type { Leaf } from "../wire/types.js";
import { resolveBatch, rootOf } from "./common.js";
import {
  CSV_HEADERS,
  DUMP_FILES,
  DUMP_FORMAT,
  leafLine,
  type Manifest,
  type ManifestTree,
} from "./formats.js";
import { walkLeaves } from "./walk.js";

export interface DumpOptions {
  readonly outDir: string;
  readonly batchId?: number;
  /** Subtrees per store read (default 4096). */
  readonly chunk?: number;
  /** Called after each block of leaves written. */
  readonly progress?: (tree: string, leaves: number) => void;
}

/**
 * Writes every non-empty leaf of every tree of a batch to files in `outDir`, streaming in id order
 * with bounded memory, then `manifest.json` (written last, so a dump without one is incomplete).
 */
export async function dumpStore(store: LevelStore, engine: HashEngine, opts: DumpOptions): Promise<Manifest> {
  const { profile, trees } = await storeProfile(store);
  const identity = (await store.getIdentity())!;
  const record = await resolveBatch(store, opts.batchId);
  await mkdir(opts.outDir, { recursive: true });
  if ((await readdir(opts.outDir)).length > 0)
    throw new DacdError("BAD_INPUT", `the output directory ${opts.outDir} is not empty`);

  const out: Partial<Record<string, ManifestTree>> = {};
  for (const spec of trees) {
    const root = rootOf(record, spec);
    const base = { kind: spec.kind, leaf: spec.leaf, height: spec.height, root: toHex64(root) };
    // An order tree that was not validated has only its stated root: nothing to dump.
    if (spec.name === profile.order.name && !bytesEqual(root, await emptyRoot(engine, spec))) {
      const [rec] = await store.getNodes([root]);
      if (rec === undefined) {
        out[spec.name] = { ...base, file: null, leaves: null, bytes: null, sha256: null };
        continue;
      }
    }
    const file = DUMP_FILES[spec.name];
    const stats = await dumpTree(store, engine, spec, root, join(opts.outDir, file), opts);
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
  const tmp = join(opts.outDir, "manifest.json.tmp");
  await writeFile(tmp, JSON.stringify(manifest, null, 2) + "\n");
  await rename(tmp, join(opts.outDir, "manifest.json"));
  return manifest;
}

async function dumpTree(
  store: LevelStore,
  engine: HashEngine,
  spec: TreeSpec,
  root: Uint8Array,
  path: string,
  opts: DumpOptions,
): Promise<{ leaves: number; bytes: number; sha256: string }> {
  const ws = createWriteStream(path);
  const sha = createHash("sha256");
  let bytes = 0;
  let leaves = 0;
  const write = async (s: string): Promise<void> => {
    const buf = Buffer.from(s, "utf8");
    sha.update(buf);
    bytes += buf.length;
    if (!ws.write(buf)) await once(ws, "drain");
  };
  const failed = new Promise<never>((_, reject) => ws.once("error", reject));
  failed.catch(() => undefined);
  try {
    const header = CSV_HEADERS[spec.leaf];
    if (header) await write(header + "\n");
    for await (const block of walkLeaves(engine, spec, root, {
      chunk: opts.chunk,
      getNodes: (h) => store.getNodes(h),
    })) {
      let values: Leaf[];
      if (spec.leaf === "order") {
        values = block.map((t) => decodeLeafRecord("order", t.hash));
      } else {
        const records = await store.getLeafRecords(block.map((t) => t.hash));
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
      await Promise.race([write(text), failed]);
      leaves += block.length;
      opts.progress?.(spec.name, leaves);
    }
  } finally {
    ws.end();
  }
  await Promise.race([once(ws, "finish"), failed]);
  return { leaves, bytes, sha256: sha.digest("hex") };
}
