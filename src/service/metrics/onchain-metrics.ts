/** The base-chain watch: what it has seen on-chain, and its failures. */
import { Counter } from "prom-client";
import { ONCHAIN_REJECTIONS } from "../../chain/exchange-logs.js";
import { PREFIX, scrapedGauge, type Registers } from "./family.js";
import type { StateReader } from "./member-state.js";

/** What the watch refuses of the endpoint's answers (chain/exchange-logs.ts ONCHAIN_REJECTIONS). */
export const ONCHAIN_REJECTED = [
  "foreign_address",
  "malformed_log",
  "out_of_range",
  "freeze_unconfirmed",
] as const;

/** Why a base-chain RPC call failed (chain/rpc.ts RPC_FAILURES). */
export const ONCHAIN_RPC_FAILURES = ["timeout", "error", "malformed"] as const;

export function onchainMetrics(registers: Registers, state: StateReader) {
  const m = {
    batchId: scrapedGauge(
      registers,
      "onchain_batch_id",
      "Last batch whose root update is on the base chain in a confirmed block (-1: none seen, or the chain is not followed)",
      () => state()?.onchain?.batchId ?? -1,
    ),
    frozen: scrapedGauge(
      registers,
      "onchain_frozen",
      "1 once the exchange contract is seen frozen (escapes are served at the frozen batch), else 0",
      () => (state()?.onchain?.frozen ? 1 : 0),
    ),
    block: scrapedGauge(
      registers,
      "onchain_confirmed_block",
      "Last confirmed base-chain block the watch has read (-1: none yet, or the chain is not followed)",
      () => state()?.onchain?.block ?? -1,
    ),
    rootMismatches: new Counter({
      name: `${PREFIX}onchain_root_mismatch_total`,
      help: "Root updates on the base chain whose roots, any of them, differ from the ones stored for that batch",
      registers,
    }),
    rpcFailures: new Counter({
      name: `${PREFIX}onchain_rpc_failures_total`,
      help: "Failed base-chain RPC calls by reason (timeout, error, malformed: an answer that is not what the method returns); the watch tries again at its next poll",
      labelNames: ["reason"],
      registers,
    }),
    freezeWithdrawn: new Counter({
      name: `${PREFIX}onchain_freeze_withdrawn_total`,
      help: "Recorded freezes dropped because isFrozen() at a confirmed block later said false (a reorg, an unfreeze, or an endpoint that lied)",
      registers,
    }),
    rejected: new Counter({
      name: `${PREFIX}onchain_rejected_total`,
      help: "What the base-chain endpoint answered and the watch refused, by reason (foreign_address, malformed_log, out_of_range, freeze_unconfirmed)",
      labelNames: ["reason"],
      registers,
    }),
  };
  for (const reason of ONCHAIN_RPC_FAILURES) m.rpcFailures.inc({ reason }, 0);
  for (const reason of ONCHAIN_REJECTIONS) m.rejected.inc({ reason }, 0);
  return m;
}

export type OnchainMetrics = ReturnType<typeof onchainMetrics>;
