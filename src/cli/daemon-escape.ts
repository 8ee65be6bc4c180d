import { createHash } from "node:crypto";
import { askDaemon, streamFromDaemon } from "../control/client.js";
import { Frame, frameJson } from "../control/frames.js";
import { DacdError } from "../errors.js";
import type { CheckReport } from "../maintenance/integrity-check.js";
import type { DumpSink } from "../escape/dump.js";
import type { Manifest } from "../escape/formats.js";
import type { ReferenceDumpResult, ReferenceRows } from "../escape/reference-dump.js";
import type { Proof } from "../escape/proof.js";
import type { OnchainEscape } from "../escape/onchain/from-proof.js";
import type { ExitPlan } from "../escape/exit/plan.js";
import type { KeyLeaves } from "../escape/exit/by-key.js";
import { decodePaths } from "../escape/kit/path-frames.js";
import type { LeafPath } from "../escape/kit/path-walk.js";
import type { KitHead, PathSource } from "../escape/kit/source.js";

/**
 * `dacd proof`, `dacd dump` and `dacd check` through a running daemon (it holds LevelDB's lock).
 * Each returns undefined when no daemon answers: the command then opens the store itself.
 */

export function proofViaDaemon(
  dataDir: string,
  object: string,
  id: string,
  batchId: number | undefined,
): Promise<Proof | undefined>;
export function proofViaDaemon(
  dataDir: string,
  object: string,
  id: string,
  batchId: number | undefined,
  format: "starkex",
): Promise<OnchainEscape | undefined>;
export async function proofViaDaemon(
  dataDir: string,
  object: string,
  id: string,
  batchId: number | undefined,
  format?: "starkex",
): Promise<Proof | OnchainEscape | undefined> {
  const query: Record<string, string> = { object, id };
  if (batchId !== undefined) query.batch = String(batchId);
  if (format !== undefined) query.format = format;
  return (await askDaemon(dataDir, "/proof", query)) as Proof | OnchainEscape | undefined;
}

/** `dacd exit`'s plan from the running daemon (the chain is read by the command). */
export async function exitViaDaemon(
  dataDir: string,
  object: string,
  id: string,
  batchId: number | undefined,
  contracts: { exchange?: string; verifier?: string },
): Promise<ExitPlan | undefined> {
  const query: Record<string, string> = { object, id };
  if (batchId !== undefined) query.batch = String(batchId);
  if (contracts.exchange !== undefined) query.exchange = contracts.exchange;
  if (contracts.verifier !== undefined) query.verifier = contracts.verifier;
  return (await askDaemon(dataDir, "/exit", query)) as ExitPlan | undefined;
}

/** `dacd exit --key`'s list from the running daemon. */
export async function keyLeavesViaDaemon(
  dataDir: string,
  key: string,
  batchId: number | undefined,
): Promise<KeyLeaves | undefined> {
  const query: Record<string, string> = { key };
  if (batchId !== undefined) query.batch = String(batchId);
  return (await askDaemon(dataDir, "/exit-key", query)) as KeyLeaves | undefined;
}

/**
 * Writes the daemon's dump into `outDir` (refused unless empty, checked before the daemon is
 * asked). Each file's SHA-256 and size are computed here as it is written and compared with the
 * daemon's manifest; the manifest is written only when all agree, so a dump cut short or garbled
 * on the way has none.
 */
export async function dumpViaDaemon(
  dataDir: string,
  outDir: string,
  batchId: number | undefined,
  progress?: (file: string, bytes: number) => void,
): Promise<Manifest | undefined> {
  const [{ framesToSink }, { directorySink }] = await Promise.all([
    import("../control/escape-routes.js"),
    import("../escape/dump.js"),
  ]);
  const dir = directorySink(outDir);
  await dir.begin();
  const seen = new Map<string, { bytes: number; sha256: string }>();
  const checking: DumpSink = {
    begin: async () => undefined,
    file(name) {
      const inner = dir.file(name);
      const sha = createHash("sha256");
      let bytes = 0;
      return {
        async write(buf) {
          sha.update(buf);
          bytes += buf.length;
          await inner.write(buf);
          progress?.(name, bytes);
        },
        async end() {
          await inner.end();
          seen.set(name, { bytes, sha256: sha.digest("hex") });
        },
      };
    },
    manifest: async () => undefined,
  };
  const query: Record<string, string> = {};
  if (batchId !== undefined) query.batch = String(batchId);
  const manifest = (await streamFromDaemon(dataDir, "/dump", query, framesToSink(checking))) as
    Manifest | undefined;
  if (manifest === undefined) return undefined;
  for (const [tree, t] of Object.entries(manifest.trees)) {
    if (!t || t.file === null) continue;
    const got = seen.get(t.file);
    if (!got || got.bytes !== t.bytes || got.sha256 !== t.sha256) {
      throw new DacdError(
        "STORE",
        `the ${tree} file ${t.file} received from the daemon does not match its manifest (${got?.bytes ?? 0} bytes, sha256 ${got?.sha256 ?? "none"})`,
      );
    }
  }
  await dir.manifest(manifest);
  return manifest;
}

