/**
 * Liveness and readiness, as /healthz and /readyz answer them.
 *
 * - Healthy: the process runs and the store answers a read (within a few seconds).
 * - Ready: the member is caught up within `max_ready_lag` batches of what the feeder gateway
 *   reports, its last gateway call succeeded, and it is not stalled: the batch in hand (announced
 *   by the feeder, or being polled) has advanced within `max_stall_s`. Progress, not the HTTP
 *   time-outs, decides: an answer trickled a byte at a time keeps a request alive until its
 *   deadline, and the member is unready long before. A load balancer or an HA monitor can take an
 *   unready member out of rotation; systemd or a supervisor should only act on unhealthy.
 */
import type { MemberState } from "../poller/member/member.js";
import type { LevelStore } from "../storage/level-store.js";

export interface Check {
  ok: boolean;
  /** Machine-readable status: ok | starting | catching_up | lagging | stalled | gateway_unreachable | signer_unavailable | stopped | store_unavailable. */
  status: string;
  reason: string;
  [k: string]: unknown;
}

/** Batches the feeder reports that the member has not handled; undefined without feeder answers. */
export function batchLag(state: MemberState): number | undefined {
  if (state.feederLastBatchId === undefined) return undefined;
  return Math.max(0, state.feederLastBatchId - (state.nextBatchId - 1));
}

/** What readiness is measured against (configuration keys max_ready_lag, max_stall_s). */
export interface ReadyLimits {
  readonly maxReadyLag: number;
  readonly maxStallS: number;
}

/** Seconds the batch in hand has gone without a completed step (0 while idle between polls). */
export function stalledSeconds(state: MemberState, now: number): number {
  if (state.pendingSince === undefined) return 0;
  return Math.max(0, (now - Date.parse(state.pendingSince)) / 1000);
}

export function readiness(state: MemberState, limits: ReadyLimits, now = Date.now()): Check {
  const { maxReadyLag, maxStallS } = limits;
  const lag = batchLag(state);
  const stalled = stalledSeconds(state, now);
  const facts = {
    phase: state.phase,
    next_batch_id: state.nextBatchId,
    feeder_last_batch_id: state.feederLastBatchId ?? null,
    lag: lag ?? null,
    max_ready_lag: maxReadyLag,
    last_signed_batch_id: state.lastSigned?.batch_id ?? null,
    pending_s: Math.floor(stalled),
    max_stall_s: maxStallS,
    mode: state.mode,
  };
  if (state.phase === "stopped")
    return { ok: false, status: "stopped", reason: "the member is stopping", ...facts };
  if (!state.gatewayReachable || state.failing?.code === "GATEWAY") {
    const why = state.failing?.code === "GATEWAY" ? `: ${state.failing.reason}` : "";
    return {
      ok: false,
      status: "gateway_unreachable",
      reason: `the gateway is not answering${why}`,
      ...facts,
    };
  }
  if (state.failing?.code === "SIGNER")
    return {
      ok: false,
      status: "signer_unavailable",
      reason: `the member key's token is failing (batch ${state.failing.batch_id} waits unsigned): ${state.failing.reason}`,
      ...facts,
    };
  if (stalled > maxStallS) {
    const announced =
      state.feederLastBatchId !== undefined && state.feederLastBatchId >= state.nextBatchId
        ? `batch ${state.nextBatchId}, announced by the feeder gateway,`
        : `the poll for batch ${state.nextBatchId}`;
    const why = state.failing ? `: ${state.failing.reason}` : " (its answer has not arrived)";
    return {
      ok: false,
      status: "stalled",
      reason: `${announced} has not advanced for ${Math.floor(stalled)} s (max_stall_s ${maxStallS})${why}`,
      ...facts,
    };
  }
  if (lag !== undefined && lag > maxReadyLag) {
    return {
      ok: false,
      status: "lagging",
      reason: `${lag} batches behind the feeder gateway (max_ready_lag ${maxReadyLag})`,
      ...facts,
    };
  }
  if (state.phase === "starting") {
    return { ok: false, status: "starting", reason: "catching up after start-up", ...facts };
  }
  const shadow = state.mode === "shadow" ? " (shadow mode: signatures are made, never posted)" : "";
  return { ok: true, status: "ok", reason: `caught up and the gateway is reachable${shadow}`, ...facts };
}

/** Liveness: the store answers a read within `timeoutMs`. */
export async function liveness(store: LevelStore, timeoutMs = 5000): Promise<Check> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    const cursor = await Promise.race([store.getCursor(), timeout]);
    return { ok: true, status: "ok", reason: "the store answers", next_batch_id: cursor?.next_batch_id ?? 0 };
  } catch (err) {
    return {
      ok: false,
      status: "store_unavailable",
      reason: `the store does not answer a read: ${err instanceof Error ? err.message : String(err)}`,
    };
  } finally {
    clearTimeout(timer);
  }
}
