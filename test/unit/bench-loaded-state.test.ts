import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LoadedIds, readLoadedState, writeLoadedState } from "../../bench/loaded-state.js";
import { prng } from "../../src/util/prng.js";

const random = prng(7);
const below = (n: number): number => Math.floor(random() * n);
/** `count` distinct ids below 2^bits, sorted. */
function sortedIds(count: number, bits: number): bigint[] {
  const ids = new Set<bigint>();
  while (ids.size < count) {
    let v = 0n;
    for (let i = 0; i < bits; i += 30) v = (v << 30n) | BigInt(Math.floor(random() * 2 ** 30));
    ids.add(v & ((1n << BigInt(bits)) - 1n));
  }
  return [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}
const all = (ids: LoadedIds): bigint[] => Array.from({ length: ids.length }, (_, i) => ids.at(i));

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "dacd-loaded-state-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("the bench's loaded state (bench/loaded-state.ts)", () => {
  it("keeps every id of a small tree and a uniform sample of 2^18 of a large one", () => {
    const small = sortedIds(1000, 31);
    expect(all(LoadedIds.sampled(small, 31, below))).toEqual(small);
    const large = sortedIds(300_000, 31);
    const sample = LoadedIds.sampled(large, 31, below);
    expect(sample.length).toBe(1 << 18);
    const loaded = new Set(large);
    expect(all(sample).every((id) => loaded.has(id))).toBe(true);
    // Drawn across the whole range, not its start: about half fall in each half of the sorted ids.
    const upper = all(sample).filter((id) => id >= large[150_000]!).length;
    expect(Math.abs(upper / (1 << 18) - 0.5)).toBeLessThan(0.01);
  });

  it("hands the state from the loading process to the signing one unchanged", async () => {
    const vaults = LoadedIds.sampled(sortedIds(500, 31), 31, below);
    const orders = LoadedIds.sampled(sortedIds(500, 250), 250, below);
    const root = new Uint8Array(32).map((_, i) => i * 7);
    const path = join(dir, "state.json");
    await writeLoadedState(path, {
      dir: "/somewhere",
      roots: { vault: root },
      gens: { vault: 0, order: 3 },
      ids: new Map([
        ["vault", vaults],
        ["order", orders],
      ]),
      bulkLoadS: 12.5,
    });
    const back = await readLoadedState(path);
    expect(back.dir).toBe("/somewhere");
    expect(back.roots).toEqual({ vault: root });
    expect(back.gens).toEqual({ vault: 0, order: 3 });
    expect(back.bulkLoadS).toBe(12.5);
    expect(all(back.ids.get("vault")!)).toEqual(all(vaults));
    expect(all(back.ids.get("order")!)).toEqual(all(orders));
    expect(all(orders).some((id) => id >= 1n << 64n)).toBe(true);
  });
});