/**
 * `dacd dump --format reference` through the daemon: it walks its snapshot and streams the row
 * files and what info.json states; they are written beside `out`, each checked against the size
 * and SHA-256 the daemon wrote, and packed here, as a stopped store's dump is (the same bytes).
 * Undefined when no daemon answers.
 */
export async function dumpReferenceViaDaemon(
  dataDir: string,
  out: string,
  batchId: number | undefined,
  subtrees: number,
  progress?: (file: string, bytes: number) => void,
): Promise<ReferenceDumpResult | undefined> {
  const query: Record<string, string> = { subtrees: String(subtrees) };
  if (batchId !== undefined) query.batch = String(batchId);
  // Loaded only here: every other command starts without the archive code.
  const { writeReferenceArchive } = await import("../escape/reference-dump.js");
  const { framesToSink } = await import("../control/escape-routes.js");
  return writeReferenceArchive(
    out,
    async (file) => {
      const sink: DumpSink = {
        begin: async () => undefined,
        file(name) {
          const inner = file(name);
          let bytes = 0;
          return {
            async write(buf) {
              bytes += buf.length;
              await inner.write(buf);
              progress?.(name, bytes);
            },
            end: () => inner.end(),
          };
        },
        manifest: async () => undefined,
      };
      const rows = (await streamFromDaemon(dataDir, "/dump-reference", query, framesToSink(sink))) as
        ReferenceRows | undefined;
      if (rows !== undefined && (typeof rows.info !== "object" || !Array.isArray(rows.files)))
        throw new DacdError("STORE", "the daemon's reference archive rows came without their info");
      return rows;
    },
    true,
  );
}

export async function checkViaDaemon(
  dataDir: string,
  deep: boolean,
  batches: number[] | undefined,
  progress?: (batchId: number, tree: string, nodes: number) => void,
): Promise<CheckReport | undefined> {
  const query: Record<string, string> = {};
  if (deep) query.deep = "1";
  if (batches !== undefined) query.batches = batches.join(",");
  return (await streamFromDaemon(dataDir, "/check", query, (frame) => {
    if (frame.type !== Frame.progress) return;
    const p = frameJson<{ batch_id: number; tree: string; nodes: number }>(frame);
    progress?.(p.batch_id, p.tree, p.nodes);
  })) as CheckReport | undefined;
}

/**
 * The escape kit's leaves and paths from the daemon's snapshot: the daemon walks, this process
 * builds the proofs (`consume`, given the source once the daemon named the batch). Undefined when
 * no daemon answers. The socket is read only as fast as `consume` takes the blocks.
 */
export async function kitViaDaemon<T>(
  dataDir: string,
  batchId: number | undefined,
  consume: (source: PathSource) => Promise<T>,
): Promise<T | undefined> {
  const query: Record<string, string> = {};
  if (batchId !== undefined) query.batch = String(batchId);
  // Frames arrive by push; the blocks are pulled by consume: one block is handed over at a time.
  const queue: { block?: LeafPath[]; end?: true; error?: unknown }[] = [];
  let wake: (() => void) | undefined;
  let taken: (() => void) | undefined;
  const push = (item: (typeof queue)[number]): void => {
    queue.push(item);
    wake?.();
  };
  async function* blocks(): AsyncGenerator<LeafPath[]> {
    for (;;) {
      if (queue.length === 0) await new Promise<void>((r) => (wake = r));
      wake = undefined;
      const item = queue.shift()!;
      taken?.();
      if (item.error !== undefined) throw item.error;
      if (item.end) return;
      yield item.block!;
    }
  }
  let result: Promise<T> | undefined;
  let failed: unknown;
  const answered = await streamFromDaemon(dataDir, "/kit-paths", query, async (frame) => {
    if (frame.type === Frame.head) {
      const head = frameJson<KitHead>(frame);
      result = consume({ head, blocks: blocks() });
      // A kit that fails (say, a full disk) stops the daemon's walk with it.
      result.catch((err: unknown) => {
        failed = err;
        taken?.();
      });
      return;
    }
    if (frame.type !== Frame.data || !result) return;
    if (failed !== undefined) throw failed;
    push({ block: decodePaths(frame.payload) });
    // The socket waits while a block is queued: memory holds at most one block ahead.
    if (queue.length > 1) await new Promise<void>((r) => (taken = r));
    if (failed !== undefined) throw failed;
  }).catch((err: unknown) => {
    push({ error: err });
    throw err;
  });
  if (answered === undefined) return undefined;
  if (!result) throw new DacdError("STORE", "the daemon sent no escape kit header");
  push({ end: true });
  return result;
}
