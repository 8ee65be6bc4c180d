import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pedersen } from "@scure/starknet";
import { describe, expect, it } from "vitest";
import { bigintToBytes32, bytesToBigint } from "../../src/util/bytes.js";
import { FIELD_PRIME } from "../../src/model/field.js";
import { JsEngine } from "../../src/verifier/hash/js-engine.js";
import { WasmEngine } from "../../src/verifier/hash/wasm-engine.js";
import { FIXTURES } from "../helpers/vectors.js";

/** The engines that need no build step, checked whether or not the native addon exists. */
const vectors = (
  JSON.parse(readFileSync(join(FIXTURES, "pedersen.json"), "utf8")) as {
    vectors: { x: string; y: string; hash: string }[];
  }
).vectors;

const pack = (vs: bigint[]): Uint8Array => {
  const out = new Uint8Array(vs.length * 32);
  vs.forEach((v, i) => out.set(bigintToBytes32(v), i * 32));
  return out;
};

describe.each([new WasmEngine(), new JsEngine()])("$name engine", (engine) => {
  it("reproduces every vector of pedersen.json in one batched call", async () => {
    const out = await engine.hashMany(
      pack(vectors.map((v) => BigInt(v.x))),
      pack(vectors.map((v) => BigInt(v.y))),
    );
    vectors.forEach((v, i) => expect(bytesToBigint(out, i * 32)).toBe(BigInt(v.hash)));
  });

  it("equals @scure/starknet on random inputs below the prime", async () => {
    const xs: bigint[] = [];
    const ys: bigint[] = [];
    for (let i = 0; i < 40; i++) {
      xs.push(bytesToBigint(crypto.getRandomValues(new Uint8Array(32))) % FIELD_PRIME);
      ys.push(bytesToBigint(crypto.getRandomValues(new Uint8Array(32))) % FIELD_PRIME);
    }
    const out = await engine.hashMany(pack(xs), pack(ys));
    xs.forEach((x, i) => expect(bytesToBigint(out, i * 32)).toBe(BigInt(pedersen(x, ys[i]!))));
  });

  it("refuses inputs at or above the field prime instead of reducing them", () => {
    expect(() => engine.hashMany(pack([FIELD_PRIME]), pack([1n]))).toThrow(
      /x\[0\] is not below the field prime/,
    );
    expect(() => engine.hashMany(pack([1n, 2n]), pack([3n, 2n ** 256n - 1n]))).toThrow(/y\[1\]/);
  });
});
