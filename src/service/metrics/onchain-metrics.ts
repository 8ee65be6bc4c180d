/** The base-chain watch: what it has seen on-chain, and its failures. */
import { Counter } from "prom-client";
import { PREFIX, scrapedGauge, type Registers } from "./family.js";
import type { StateReader } from "./member-state.js";

/** Why a base-chain RPC call failed (chain/rpc.ts RPC_FAILURES). */
export const ONCHAIN_RPC_FAILURES = ["timeout", "error"] as const;

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
      help: "Failed base-chain RPC calls by reason (timeout, error); the watch tries again at its next poll",
      labelNames: ["reason"],
      registers,
    }),
  };
  for (const reason of ONCHAIN_RPC_FAILURES) m.rpcFailures.inc({ reason }, 0);
  return m;
}

export type OnchainMetrics = ReturnType<typeof onchainMetrics>;
