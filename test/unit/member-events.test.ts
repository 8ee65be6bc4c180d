import { describe, expect, it } from "vitest";
import { DacdError } from "../../src/errors.js";
import { mergeMemberEvents, type MemberEvents } from "../../src/poller/member/member-events.js";

/**
 * The member's hooks reach every listener the daemon merges (metrics, the caller's, the base-chain
 * watch): a hook added to MemberEvents must be added to `listener` below (the compiler says so,
 * through Required<>), and then fails here if merging drops it.
 */

type Call = [listener: string, hook: string, args: unknown[]];

function listener(name: string, calls: Call[]): Required<MemberEvents> {
  const hook =
    (hookName: string) =>
    (...args: unknown[]): void => {
      calls.push([name, hookName, args]);
    };
  return {
    onSigned: hook("onSigned"),
    onRefused: hook("onRefused"),
    onFeeder: hook("onFeeder"),
    onBatchTimes: hook("onBatchTimes"),
  };
}

describe("mergeMemberEvents", () => {
  it("calls every hook of every listener, in the order given, with the hook's arguments", () => {
    const calls: Call[] = [];
    const [a, b, c] = ["a", "b", "c"].map((n) => listener(n, calls));
    const merged = mergeMemberEvents(a, undefined, b, c) as Record<string, (...args: unknown[]) => void>;
    const hooks = Object.keys(a!);
    expect(hooks.length).toBeGreaterThan(0);
    for (const hook of hooks) {
      calls.length = 0;
      const args = [hook, 7];
      expect(typeof merged[hook]).toBe("function");
      merged[hook]!(...args);
      expect(calls).toEqual([
        ["a", hook, args],
        ["b", hook, args],
        ["c", hook, args],
      ]);
    }
  });

  it("keeps a hook only one listener defines, and calls it alone", () => {
    const seen: number[] = [];
    const err = new DacdError("ROOT_MISMATCH", "differs", { batchId: 3 });
    const refused: [number, DacdError][] = [];
    const merged = mergeMemberEvents(
      { onFeeder: (last) => seen.push(last) },
      { onRefused: (id, e) => refused.push([id, e]) },
      undefined,
    );
    merged.onFeeder?.(12);
    merged.onRefused?.(3, err);
    expect(seen).toEqual([12]);
    expect(refused).toEqual([[3, err]]);
    expect(merged.onSigned).toBeUndefined();
    expect(Object.keys(mergeMemberEvents(undefined))).toEqual([]);
  });
});
