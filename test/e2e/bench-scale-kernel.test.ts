import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { loadNativePedersen } from "../../src/verifier/hash/native-engine.js";
import type { PoolEngine } from "../../src/verifier/hash/pool-engine.js";
import { createEngine } from "../../src/verifier/hash/select.js";
import {
  DEFAULT_SCALE_FACTOR,
  parseKernelOption,
  parseScaleFactor,
  scaledSize,
  shrunkSize,
} from "../../bench/scale-options.js";
import { W_SPOT } from "../../bench/workloads.js";
import { nativeAvailable } from "../helpers/native-required.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const vectors = (
  JSON.parse(readFileSync(path.join(here, "../fixtures/vectors/pedersen.json"), "utf8")) as {
    vectors: { x: string; y: string; hash: string }[];
  }
).vectors;

describe("bench options: --kernel and --scale-factor", () => {
  const available = ["ifma", "adx", "portable"];

  it("--kernel names one available kernel, or all of them in their order", () => {
    expect(parseKernelOption(undefined, available)).toEqual([]);
    expect(parseKernelOption("adx", available)).toEqual(["adx"]);
    expect(parseKernelOption(" portable ", available)).toEqual(["portable"]);
    expect(parseKernelOption("all", available)).toEqual(["ifma", "adx", "portable"]);
    expect(parseKernelOption("all", ["adx", "portable"])).toEqual(["adx", "portable"]);
  });

  it("--kernel refuses a kernel this CPU or build lacks, naming the ones it has", () => {
    expect(() => parseKernelOption("ifma", ["adx", "portable"])).toThrow(
      '--kernel "ifma": this CPU and build run adx, portable (or all)',
    );
    expect(() => parseKernelOption("", available)).toThrow(/--kernel ""/);
  });

  it("--scale-factor defaults to 10 and must exceed 1", () => {
    expect(parseScaleFactor(undefined)).toBe(DEFAULT_SCALE_FACTOR);
    expect(DEFAULT_SCALE_FACTOR).toBe(10);
    expect(parseScaleFactor("2")).toBe(2);
    expect(parseScaleFactor("1.5")).toBe(1.5);
    for (const bad of ["1", "0.5", "-3", "ten", "Infinity", ""])
      expect(() => parseScaleFactor(bad)).toThrow(/--scale-factor must be a number above 1/);
  });

  it("the scaled state is 10M vaults, 5M orders, 1M rollup vaults, with W-spot's batches", () => {
    expect(scaledSize(W_SPOT, 10)).toEqual({
      initial: { vault: 10_000_000, order: 5_000_000, rollup_vault: 1_000_000 },
      batch: { vault: 10_000, order: 5_000, rollup_vault: 2_000 },
    });
    expect(scaledSize(W_SPOT, 2).initial).toEqual({
      vault: 2_000_000,
      order: 1_000_000,
      rollup_vault: 200_000,
    });
    expect(shrunkSize(W_SPOT, 0.1)).toEqual({
      initial: { vault: 100_000, order: 50_000, rollup_vault: 20_000 },
      batch: { vault: 1_000, order: 500, rollup_vault: 200 },
    });
  });

  it("keeps --sequential-ids through both resizings", () => {
    const sequential = { ...W_SPOT, sequentialIds: true };
    expect(scaledSize(sequential, 10).sequentialIds).toBe(true);
    expect(shrunkSize(sequential, 0.1).sequentialIds).toBe(true);
    expect(scaledSize(W_SPOT, 10).sequentialIds).toBeUndefined();
  });
});

const addon = loadNativePedersen();
const haveAddon = nativeAvailable("the native addon", addon !== null);

describe.skipIf(!haveAddon)("a forced kernel in the bench's engine (worker pool)", () => {
  // Repeated past the pool's threshold (256 pairs), so that the workers hash them too.
  const REPEAT = 20;
  const n = vectors.length * REPEAT;
  const xs = new Uint8Array(n * 32);
  const ys = new Uint8Array(n * 32);
  for (let i = 0; i < n; i++) {
    const v = vectors[i % vectors.length]!;
    xs.set(Buffer.from(BigInt(v.x).toString(16).padStart(64, "0"), "hex"), i * 32);
    ys.set(Buffer.from(BigInt(v.y).toString(16).padStart(64, "0"), "hex"), i * 32);
  }
  const hex = (b: Uint8Array, i: number): string =>
    "0x" + BigInt("0x" + Buffer.from(b.subarray(i * 32, i * 32 + 32)).toString("hex")).toString(16);

  it.each(parseKernelOption("all", addon?.kernels() ?? []))(
    "%s gives every pinned vector's hash, as the default kernel does",
    async (kernel) => {
      const forced = createEngine("native", { threads: 2, kernel }) as PoolEngine;
      const best = createEngine("native", { threads: 2 }) as PoolEngine;
      try {
        expect(forced.kernel).toBe(kernel);
        expect(best.kernel).toBe(addon!.bestKernel);
        const got = await forced.hashMany(xs, ys);
        const want = await best.hashMany(xs, ys);
        expect(Buffer.from(got).equals(Buffer.from(want))).toBe(true);
        for (let i = 0; i < n; i++) expect(hex(got, i)).toBe(vectors[i % vectors.length]!.hash);
        // The vector H(1, 2), pinned: one pair alone stays on the calling thread.
        const one = await forced.hashMany(xs.subarray(32, 64), ys.subarray(32, 64));
        expect(hex(one, 0)).toBe("0x5bb9440e27889a364bcb678b1f679ecd1347acdedcbf36e83494f857cc58026");
      } finally {
        await forced.close();
        await best.close();
      }
    },
  );
});
