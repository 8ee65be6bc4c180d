import { describe, expect, it } from "vitest";
import { BoundedSet } from "../../src/util/bounded-set.js";
import { LineLimiter } from "../../src/util/line-limiter.js";

/** What a long-running process remembers, and the lines it logs, about input it does not control. */
describe("BoundedSet", () => {
  it("keeps at most maxEntries, dropping the oldest, and forgets entries older than maxAgeMs", () => {
    let now = 0;
    const set = new BoundedSet(3, 1000, () => now);
    for (const k of ["a", "b", "c", "d"]) set.add(k);
    expect(set.size).toBe(3);
    expect(set.delete("a")).toBe(false);
    expect(set.delete("b")).toBe(true);
    now = 500;
    set.add("e");
    now = 1200; // c and d are 1200 ms old, e 700 ms
    expect(set.size).toBe(1);
    expect(set.delete("c")).toBe(false);
    expect(set.delete("e")).toBe(true);
  });
});

describe("LineLimiter", () => {
  it("lets perWindow lines of a kind through per window and counts the rest for the next one", () => {
    let now = 0;
    const limiter = new LineLimiter(2, 60_000, () => now);
    const taken = Array.from({ length: 10 }, () => limiter.take("x"));
    expect(taken.filter(Boolean)).toEqual([{ held: 0 }, { held: 0 }]);
    expect(limiter.take("y")).toEqual({ held: 0 });
    now = 60_000;
    expect(limiter.take("x")).toEqual({ held: 8 });
    expect(limiter.take("x")).toEqual({ held: 0 });
    expect(limiter.take("x")).toBeUndefined();
  });
});
