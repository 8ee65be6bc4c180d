import { describe, expect, it } from "vitest";
import { readAhead } from "../../src/util/read-ahead.js";

/** A source that records when each item was asked for and when it ended. */
function source(n: number, failAt?: number): { it: AsyncGenerator<number>; log: string[] } {
  const log: string[] = [];
  async function* gen(): AsyncGenerator<number> {
    try {
      for (let i = 0; i < n; i++) {
        log.push(`read ${i}`);
        await new Promise((r) => setTimeout(r, 1));
        if (i === failAt) throw new Error(`read ${i} failed`);
        yield i;
      }
    } finally {
      log.push("ended");
    }
  }
  return { it: gen(), log };
}

describe("readAhead", () => {
  it("hands out every item in order, the next one read while the consumer holds the current", async () => {
    const { it: src, log } = source(4);
    const got: number[] = [];
    for await (const x of readAhead(src)) {
      // The item after x was asked for before x reached the consumer.
      if (x < 3) expect(log).toContain(`read ${x + 1}`);
      got.push(x);
    }
    expect(got).toEqual([0, 1, 2, 3]);
    expect(log.at(-1)).toBe("ended");
  });

  it("passes a source's failure on to the consumer", async () => {
    const { it: src } = source(5, 2);
    const got: number[] = [];
    await expect(
      (async () => {
        for await (const x of readAhead(src)) got.push(x);
      })(),
    ).rejects.toThrow("read 2 failed");
    expect(got).toEqual([0, 1]);
  });

  it("ends the source when the consumer stops early, even when the read ahead fails", async () => {
    const { it: src, log } = source(5, 1);
    for await (const x of readAhead(src)) {
      expect(x).toBe(0);
      break;
    }
    expect(log).toEqual(["read 0", "read 1", "ended"]);
  });
});
