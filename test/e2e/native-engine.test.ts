import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { pedersen } from "@scure/starknet";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashWithConstant } from "../../src/verifier/hash/engine.js";
import { FIELD_PRIME } from "../../src/model/field.js";
import { useNativeAddon } from "../../src/native/addon.js";
import { loadNativeEngine, loadNativePedersen, NativeEngine } from "../../src/verifier/hash/native-engine.js";
import { PoolEngine } from "../../src/verifier/hash/pool-engine.js";
import { createEngine } from "../../src/verifier/hash/select.js";
import { WasmEngine } from "../../src/verifier/hash/wasm-engine.js";
import { packedFieldElements } from "../../bench/field-elements.js";
import { nativeAvailable } from "../helpers/native-required.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const vectors = JSON.parse(readFileSync(path.join(here, "../fixtures/vectors/pedersen.json"), "utf8")) as {
  field_prime: string;
  vectors: { x: string; y: string; hash: string }[];
};

const addon = loadNativePedersen();
const haveAddon = nativeAvailable("the native addon", addon !== null);
const kernels = addon?.kernels() ?? [];
const SKIP_REASON =
  "native addon not built (run `node scripts/build-native.mjs`); skipping native engine tests";
if (!addon) console.warn(SKIP_REASON);

const RANDOM_PAIRS = 100_000;
const P = FIELD_PRIME;

function be32(v: bigint): Uint8Array {
  return new Uint8Array(Buffer.from(v.toString(16).padStart(64, "0"), "hex"));
}
function hex(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("hex");
}
function pack(values: bigint[]): Uint8Array {
  const out = new Uint8Array(values.length * 32);
  values.forEach((v, i) => out.set(be32(v), i * 32));
  return out;
}
function scureHash(x: bigint, y: bigint): string {
  return BigInt(pedersen(x, y)).toString(16).padStart(64, "0");
}

const EDGE: bigint[] = [
  0n,
  1n,
  2n,
  3n,
  P - 1n,
  P - 2n,
  2n ** 248n - 1n,
  2n ** 248n,
  2n ** 248n + 1n,
  2n ** 247n,
  2n ** 249n + 12345n,
  2n ** 251n - 1n, // all bits set below 2^251
  2n ** 251n, // x_high = 8
  2n ** 251n + 17n * 2n ** 192n, // p - 1 written another way
  2n ** 251n + 2n ** 192n * 16n + (2n ** 192n - 1n), // all bits set that fit below p
  2n ** 192n - 1n,
  2n ** 64n,
  0x1234567890abcdef1234567890abcdef1234567890abcdef1234567890abcdefn % P,
];

