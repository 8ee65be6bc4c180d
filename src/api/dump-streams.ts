/** GET /v1/dump/{tree}: a tree's dump file streamed from one snapshot, a bounded number at once. */
import type { IncomingMessage, ServerResponse } from "node:http";
import { DAEMON_WALK_CHUNK, PACE_MAX_WAIT_MS } from "../control/escape-routes.js";
import { DacdError } from "../errors.js";
import { dumpTree, type DumpFileSink } from "../escape/dump.js";
import type { LevelStore } from "../storage/level-store.js";
import { withSnapshot } from "../storage/snapshot.js";
import { hexToBytes32 } from "../util/bytes.js";
import type { HashEngine } from "../verifier/hash/engine.js";
import { ApiError } from "./api-error.js";
import { signedBatch, treeOf } from "./request-params.js";
import { CACHE_LATEST_BATCH, CACHE_NAMED_BATCH } from "./responses.js";

const DUMP_TYPES: Record<string, string> = {
  vault: "text/csv; charset=utf-8",
  rollup_vault: "text/csv; charset=utf-8",
  order: "text/csv; charset=utf-8",
  position: "application/x-ndjson",
};
/** A reader that stops reading this long loses the connection (and frees the snapshot). */
const STALLED_READER_MS = 60_000;

export class DumpStreams {
  private streaming = 0;

  constructor(
    private readonly store: LevelStore,
    private readonly engine: HashEngine,
    private readonly max: number,
  ) {}

  /** Streams the dump of `treeText` at the batch asked for; 503 while `max` dumps stream. */
  async serve(
    req: IncomingMessage,
    res: ServerResponse,
    treeText: string,
    batchText: string | undefined,
  ): Promise<void> {
    if (this.streaming >= this.max)
      throw new ApiError(503, `${this.streaming} dumps are being streamed; try again later`, undefined, 10);
    this.streaming++;
    try {
      await withSnapshot(this.store, (view) => this.stream(view, req, res, treeText, batchText));
    } finally {
      this.streaming--;
    }
  }

  private async stream(
    view: LevelStore,
    req: IncomingMessage,
    res: ServerResponse,
    treeText: string,
    batchText: string | undefined,
  ): Promise<void> {
    const record = await signedBatch(view, batchText);
    const spec = await treeOf(view, treeText);
    const root = hexToBytes32(record.roots[spec.name] ?? "");
    if (!root) throw new DacdError("STORE", `batch ${record.batch_id} has no ${spec.name} root`);
    const rootGen = record.root_gens[spec.name];
    if (rootGen === undefined)
      throw new ApiError(
        404,
        `the ${spec.name} tree of batch ${record.batch_id} is not stored (orders not validated)`,
        "tree",
      );
    res.writeHead(200, {
      "content-type": DUMP_TYPES[spec.name]!,
      "cache-control": batchText !== undefined ? CACHE_NAMED_BATCH : CACHE_LATEST_BATCH,
      "x-dacd-batch-id": String(record.batch_id),
      "x-dacd-root": record.roots[spec.name]!,
      "x-content-type-options": "nosniff",
    });
    if (req.method === "HEAD") {
      res.end();
      return;
    }
    res.setTimeout(STALLED_READER_MS, () => res.destroy());
    await dumpTree(view, this.engine, spec, root, rootGen, responseSink(res), {
      pace: () => this.store.commits.whenIdle(PACE_MAX_WAIT_MS),
      chunk: DAEMON_WALK_CHUNK,
    });
  }
}

/** A dump file written into a response, with its backpressure; a closed connection stops the walk. */
function responseSink(res: ServerResponse): DumpFileSink {
  const closed = new Promise<never>((_, reject) =>
    res.once("close", () => reject(new Error("the client closed the connection"))),
  );
  closed.catch(() => undefined);
  return {
    async write(buf) {
      if (res.destroyed) throw new Error("the client closed the connection");
      if (!res.write(buf)) await Promise.race([new Promise((r) => res.once("drain", r)), closed]);
    },
    async end() {
      if (!res.destroyed) res.end();
    },
  };
}
