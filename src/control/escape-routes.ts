import { DacdError } from "../errors.js";
import { checkStore } from "../maintenance/integrity-check.js";
import { dumpStore, type DumpSink } from "../escape/dump.js";
import { referenceRows } from "../escape/reference-dump.js";
import { makeProof } from "../escape/proof.js";
import { encodePaths } from "../escape/kit/path-frames.js";
import { storePaths } from "../escape/kit/source.js";
import type { LevelStore } from "../storage/level-store.js";
import { withSnapshot } from "../storage/snapshot.js";
import type { HashEngine } from "../verifier/hash/engine.js";
import { Frame, type DecodedFrame } from "./frames.js";
import type { ControlHandler, StreamRoute } from "./server.js";
import type { ControlStream, FrameOut } from "./stream-server.js";

/**
 * The escape commands answered by the running daemon over its control socket (`dacd proof`, in
 * either format, `dacd exit`, `dacd dump` in either format, `dacd check`, `dacd escape-kit`): each answer reads one LevelDB snapshot of the store, so it is
 * consistent at one batch while the daemon keeps signing, and a dump streams with the socket's
 * backpressure instead of being built in memory.
 */

/** Dumps and checks at once; more are refused (each walks a whole tree beside the signing). */
export const MAX_STREAMS = 2;

/** Bytes per data frame of a dump file. */
const DATA_FRAME = 256 << 10;

/**
 * While a batch is verified, a dump or check reads its next block only when the batch is done, or
 * after this long: the signing goes first, and the walk still moves while the member catches up.
 */
export const PACE_MAX_WAIT_MS = 500;

/**
 * Subtrees per read of a walk in the daemon (a command on a stopped store reads 4096): smaller
 * blocks, so that a block that started before a batch holds the event loop for less of it.
 */
export const DAEMON_WALK_CHUNK = 1024;

/** At most one progress frame per this many ms. */
const PROGRESS_EVERY_MS = 250;

export function escapeRoutes(
  store: LevelStore,
  engine: HashEngine,
): Record<string, ControlHandler | StreamRoute> {
  const walk: DaemonWalk = { store, engine, pace: () => store.commits.whenIdle(PACE_MAX_WAIT_MS) };
  const limited = streamLimit(MAX_STREAMS);
  return {
    "/proof": (q) => proof(walk, q),
    // The exit plan from the store (the contracts' addresses from the asker); the chain is read by the asker.
    "/exit": (q) => exit(walk, q),
    // A stark key's vaults or positions: a walk of the batch's main tree, paced beside the signing.
    "/exit-key": (q) => exitKey(walk, q),
    "/dump": { stream: limited((q, out) => dump(walk, q, out)) },
    // The reference member's archive: its row files and info here, packed (bzip2) by the command.
    "/dump-reference": { stream: limited((q, out) => dumpReference(walk, q, out)) },
    // The escape kit's leaves with their paths: the walk here, the proofs built by the command.
    "/kit-paths": { stream: limited((q, out) => kitPaths(walk, q, out)) },
    "/check": { stream: limited((q, out) => check(walk, q, out)) },
  };
}

/** What a route reads: the store (one snapshot an answer), the engine, and the pace beside the signing. */
interface DaemonWalk {
  readonly store: LevelStore;
  readonly engine: HashEngine;
  readonly pace: () => Promise<void>;
}

/** Wraps streams so that at most `max` run at once; one more is refused. */
function streamLimit(max: number): (fn: ControlStream) => ControlStream {
  let running = 0;
  return (fn) => async (q, out) => {
    if (running >= max)
      throw new DacdError(
        "STORE",
        `the daemon is already serving ${running} dumps or checks; try again later`,
      );
    running++;
    try {
      return await fn(q, out);
    } finally {
      running--;
    }
  };
}

async function proof(walk: DaemonWalk, q: URLSearchParams): Promise<unknown> {
  const format = q.get("format") ?? "dacd";
  if (format !== "dacd" && format !== "starkex")
    throw new DacdError("BAD_INPUT", `proof format ${JSON.stringify(format)}: dacd or starkex`);
  // The ABI encoder is loaded with the first on-chain proof asked for, not with the daemon.
  const make: (...args: Parameters<typeof makeProof>) => Promise<unknown> =
    format === "starkex" ? (await import("../escape/onchain/from-proof.js")).makeOnchainProof : makeProof;
  return withSnapshot(walk.store, (view) =>
    make(view, walk.engine, q.get("object") ?? "", q.get("id") ?? "", batchParam(q.get("batch"))),
  );
}

async function exit(walk: DaemonWalk, q: URLSearchParams): Promise<unknown> {
  const { makeExitPlan } = await import("../escape/exit/from-store.js");
  return withSnapshot(walk.store, (view) =>
    makeExitPlan(view, walk.engine, q.get("object") ?? "", q.get("id") ?? "", batchParam(q.get("batch")), {
      exchange: addressParam(q.get("exchange"), "exchange"),
      verifier: addressParam(q.get("verifier"), "verifier"),
    }),
  );
}