describe.skipIf(!haveAddon)(
  addon ? "native Pedersen engine" : `native Pedersen engine (SKIPPED: ${SKIP_REASON})`,
  () => {
    let xs: Uint8Array;
    let ys: Uint8Array;
    let expected: Uint8Array;
    let edgeXs: Uint8Array;
    let edgeYs: Uint8Array;
    let edgeExpected: string[];

    beforeAll(() => {
      xs = packedFieldElements(RANDOM_PAIRS, "x");
      ys = packedFieldElements(RANDOM_PAIRS, "y");
      // The WASM engine is the reference for the 100k random pairs (the JS one is too slow); it is
      // itself checked against @scure/starknet on a sample in the first test.
      expected = new WasmEngine().hashMany(xs, ys);
      const ex: bigint[] = [];
      const ey: bigint[] = [];
      for (const a of EDGE) {
        for (const b of EDGE) {
          ex.push(a);
          ey.push(b);
        }
      }
      edgeXs = pack(ex);
      edgeYs = pack(ey);
      edgeExpected = ex.map((a, i) => scureHash(a, ey[i]!));
    }, 180_000);

    it("the WASM reference agrees with @scure/starknet on a sample of 200", () => {
      for (let i = 0; i < RANDOM_PAIRS; i += RANDOM_PAIRS / 200) {
        const x = BigInt("0x" + hex(xs.subarray(i * 32, i * 32 + 32)));
        const y = BigInt("0x" + hex(ys.subarray(i * 32, i * 32 + 32)));
        expect(hex(expected.subarray(i * 32, i * 32 + 32))).toBe(scureHash(x, y));
      }
    });

    it("lists its kernels, portable always among them", () => {
      expect(kernels).toContain("portable");
      expect(kernels[0]).toBe(addon!.bestKernel);
      expect(loadNativeEngine()!.kernel).toBe(addon!.bestKernel);
      expect(() => loadNativeEngine("no-such-kernel")).toThrow(/not available/);
    });

    describe.each(kernels)("kernel %s", (kernel) => {
      const engine = () => new NativeEngine(addon!, kernel);

      it("matches every vector of pedersen.json, one call each and all in one call", () => {
        const e = engine();
        expect(e.kernel).toBe(kernel);
        const vx = pack(vectors.vectors.map((v) => BigInt(v.x)));
        const vy = pack(vectors.vectors.map((v) => BigInt(v.y)));
        const all = e.hashMany(vx, vy);
        vectors.vectors.forEach((v, i) => {
          const want = BigInt(v.hash).toString(16).padStart(64, "0");
          expect(hex(e.hashMany(be32(BigInt(v.x)), be32(BigInt(v.y))))).toBe(want);
          expect(hex(all.subarray(i * 32, i * 32 + 32))).toBe(want);
        });
      });

      it("matches @scure/starknet on edge cases (0, 1, p-1, around 2^248, top bits)", () => {
        const e = engine();
        const got = e.hashMany(edgeXs, edgeYs);
        for (let i = 0; i < edgeExpected.length; i++) {
          expect(hex(got.subarray(i * 32, i * 32 + 32))).toBe(edgeExpected[i]);
        }
        // the same one pair at a time (the small-batch path)
        for (let i = 0; i < edgeExpected.length; i += 7) {
          const one = e.hashMany(edgeXs.subarray(i * 32, i * 32 + 32), edgeYs.subarray(i * 32, i * 32 + 32));
          expect(hex(one)).toBe(edgeExpected[i]);
        }
      });

      it(`matches the WASM engine on ${RANDOM_PAIRS} random pairs in one call`, () => {
        const got = engine().hashMany(xs, ys);
        expect(Buffer.compare(got, expected)).toBe(0);
      });

      it("matches on single calls and batches of odd sizes", () => {
        const e = engine();
        for (let i = 0; i < 200; i++) {
          const got = e.hashMany(xs.subarray(i * 32, i * 32 + 32), ys.subarray(i * 32, i * 32 + 32));
          expect(hex(got)).toBe(hex(expected.subarray(i * 32, i * 32 + 32)));
        }
        let start = 200;
        for (const size of [
          1, 2, 3, 5, 6, 7, 17, 47, 48, 49, 95, 511, 512, 513, 559, 1023, 1024, 1025, 4097,
        ]) {
          const got = e.hashMany(
            xs.subarray(start * 32, (start + size) * 32),
            ys.subarray(start * 32, (start + size) * 32),
          );
          expect(Buffer.compare(got, expected.subarray(start * 32, (start + size) * 32))).toBe(0);
          start += size;
        }
        expect(e.hashMany(new Uint8Array(0), new Uint8Array(0)).length).toBe(0);
      });

      it("refuses inputs at or above p in x and in y, naming the index", () => {
        const e = engine();
        for (const bad of [P, P + 1n, 2n ** 256n - 1n]) {
          const good = pack([1n, 2n, 3n, 4n, 5n, 6n]);
          const withBad = good.slice();
          withBad.set(be32(bad), 5 * 32);
          expect(() => e.hashMany(withBad, good)).toThrow(/x\[5\] is not below the field prime/);
          expect(() => e.hashMany(good, withBad)).toThrow(/y\[5\] is not below the field prime/);
          expect(() => e.hashMany(be32(bad), be32(0n))).toThrow(RangeError);
          expect(() => e.hashMany(be32(0n), be32(bad))).toThrow(/y\[0\]/);
        }
        expect(() => e.hashMany(new Uint8Array(32), new Uint8Array(64))).toThrow(/multiples of 32/);
        expect(() => e.hashMany(new Uint8Array(31), new Uint8Array(31))).toThrow(/multiples of 32/);
      });
      it("hashes one-sided pairs (hashConst) as hashMany does the repeated constant, on either side", () => {
        const e = engine();
        const reference = new NativeEngine(addon!, "portable");
        const constants = [
          0n,
          1n,
          P - 1n,
          2n ** 248n,
          2n ** 251n - 1n,
          BigInt("0x" + hex(ys.subarray(0, 32))),
        ];
        let start = 0;
        for (const c of constants) {
          for (const size of [1, 5, 6, 7, 17, 63, 64, 65, 1023, 1025, 3001]) {
            const vs = xs.subarray(start * 32, (start + size) * 32);
            start += size;
            const repeated = pack(Array.from({ length: size }, () => c));
            const asY = e.hashConst(vs, be32(c), true);
            const asX = e.hashConst(vs, be32(c), false);
            expect(Buffer.compare(asY, reference.hashMany(vs, repeated))).toBe(0);
            expect(Buffer.compare(asX, reference.hashMany(repeated, vs))).toBe(0);
          }
        }
        // The chain of a lone leaf: H(v, E) checked against @scure/starknet directly.
        for (const v of EDGE) {
          expect(hex(e.hashConst(be32(v), be32(12345n), true))).toBe(scureHash(v, 12345n));
          expect(hex(e.hashConst(be32(v), be32(12345n), false))).toBe(scureHash(12345n, v));
        }
        expect(e.hashConst(new Uint8Array(0), be32(1n), true).length).toBe(0);
      });

      it("refuses one-sided inputs at or above p, naming the index or the constant", () => {
        const e = engine();
        const vs = pack([1n, 2n, 3n, P, 5n]);
        expect(() => e.hashConst(vs, be32(7n), true)).toThrow(/x\[3\] is not below the field prime/);
        expect(() => e.hashConst(vs, be32(7n), false)).toThrow(/y\[3\] is not below the field prime/);
        expect(() => e.hashConst(pack([1n]), be32(P), true)).toThrow(/constant input is not below/);
        expect(() => e.hashConst(new Uint8Array(31), be32(1n), true)).toThrow(/32-byte/);
      });
    });

    describe("pool engine", () => {
      let pool: PoolEngine;
      beforeAll(() => {
        pool = PoolEngine.create({ threads: 2, threshold: 1000 })!;
      });
      afterAll(async () => {
        await pool?.close();
      });

      it("equals the single-thread engine on large and small calls", async () => {
        expect(pool.name).toBe("native-pool");
        const n = 20_001;
        const got = await pool.hashMany(xs.subarray(0, n * 32), ys.subarray(0, n * 32));
        expect(Buffer.compare(got, expected.subarray(0, n * 32))).toBe(0);
        const small = pool.hashMany(xs.subarray(0, 10 * 32), ys.subarray(0, 10 * 32));
        expect(small).toBeInstanceOf(Uint8Array); // below the threshold: synchronous
        expect(Buffer.compare(small as Uint8Array, expected.subarray(0, 320))).toBe(0);
      });

      it("runs concurrent calls and reports the caller's index for a bad input", async () => {
        // Rounds of different sizes: the shared buffers of one round are reused by the next.
        for (const size of [3000, 1200, 4500]) {
          const calls = [0, 1, 2, 3, 4, 5].map((k) => {
            const a = (k * 2000 + 100) * 32;
            const b = a + size * 32;
            return Promise.resolve(pool.hashMany(xs.subarray(a, b), ys.subarray(a, b))).then((got) =>
              expect(Buffer.compare(got, expected.subarray(a, b))).toBe(0),
            );
          });
          await Promise.all(calls);
        }
        const bad = ys.slice(0, 5000 * 32);
        bad.set(be32(P), 4321 * 32);
        await expect(async () => pool.hashMany(xs.subarray(0, 5000 * 32), bad)).rejects.toThrow(/y\[4321\]/);
      });

      it("spreads one-sided pairs too, naming a bad value's index in the caller's array", async () => {
        const n = 20_001;
        const vs = xs.subarray(0, n * 32);
        const c = ys.subarray(0, 32);
        const local = new NativeEngine(addon!);
        for (const side of [true, false]) {
          const got = await pool.hashConst(vs, c, side);
          expect(Buffer.compare(got, local.hashConst(vs, c, side))).toBe(0);
        }
        const bad = vs.slice();
        bad.set(be32(P), 17_000 * 32);
        await expect(async () => pool.hashConst(bad, c, false)).rejects.toThrow(/y\[17000\]/);
        await expect(async () => pool.hashConst(vs, be32(P), true)).rejects.toThrow(/constant/);
      });

      it("gives engines without hashConst the same one-sided results through hashMany", async () => {
        const vs = xs.subarray(0, 40 * 32);
        const c = ys.subarray(0, 32);
        const local = new NativeEngine(addon!);
        for (const side of [true, false]) {
          const viaWasm = await hashWithConstant(new WasmEngine(), vs, c, side);
          expect(Buffer.compare(viaWasm, local.hashConst(vs, c, side))).toBe(0);
        }
      });

      it("works with the pool default size and closes cleanly", async () => {
        const p = PoolEngine.create()!;
        expect(p.threads).toBeGreaterThanOrEqual(1);
        const got = await p.hashMany(xs.subarray(0, 9000 * 32), ys.subarray(0, 9000 * 32));
        expect(Buffer.compare(got, expected.subarray(0, 9000 * 32))).toBe(0);
        await p.close();
        expect(() => p.hashMany(xs.subarray(0, 32), ys.subarray(0, 32))).toThrow(/closed/);
      });
    });

    describe("engine selection", () => {
      it("auto picks native; the name given wins; explicit native fails when the addon is missing", () => {
        const warnings: string[] = [];
        const warn = (m: string) => warnings.push(m);
        expect(createEngine("auto", { warn }).name).toBe("native");
        expect(createEngine(" wasm ", { warn }).name).toBe("wasm");
        expect(createEngine("js").name).toBe("js");
        expect(createEngine("auto", { threads: 2 }).name).toBe("native-pool");
        expect((createEngine("native", { kernel: "portable" }) as NativeEngine).kernel).toBe("portable");
        expect(() => createEngine("fast")).toThrow(/DACD_HASH_ENGINE, hash_engine\) must be one of/);
        expect(warnings).toEqual([]);

        useNativeAddon(path.join(here, "no-such-dir", "dacd_native.node"));
        try {
          expect(loadNativeEngine()).toBeNull();
          expect(PoolEngine.create()).toBeNull();
          const e = createEngine("auto", { warn });
          expect(e.name).toBe("wasm");
          expect(warnings).toHaveLength(1);
          expect(warnings[0]).toMatch(/falling back to the WASM engine/);
          expect(() => createEngine("native", { warn })).toThrow(/native Pedersen engine requested/);
        } finally {
          useNativeAddon(undefined);
        }
      });
    });
  },
);
