import type { PlanWithState } from "../../escape/exit/chain-state.js";
import type { ExitArg, ExitPlan, ExitStep } from "../../escape/exit/plan.js";

/** `dacd exit` for a person: the steps in order, each with where it goes, its call data or what it lacks, and its state. */
export function exitText(plan: ExitPlan | PlanWithState): string {
  const lines: string[] = [];
  const at =
    plan.at_frozen_batch === true
      ? " (the frozen batch)"
      : plan.at_frozen_batch === false
        ? ` (NOT the frozen batch ${plan.frozen_batch_id})`
        : "";
  lines.push(
    `${plan.object} ${plan.id} at batch ${plan.batch_id ?? "?"}${at}` +
      (plan.chain_id === null ? "" : `, chain ${plan.chain_id}`),
  );
  lines.push(`  owner key ${plan.owner_key}`);
  if (plan.asset_id !== undefined) lines.push(`  asset id  ${plan.asset_id}`);
  lines.push(`  amount    ${plan.quantized_amount} (quantized)${unitsOf(plan)}`);
  const chain = "chain" in plan ? plan.chain : undefined;
  if (chain) {
    const frozen = chain.frozen === null ? "unknown" : chain.frozen ? "yes" : "no";
    lines.push(
      `  exchange frozen: ${frozen}` +
        (chain.freeze_grace_period === null ? "" : `; FREEZE_GRACE_PERIOD ${chain.freeze_grace_period} s`) +
        (chain.eth_key === null ? "" : `; Ethereum address of the key ${chain.eth_key}`),
    );
    if (chain.withdrawal_balance !== null)
      lines.push(`  pending withdrawal balance: ${chain.withdrawal_balance} (base units)`);
    for (const u of chain.unread) lines.push(`  not read: ${u}`);
  }
  for (const n of plan.notes) lines.push(`  note: ${n}`);
  if (plan.message !== null) {
    lines.push("", plan.message);
    return lines.join("\n") + "\n";
  }
  plan.steps.forEach((s, i) => lines.push("", ...stepText(s, i + 1)));
  return lines.join("\n") + "\n";
}

function unitsOf(plan: ExitPlan | PlanWithState): string {
  if (!("chain" in plan) || plan.chain.amount_base_units === null) return "";
  const units = plan.chain.amount_units === null ? "" : `, ${plan.chain.amount_units} in whole units`;
  return ` = ${plan.chain.amount_base_units} base units${units}`;
}

function stepText(s: ExitStep, n: number): string[] {
  const to = s.to ?? `(the ${s.contract}'s address: not known here)`;
  const out = [
    `${n}. ${s.step}: ${s.function} → ${s.contract} ${to}, sent by ${s.sender === "owner" ? "the key's Ethereum address" : "anyone"}`,
  ];
  s.inputs.forEach((name, i) => out.push(`   ${name} = ${argText(s.args[i] ?? null)}`));
  out.push(`   data: ${s.data ?? "none (see the note)"}`);
  if (s.state) {
    out.push(`   state: ${s.state.status}${s.state.reason === null ? "" : ` (${s.state.reason})`}`);
    if (s.state.revert !== null) out.push(`   reverts with: ${s.state.revert}`);
  }
  if (s.note !== null) out.push(`   note: ${s.note}`);
  return out;
}

function argText(a: ExitArg): string {
  if (a === null) return "(not known here)";
  if (typeof a === "boolean") return String(a);
  if (typeof a === "string") return a;
  return `[${a.length} words]`;
}
