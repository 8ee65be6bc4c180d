import type { CheckReport } from "../maintenance/integrity-check.js";
import { idRanges } from "./output.js";

/** Problems listed on a terminal; the JSON (--json) has up to 100. */
const SHOWN = 10;

/** `dacd check` on a terminal: the verdict, the batch range, the lists as ranges, the first problems. */
export function checkSummary(r: CheckReport): string {
  const lines: string[] = [];
  const range =
    r.first_batch_id === null
      ? "no batches"
      : `batches ${r.first_batch_id}-${r.last_batch_id} (${r.batches} records)`;
  lines.push(`${r.ok ? "consistent" : "NOT CONSISTENT"}: profile ${r.profile ?? "none"}, ${range}`);
  const list = (name: string, ids: number[]): void => {
    if (ids.length > 0) lines.push(`${name}: ${ids.length} (${idRanges(ids)})`);
  };
  list("skipped", r.skipped);
  list("pruned", r.pruned);
  list("loaded from a dump", r.loaded_from_dump);
  if (r.records_read !== undefined) lines.push(`every record of the store read: ${r.records_read}`);
  for (const d of r.deep ?? []) {
    const trees = Object.entries(d.trees)
      .map(([t, c]) => `${t} ${c.nodes} nodes, ${c.leaves} leaves`)
      .join("; ");
    lines.push(`deep check of batch ${d.batch_id}: ${trees}`);
  }
  if (r.problems.length > 0) {
    lines.push(`${r.problems.length} problem${r.problems.length === 1 ? "" : "s"}:`);
    for (const p of r.problems.slice(0, SHOWN)) {
      const where = [p.batch_id !== undefined ? `batch ${p.batch_id}` : "", p.tree ?? ""]
        .filter(Boolean)
        .join(" ");
      lines.push(`  ${where ? `${where}: ` : ""}${p.problem}`);
    }
    if (r.problems.length > SHOWN) lines.push(`  … and ${r.problems.length - SHOWN} more (--json lists 100)`);
  }
  return lines.join("\n") + "\n";
}