async function exitKey(walk: DaemonWalk, q: URLSearchParams): Promise<unknown> {
  const { leavesOfKey, parseStarkKey } = await import("../escape/exit/by-key.js");
  const key = parseStarkKey(q.get("key") ?? "");
  return withSnapshot(walk.store, (view) =>
    leavesOfKey(view, walk.engine, key, batchParam(q.get("batch")), {
      pace: walk.pace,
      chunk: DAEMON_WALK_CHUNK,
    }),
  );
}

/** An optional contract address: 0x and 40 hex digits, lower-cased. */
function addressParam(v: string | null, what: string): `0x${string}` | null {
  if (v === null) return null;
  if (!/^0x[0-9a-fA-F]{40}$/.test(v))
    throw new DacdError(
      "BAD_INPUT",
      `${what} ${JSON.stringify(v.slice(0, 60))} is not an address (0x and 40 hex digits)`,
    );
  return v.toLowerCase() as `0x${string}`;
}

function dump(walk: DaemonWalk, q: URLSearchParams, out: FrameOut): Promise<unknown> {
  return withSnapshot(walk.store, (view) =>
    dumpStore(view, walk.engine, {
      batchId: batchParam(q.get("batch")),
      sink: frameSink(out),
      pace: walk.pace,
      chunk: DAEMON_WALK_CHUNK,
    }),
  );
}

function dumpReference(walk: DaemonWalk, q: URLSearchParams, out: FrameOut): Promise<unknown> {
  return withSnapshot(walk.store, (view) => {
    const sink = frameSink(out);
    return referenceRows(
      view,
      walk.engine,
      {
        batchId: batchParam(q.get("batch")),
        subtrees: q.has("subtrees") ? Number(q.get("subtrees")) : undefined,
        pace: walk.pace,
        chunk: DAEMON_WALK_CHUNK,
      },
      (name) => sink.file(name),
    );
  });
}

function kitPaths(walk: DaemonWalk, q: URLSearchParams, out: FrameOut): Promise<unknown> {
  return withSnapshot(walk.store, async (view) => {
    const source = await storePaths(view, walk.engine, batchParam(q.get("batch")), {
      pace: walk.pace,
      chunk: DAEMON_WALK_CHUNK,
    });
    await out.send(Frame.head, source.head);
    let leaves = 0;
    for await (const block of source.blocks) {
      for (const piece of encodePaths(block)) await out.send(Frame.data, piece);
      leaves += block.length;
    }
    return { leaves };
  });
}

function check(walk: DaemonWalk, q: URLSearchParams, out: FrameOut): Promise<unknown> {
  let last = 0;
  return withSnapshot(walk.store, (view) =>
    checkStore(view, walk.engine, {
      deep: q.get("deep") === "1",
      pace: walk.pace,
      chunk: DAEMON_WALK_CHUNK,
      deepBatches: q.has("batches")
        ? q
            .get("batches")!
            .split(",")
            .map((s) => batchParam(s)!)
        : undefined,
      progress: (batch_id, tree, nodes) => {
        if (out.signal.aborted) throw out.signal.reason as Error;
        const now = Date.now();
        if (now - last < PROGRESS_EVERY_MS) return;
        last = now;
        out.send(Frame.progress, { batch_id, tree, nodes }).catch(() => undefined);
      },
    }),
  );
}

function batchParam(v: string | null | undefined): number | undefined {
  if (v === null || v === undefined) return undefined;
  if (!/^(0|[1-9][0-9]{0,15})$/.test(v) || !Number.isSafeInteger(Number(v)))
    throw new DacdError("BAD_INPUT", `batch id ${JSON.stringify(v)} is not a non-negative integer`);
  return Number(v);
}

/** A dump's files as frames: a file frame, its bytes in data frames, an end frame; no manifest frame (it is the result). */
function frameSink(out: FrameOut): DumpSink {
  return {
    begin: async () => undefined,
    file(name) {
      let opened = false;
      const open = async (): Promise<void> => {
        if (opened) return;
        opened = true;
        await out.send(Frame.file, { name });
      };
      return {
        async write(buf) {
          await open();
          for (let at = 0; at < buf.length; at += DATA_FRAME)
            await out.send(Frame.data, buf.subarray(at, at + DATA_FRAME));
        },
        async end() {
          await open();
          await out.send(Frame.end, {});
        },
      };
    },
    manifest: async () => undefined,
  };
}

/** The client's side of frameSink: frames back into a DumpSink (a directory). */
export function framesToSink(sink: DumpSink): (frame: DecodedFrame) => Promise<void> {
  let file: ReturnType<DumpSink["file"]> | undefined;
  return async (frame) => {
    if (frame.type === Frame.file) {
      const { name } = JSON.parse(frame.payload.toString("utf8")) as { name: string };
      // A name the daemon sends is a dump file's own name, never a path.
      if (!/^[a-z][a-z0-9_]*\.(csv|jsonl)$/.test(name))
        throw new DacdError("STORE", `the daemon named a dump file ${JSON.stringify(name)}`);
      file = sink.file(name);
    } else if (frame.type === Frame.data) {
      if (!file) throw new DacdError("STORE", "the daemon sent dump data outside a file");
      await file.write(frame.payload);
    } else if (frame.type === Frame.end) {
      await file?.end();
      file = undefined;
    }
  };
}
