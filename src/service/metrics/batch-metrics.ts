/** What the run loop reports of each batch: signed, refused, how long, how much work. */
import { Counter, Histogram } from "prom-client";
import { REFUSAL_CODES, type DacdError } from "../../errors.js";
import type { MemberEvents } from "../../poller/member/member-events.js";
import type { BatchRecord } from "../../storage/batch-record.js";
import { chainHashes, climbChains, hashWithConstant, type HashEngine } from "../../verifier/hash/engine.js";
import type { VerifyDetail } from "../../verifier/verify-batch.js";
import { PREFIX, type Registers } from "./family.js";

export function batchMetrics(registers: Registers) {
  const signed = new Counter({
    name: `${PREFIX}batches_signed_total`,
    help: "Batches whose signature the gateway accepted in this run",
    registers,
  });
  const refused = new Counter({
    name: `${PREFIX}batches_refused_total`,
    help: "Refusals to sign a batch, by reason (each attempt counts; a refused batch is retried)",
    labelNames: ["reason"],
    registers,
  });
  for (const reason of REFUSAL_CODES) refused.inc({ reason }, 0);
  return {
    signed,
    refused,
    rootMismatches: new Counter({
      name: `${PREFIX}root_mismatch_total`,
      help: "Batches whose recomputed root differed from the stated one (each attempt counts)",
      registers,
    }),
    verifySeconds: new Histogram({
      name: `${PREFIX}batch_verify_seconds`,
      help: 'Time to verify and sign one batch, up to its write being queued; tree="all" is the whole batch (trees run concurrently)',
      labelNames: ["tree"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers,
    }),
    hashes: new Counter({
      name: `${PREFIX}hashes_total`,
      help: "Pedersen hashes computed (pairs hashed by the engine)",
      registers,
    }),
    leaves: new Counter({
      name: `${PREFIX}leaves_total`,
      help: "Changed leaves applied to each tree",
      labelNames: ["tree"],
      registers,
    }),
    nodesWritten: new Counter({
      name: `${PREFIX}nodes_written_total`,
      help: "Tree nodes written to the store",
      registers,
    }),
  };
}

export type BatchMetrics = ReturnType<typeof batchMetrics>;

/** The run loop's hooks, counting into `m`. */
export function batchEvents(m: BatchMetrics): MemberEvents {
  return {
    onSigned: (_record: BatchRecord, detail: VerifyDetail) => {
      m.signed.inc();
      if (detail.reused) return;
      m.verifySeconds.observe({ tree: "all" }, detail.durationMs / 1000);
      for (const [tree, n] of Object.entries(detail.leaves)) if (n) m.leaves.inc({ tree }, n);
      m.nodesWritten.inc(detail.nodesWritten);
    },
    onRefused: (_batchId: number, err: DacdError) => {
      m.refused.inc({ reason: err.code });
      if (err.code === "ROOT_MISMATCH") m.rootMismatches.inc();
    },
  };
}

/** `engine`, counting every pair it hashes into `hashes`. */
export function countingEngine(engine: HashEngine, hashes: Counter): HashEngine {
  const wrapped: HashEngine = {
    name: engine.name,
    hashMany(xs, ys) {
      hashes.inc(xs.length / 32);
      return engine.hashMany(xs, ys);
    },
    hashConst(vs, c, constantIsY) {
      hashes.inc(vs.length / 32);
      return hashWithConstant(engine, vs, c, constantIsY);
    },
    climbChains(job) {
      hashes.inc(chainHashes(job));
      return climbChains(engine, job);
    },
  };
  if (engine.close) wrapped.close = () => engine.close!();
  return wrapped;
}
