/**
 * Faults on demand (docs/devnet.md, "Faults"): request-level faults (503, hang, truncated body) are
 * matched here per server and path; state faults (wrong stated root) are queued for the batcher.
 */
import type { TreeName } from "./shared.js";

export type Scope = "gateway" | "feeder" | "availability";
export type RequestFaultKind = "unavailable" | "hang" | "truncate";

interface RequestFault {
  readonly kind: RequestFaultKind;
  remaining: number;
  readonly ms: number;
  readonly scope: Scope | "all";
  readonly path: string | undefined;
}

export type FaultAction =
  { kind: "unavailable" } | { kind: "hang"; ms: number } | { kind: "truncate" } | null;

export class Faults {
  private rules: RequestFault[] = [];
  private wrongRoots: TreeName[] = [];

  addRequestFault(
    kind: RequestFaultKind,
    count: number,
    opts: { ms?: number; scope?: Scope | "all"; path?: string },
  ): void {
    this.rules.push({
      kind,
      remaining: count,
      ms: opts.ms ?? 0,
      scope: opts.scope ?? "all",
      path: opts.path,
    });
  }

  /** Queues a wrong stated root for the next batch. */
  addWrongRoot(tree: TreeName): void {
    this.wrongRoots.push(tree);
  }

  /** The tree whose stated root the next batch publishes wrong, if any. */
  takeWrongRoot(): TreeName | undefined {
    return this.wrongRoots.shift();
  }

  /** The fault to play on this request, consuming one use of the first matching rule. */
  onRequest(scope: Scope, path: string): FaultAction {
    const rule = this.rules.find(
      (r) =>
        r.remaining > 0 &&
        (r.scope === "all" || r.scope === scope) &&
        (r.path === undefined || path.startsWith(r.path)),
    );
    if (!rule) return null;
    rule.remaining--;
    this.rules = this.rules.filter((r) => r.remaining > 0);
    return rule.kind === "hang" ? { kind: "hang", ms: rule.ms } : { kind: rule.kind };
  }

  clear(): void {
    this.rules = [];
    this.wrongRoots = [];
  }

  pending(): unknown {
    return { request_faults: this.rules.map((r) => ({ ...r })), wrong_roots_queued: [...this.wrongRoots] };
  }
}

/** A published root made wrong: its lowest bit flipped (still 64 hex digits). */
export function corruptRoot(hex64: string): string {
  return (BigInt("0x" + hex64) ^ 1n).toString(16).padStart(64, "0");
}
