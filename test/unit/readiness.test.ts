import { describe, expect, it } from "vitest";
import type { MemberState } from "../../src/poller/member/member.js";
import { readiness } from "../../src/service/health.js";

/** Readiness from progress: the stall clock against max_stall_s, and what the reason says. */

const NOW = Date.parse("2026-01-01T00:10:00Z");
const limits = { maxReadyLag: 5, maxStallS: 120 };
const ago = (s: number): string => new Date(NOW - s * 1000).toISOString();
const base = (over: Partial<MemberState> = {}): MemberState => ({
  phase: "catching_up",
  nextBatchId: 7,
  feederLastBatchId: 7,
  gatewayReachable: true,
  mode: "active",
  ...over,
});

describe("readiness and stalls", () => {
  it("is ready while idle between polls, however long the wait", () => {
    expect(readiness(base({ phase: "idle", feederLastBatchId: 6 }), limits, NOW)).toMatchObject({ ok: true });
  });

  it("is ready while the batch in hand is younger than max_stall_s", () => {
    const r = readiness(base({ pendingSince: ago(119) }), limits, NOW);
    expect(r).toMatchObject({ ok: true, pending_s: 119, max_stall_s: 120 });
  });

  it("is stalled past max_stall_s, naming the announced batch", () => {
    const r = readiness(base({ pendingSince: ago(125) }), limits, NOW);
    expect(r).toMatchObject({ ok: false, status: "stalled", pending_s: 125 });
    expect(r.reason).toBe(
      "batch 7, announced by the feeder gateway, has not advanced for 125 s (max_stall_s 120) (its answer has not arrived)",
    );
  });

  it("names the poll without a feeder, and a failure's reason while retrying", () => {
    const poll = readiness(base({ feederLastBatchId: undefined, pendingSince: ago(200) }), limits, NOW);
    expect(poll.reason).toMatch(/^the poll for batch 7 has not advanced for 200 s/);
    const failing = readiness(
      base({
        phase: "failing",
        pendingSince: ago(300),
        failing: {
          batch_id: 7,
          code: "BAD_INPUT",
          reason: "vaults: bad",
          since: ago(300),
          attempts: 4,
          next_retry_at: ago(0),
        },
      }),
      limits,
      NOW,
    );
    expect(failing).toMatchObject({ status: "stalled" });
    expect(failing.reason).toMatch(/\(max_stall_s 120\): vaults: bad$/);
  });

  it("leaves an unreachable gateway and a stop as they were", () => {
    expect(readiness(base({ pendingSince: ago(500), gatewayReachable: false }), limits, NOW).status).toBe(
      "gateway_unreachable",
    );
    expect(readiness(base({ pendingSince: ago(500), phase: "stopped" }), limits, NOW).status).toBe("stopped");
  });
});
