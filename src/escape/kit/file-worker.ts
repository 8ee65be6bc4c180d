import { createHash, type Hash } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parentPort, workerData } from "node:worker_threads";
import { shardOf } from "./layout.js";
import type { FileBatch, ShardSummary, WorkerReply, WriterRequest } from "./file-messages.js";

/**
 * The kit writer's thread (writer.ts): creates the proof files of each batch it is sent, in
 * order, with plain blocking calls (open, write, close: no round trip through the main thread per
 * file), and keeps each shard's list hash, so that the main thread only walks and encodes.
 */

const root = (workerData as { root: string }).root;
const port = parentPort!;
const shards = new Map<string, { files: number; list: Hash }>();
const dirs = new Set<string>();
let files = 0;
let failed = false;

function write(batch: FileBatch): void {
  const bytes = Buffer.from(batch.bytes);
  let start = 0;
  batch.ids.forEach((id, i) => {
    const end = batch.ends[i]!;
    const body = bytes.subarray(start, end);
    start = end;
    const shard = shardOf(id);
    const key = `${batch.tree}/${shard}`;
    const dir = join(root, key);
    if (!dirs.has(dir)) {
      mkdirSync(dir, { recursive: true });
      dirs.add(dir);
    }
    writeFileSync(join(dir, `${id}.json`), body);
    let s = shards.get(key);
    if (!s) shards.set(key, (s = { files: 0, list: createHash("sha256") }));
    s.files++;
    s.list.update(`${createHash("sha256").update(body).digest("hex")}  ${id}.json\n`);
    files++;
  });
}

function summary(): { files: number; shards: Record<string, ShardSummary> } {
  const out: Record<string, ShardSummary> = {};
  for (const key of [...shards.keys()].sort()) {
    const s = shards.get(key)!;
    out[key] = { files: s.files, sha256: s.list.copy().digest("hex") };
  }
  return { files, shards: out };
}

port.on("message", (req: WriterRequest) => {
  if (req.kind === "summary") {
    port.postMessage({ kind: "summary", ...summary() } satisfies WorkerReply);
    return;
  }
  // After a failure the batches still in flight are handed back unwritten.
  if (!failed) {
    try {
      write(req);
    } catch (err) {
      failed = true;
      const e = err as NodeJS.ErrnoException;
      port.postMessage({ kind: "failed", message: e.message, code: e.code } satisfies WorkerReply);
    }
  }
  port.postMessage({ kind: "written", bytes: req.bytes } satisfies WorkerReply, [req.bytes]);
});
