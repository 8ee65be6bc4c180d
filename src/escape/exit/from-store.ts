import type { LevelStore } from "../../storage/level-store.js";
import type { HashEngine } from "../../verifier/hash/engine.js";
import { makeOnchainProof } from "../onchain/from-proof.js";
import { exitPlan, type ExitOptions, type ExitPlan } from "./plan.js";

/**
 * A leaf's exit plan from a member's store (`dacd exit`, the control socket, the escape API). With
 * no batch asked for, the proof is at the batch the exchange froze at when the store's base-chain
 * watch saw the freeze (the only batch the escape verifier accepts then), else at the newest
 * verified batch; either way the plan says whether it is at the frozen batch.
 */
export async function makeExitPlan(
  store: LevelStore,
  engine: HashEngine,
  object: string,
  id: string,
  batchId: number | undefined,
  options: Omit<ExitOptions, "frozenBatchId">,
): Promise<ExitPlan> {
  // makeOnchainProof's default batch is the frozen one.
  const proof = await makeOnchainProof(store, engine, object, id, batchId);
  return exitPlan(proof, { ...options, frozenBatchId: (await store.onchain.frozenBatchId()) ?? null });
}
