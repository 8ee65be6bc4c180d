import { describe, expect, it } from "vitest";
import { makeProfile } from "../../src/model/profile.js";
import { BatchPrefetcher, type FetchedBatch, type LoadBatch } from "../../src/poller/member/prefetch.js";
import { parseInSlices } from "../../src/wire/parse-in-slices.js";
import { parseStateUpdate } from "../../src/wire/parse-update.js";
import { loadChain } from "../helpers/vectors.js";

/**
 * The window of fetches ahead (src/poller/member/prefetch.ts) with a loader whose answers the test
 * controls: which ids are asked for and when, and what a failed, missing or stale fetch ahead
 * leads to. The member's use of it over HTTP is tested in test/e2e/catchup-prefetch.test.ts.
 */

type Answer = "batch" | "null" | "error";

function loader(answer: (id: number, call: number) => Answer = () => "batch") {
  const calls: number[] = [];
  const load: LoadBatch = (id) => {
    calls.push(id);
    const a = answer(id, calls.filter((c) => c === id).length);
    return new Promise((resolve, reject) =>
      setTimeout(() => {
        if (a === "error") reject(new Error(`batch ${id} failed`));
        else
          resolve(
            a === "null"
              ? null
              : ({
                  batchId: id,
                  fetchMs: 0,
                  jsonParseMs: 0,
                  parseMs: 0,
                  update: () => ({ prevBatchId: id - 1, changes: {}, statedRoots: {} }),
                } satisfies FetchedBatch),
          );
      }, 5),
    );
  };
  return { calls, load };
}

describe("BatchPrefetcher", () => {
  it("with the feeder's last id, fetches up to `ahead` batches beyond the one taken, never past the last", async () => {
    const { calls, load } = loader();
    const p = new BatchPrefetcher(load, { ahead: 2, maxAgeMs: 60_000 });
    expect((await p.take(0, 3)).batch?.batchId).toBe(0);
    expect(calls).toEqual([0, 1, 2]);
    expect((await p.take(1, 3)).batch?.batchId).toBe(1);
    expect((await p.take(2, 3)).batch?.batchId).toBe(2);
    expect((await p.take(3, 3)).batch?.batchId).toBe(3);
    // Each id asked for once, 3 (the last) only once the window reached it.
    expect(calls).toEqual([0, 1, 2, 3]);
    expect(p.pending).toEqual([]);
  });

  it("without a feeder, fetches ahead only once the batch taken was found", async () => {
    const { calls, load } = loader((id) => (id >= 2 ? "null" : "batch"));
    const p = new BatchPrefetcher(load, { ahead: 2, maxAgeMs: 60_000 });
    expect((await p.take(0)).batch?.batchId).toBe(0);
    expect(calls).toEqual([0, 1, 2]);
    expect((await p.take(1)).batch?.batchId).toBe(1);
    await new Promise((r) => setTimeout(r, 20));
    // Batch 2 was not there ahead: asked again in its turn; nothing ahead of a missing batch.
    expect((await p.take(2)).batch).toBeNull();
    await new Promise((r) => setTimeout(r, 20));
    expect(calls).toEqual([0, 1, 2, 3, 2]);
  });

  it("a fetch ahead that failed is made again in the batch's turn, whose error is then the batch's", async () => {
    const { calls, load } = loader((id, call) =>
      id === 1 && call === 1 ? "error" : id === 2 ? "error" : "batch",
    );
    const p = new BatchPrefetcher(load, { ahead: 2, maxAgeMs: 60_000 });
    await p.take(0, 5);
    expect((await p.take(1, 5)).batch?.batchId).toBe(1);
    await expect(p.take(2, 5)).rejects.toThrow("batch 2 failed");
    expect(calls.filter((c) => c === 1)).toHaveLength(2);
    expect(calls.filter((c) => c === 2)).toHaveLength(2);
  });

  it("a stale fetch ahead, or one dropped, is fetched again", async () => {
    const { calls, load } = loader();
    const p = new BatchPrefetcher(load, { ahead: 1, maxAgeMs: 30 });
    await p.take(0, 5);
    await new Promise((r) => setTimeout(r, 80));
    await p.take(1, 5); // fetched ahead 80 ms ago: too old
    expect(calls).toEqual([0, 1, 1, 2]);
    p.drop();
    expect(p.pending).toEqual([]);
    await p.take(2, 5);
    expect(calls).toEqual([0, 1, 1, 2, 2, 3]);
  });

  it("reports the wait for a batch not yet fetched", async () => {
    const { load } = loader();
    const p = new BatchPrefetcher(load, { ahead: 1, maxAgeMs: 60_000 });
    const first = (await p.take(0, 1)).waitMs;
    expect(first).toBeGreaterThanOrEqual(4);
    await new Promise((r) => setTimeout(r, 20));
    expect((await p.take(1, 1)).waitMs).toBeLessThan(first);
  });
});

describe("parseInSlices", () => {
  /** A chain's batch with its vault and order maps grown past several slices (copies under new ids). */
  function grown(): Record<string, unknown> {
    const update = structuredClone(loadChain("spot-chain").responses[1]!.update) as Record<string, unknown>;
    for (const key of ["vaults", "orders", "rollup_vaults"]) {
      const leaves = update[key] as Record<string, unknown>;
      const first = Object.values(leaves)[0];
      for (let i = 0; i < 2500; i++) leaves[String(1_000_000 + i * 7)] = first;
    }
    return update;
  }

  it("reads the same update as parseStateUpdate, slices and all", async () => {
    const profile = makeProfile("spot");
    for (const validateRollup of [true, false, undefined]) {
      const raw = grown();
      const whole = parseStateUpdate(raw, profile, 1, { validateRollup });
      const sliced = await parseInSlices(raw, profile, 1, validateRollup);
      expect(whole.changes.vault!.size).toBeGreaterThan(2500);
      expect(sliced).toEqual(whole);
    }
    const { responses } = loadChain("perpetual-chain");
    const perp = makeProfile("perpetual");
    for (const [id, r] of responses.entries()) {
      const raw = r.update as Record<string, unknown>;
      expect(await parseInSlices(raw, perp, id, undefined)).toEqual(parseStateUpdate(raw, perp, id));
    }
  });

  it("refuses a bad leaf in a later slice, or a bad field outside the leaves, with parseStateUpdate's error", async () => {
    const profile = makeProfile("spot");
    const badLeaf = grown();
    (badLeaf.orders as Record<string, unknown>)[String(1_000_000 + 2400 * 7)] = { fulfilled_amount: "-1" };
    const badRoot = grown();
    badRoot.vault_root = "xyz";
    const badMap = grown();
    badMap.vaults = [];
    for (const raw of [badLeaf, badRoot, badMap]) {
      let expected: unknown;
      try {
        parseStateUpdate(raw, profile, 1, { validateRollup: true });
      } catch (err) {
        expected = err;
      }
      expect(expected).toBeInstanceOf(Error);
      await expect(parseInSlices(raw, profile, 1, true)).rejects.toThrow((expected as Error).message);
    }
  });
});
