import { randomBytes } from "node:crypto";
import { keyOrder } from "../src/storage/keys.js";

/**
 * `node dist/bench/key-order.js [--rounds N]`: keyOrder (a radix sort of the hashes' first 24 bits
 * from 1,024 hashes on) against the typed-array sort of those prefixes it replaced, on the same
 * packed random hashes, alternated round by round, for the sizes a W-spot batch sorts: its ~170k
 * puts, a tree level's ~38k reads, and small levels. Prints the median milliseconds and the ratio.
 */
function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const rounds = arg("--rounds", 21);
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

/** The replaced order: 24 bits of hash and 29 of index in one exact double, sorted as numbers. */
function floatSortOrder(hashes: Uint8Array): Uint32Array {
  const n = hashes.length / 32;
  const keys = new Float64Array(n);
  for (let i = 0; i < n; i++)
    keys[i] = (hashes[i * 32]! * 65536 + hashes[i * 32 + 1]! * 256 + hashes[i * 32 + 2]!) * 2 ** 29 + i;
  keys.sort();
  const order = new Uint32Array(n);
  for (let k = 0; k < n; k++) order[k] = keys[k]! % 2 ** 29;
  return order;
}

const time = (f: () => Uint32Array): [number, Uint32Array] => {
  const t0 = process.hrtime.bigint();
  const out = f();
  return [Number(process.hrtime.bigint() - t0) / 1e6, out];
};

console.log(`keyOrder against the float sort it replaced, median ms of ${rounds} rounds`);
console.log("| hashes | keyOrder | float sort | ratio |\n|---|---|---|---|");
for (const count of [170_000, 38_000, 2_000, 500]) {
  const radix: number[] = [];
  const float: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const hashes = new Uint8Array(randomBytes(count * 32));
    const [a, byRadix] = time(() => keyOrder(hashes));
    const [b, byFloat] = time(() => floatSortOrder(hashes));
    // Both are stable orders of the same prefixes, so they must agree entry for entry.
    for (let k = 0; k < count; k++)
      if (byRadix[k] !== byFloat[k]) throw new Error(`the orders differ at ${k} in round ${r}`);
    radix.push(a);
    float.push(b);
  }
  const [mr, mf] = [median(radix), median(float)];
  console.log(
    `| ${count.toLocaleString("en")} | ${mr.toFixed(3)} | ${mf.toFixed(3)} | ${(mr / mf).toFixed(3)}× |`,
  );
}
