import type { ExitPlan } from "../exit/plan.js";

/**
 * An exit plan's steps as a Safe Transaction Builder batch file (the Safe's "Transaction Builder"
 * app imports it), for a multisig holder: every step that has call data and an address, in order.
 */
export function safeBatch(plan: ExitPlan, createdAt: number): unknown {
  return {
    version: "1.0",
    chainId: plan.chain_id === null ? "" : String(plan.chain_id),
    createdAt,
    meta: {
      name: `Leave the exchange: ${plan.object} ${plan.id}`,
      description: plan.steps.map((s) => s.step).join(", "),
      txBuilderVersion: "1.16.5",
      createdFromSafeAddress: "",
      createdFromOwnerAddress: "",
    },
    transactions: plan.steps
      .filter((s) => s.data && s.to)
      .map((s) => ({ to: s.to, value: "0", data: s.data, contractMethod: null, contractInputsValues: null })),
  };
}
