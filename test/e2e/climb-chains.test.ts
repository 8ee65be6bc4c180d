import { pedersen } from "@scure/starknet";
import { afterAll, describe, expect, it } from "vitest";
import { climbChains, type ChainClimb, type HashEngine } from "../../src/verifier/hash/engine.js";
import { loadNativePedersen, NativeEngine } from "../../src/verifier/hash/native-engine.js";
import { PoolEngine } from "../../src/verifier/hash/pool-engine.js";
import { WasmEngine } from "../../src/verifier/hash/wasm-engine.js";
import { prng } from "../../src/util/prng.js";
import { nativeAvailable } from "../helpers/native-required.js";

/**
 * Chain climbing (HashEngine.climbChains): every native kernel and the pool against the generic
 * climb (one one-sided call per height and side, here over WASM), and a few chains against
 * @scure/starknet step by step.
 */

const addon = loadNativePedersen();
const haveAddon = nativeAvailable("the native addon", addon !== null);
const kernels = addon?.kernels() ?? [];

const be32 = (v: bigint): Uint8Array => new Uint8Array(Buffer.from(v.toString(16).padStart(64, "0"), "hex"));
const big = (b: Uint8Array): bigint => BigInt("0x" + Buffer.from(b).toString("hex"));

/** E[0..height] over an arbitrary leaf value, with @scure/starknet. */
function empties(height: number): Uint8Array {
  const out = new Uint8Array((height + 1) * 32);
  let e = 0x1234n;
  for (let k = 0; k <= height; k++) {
    out.set(be32(e), k * 32);
    e = BigInt(pedersen(e, e));
  }
  return out;
}

/** n random chains in a tree of `height`, with every kind of start and end among them. */
function randomJob(n: number, height: number, seed: number): ChainClimb {
  const next = prng(seed);
  const rand = (m: number): number => Math.floor(next() * m);
  const starts = new Uint8Array(n * 32);
  const paths = new Uint8Array(n * 32);
  const from = new Uint8Array(n);
  const to = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    for (let b = 1; b < 32; b++) starts[i * 32 + b] = rand(256);
    starts[i * 32] = rand(8); // below 2^251
    for (let b = 0; b < 32; b++) paths[i * 32 + b] = rand(256);
    from[i] = i % 7 === 0 ? 0 : rand(height);
    to[i] = i % 11 === 0 ? from[i]! : from[i]! + rand(height - from[i]! + 1);
  }
  return { starts, paths, from, to, empty: empties(height), step: 8, slots: Math.floor((height - 1) / 8) };
}

/** Engines without climbChains, so that climbChains() climbs a height at a time through them. */
const wasm = new WasmEngine();
const generic: HashEngine = { name: "generic", hashMany: (xs, ys) => wasm.hashMany(xs, ys) };
/** The same over the portable native kernel (itself checked against @scure/starknet), for speed. */
const portable = addon ? new NativeEngine(addon, "portable") : undefined;
const genericNative: HashEngine = {
  name: "generic-native",
  hashMany: (xs, ys) => portable!.hashMany(xs, ys),
};

const pools: PoolEngine[] = [];
afterAll(async () => {
  for (const p of pools) await p.close();
});

describe("climbChains", () => {
  it("the generic climb follows @scure/starknet step by step, with marks at multiples of step", async () => {
    const job = randomJob(6, 20, 1);
    const got = await climbChains(generic, job);
    for (let i = 0; i < 6; i++) {
      let v = big(job.starts.subarray(i * 32, i * 32 + 32));
      for (let h = job.from[i]!; h < job.to[i]!; h++) {
        const e = big(job.empty.subarray(h * 32, h * 32 + 32));
        const right = (job.paths[i * 32 + 31 - (h >> 3)]! >> (h & 7)) & 1;
        v = BigInt(right ? pedersen(e, v) : pedersen(v, e));
        const at = h + 1;
        if (at < job.to[i]! && at % 8 === 0) {
          const off = (i * job.slots + at / 8 - 1) * 32;
          expect(big(got.marks.subarray(off, off + 32))).toBe(v);
        }
      }
      expect(big(got.tops.subarray(i * 32, i * 32 + 32))).toBe(v);
    }
  });

  it.skipIf(!haveAddon).each(kernels)("kernel %s equals the generic climb", async (kernel) => {
    const native = new NativeEngine(addon!, kernel);
    for (const [n, height, seed] of [
      [1, 5, 2],
      [9, 31, 3],
      [200, 64, 4],
      [3001, 64, 5],
      [500, 251, 9],
    ] as const) {
      const job = randomJob(n, height, seed);
      // WASM for the small jobs, the portable kernel one height at a time for the large ones.
      const want = await climbChains(n <= 200 ? generic : genericNative, job);
      const got = native.climbChains(job);
      expect(Buffer.from(got.tops).equals(Buffer.from(want.tops))).toBe(true);
      expect(Buffer.from(got.marks).equals(Buffer.from(want.marks))).toBe(true);
    }
  });

  it.skipIf(!haveAddon)("the pool spreads chains over its workers and equals one thread", async () => {
    const pool = PoolEngine.create({ threads: 2, climbThreshold: 64 })!;
    pools.push(pool);
    const job = randomJob(5000, 64, 6);
    const want = new NativeEngine(addon!).climbChains(job);
    const got = await pool.climbChains(job);
    expect(Buffer.from(got.tops).equals(Buffer.from(want.tops))).toBe(true);
    expect(Buffer.from(got.marks).equals(Buffer.from(want.marks))).toBe(true);
  });

  it.skipIf(!haveAddon)(
    "refuses a start at or above the prime, naming it, natively and in the pool",
    async () => {
      const job = randomJob(3000, 31, 7);
      job.starts.fill(0xff, 2500 * 32, 2500 * 32 + 32);
      expect(() => new NativeEngine(addon!).climbChains(job)).toThrow(
        /starts\[2500\] is not below the field prime/,
      );
      const pool = PoolEngine.create({ threads: 2, climbThreshold: 64 })!;
      pools.push(pool);
      expect(() => pool.climbChains(job)).toThrow(/starts\[2500\] is not below the field prime/);
      await expect(climbChains(generic, job)).rejects.toThrow(/starts\[2500\]/);
    },
  );

  it.skipIf(!haveAddon)("refuses chains that need an E[k] it was not given, or marks without room", () => {
    const job = randomJob(4, 31, 8);
    const native = new NativeEngine(addon!);
    const tall = { ...job, to: Uint8Array.from(job.to, () => 40), from: new Uint8Array(4) };
    expect(() => native.climbChains(tall)).toThrow(/chain 0 climbs from height 0 to 40 with E\[0\.\.32\)/);
    expect(() =>
      native.climbChains({ ...job, to: Uint8Array.of(31, 31, 31, 31), from: new Uint8Array(4), slots: 2 }),
    ).toThrow(/marks has no room for chain 0/);
  });
});
