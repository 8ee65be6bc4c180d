import { randomBytes } from "node:crypto";
import { keyOrder, keyOrderBySort } from "../src/storage/keys.js";

/**
 * `node dist/bench/key-order.js [--rounds N]`: keyOrder (a radix sort of the hashes' first 24 bits
 * from 1,024 hashes on) against keyOrderBySort (the typed-array sort of those prefixes that it
 * replaced, and keeps below 1,024), on the same packed random hashes, alternated round by round,
 * for the sizes a W-spot batch sorts: its ~170k puts, a tree level's ~38k reads, and small levels.
 * Prints the median milliseconds and the ratio.
 */
function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const rounds = arg("--rounds", 21);
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

const time = (f: () => Uint32Array): [number, Uint32Array] => {
  const t0 = process.hrtime.bigint();
  const out = f();
  return [Number(process.hrtime.bigint() - t0) / 1e6, out];
};

console.log(`keyOrder against the double sort it replaced, median ms of ${rounds} rounds`);
console.log("| hashes | keyOrder | double sort | ratio |\n|---|---|---|---|");
for (const count of [170_000, 38_000, 2_000, 500]) {
  const radix: number[] = [];
  const sorted: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const hashes = new Uint8Array(randomBytes(count * 32));
    const radixRun = (): [number, Uint32Array] => time(() => keyOrder(hashes));
    const sortRun = (): [number, Uint32Array] => time(() => keyOrderBySort(hashes));
    // Which goes first alternates too: the first call of a round pays for touching the new hashes.
    let a: number, byRadix: Uint32Array, b: number, bySort: Uint32Array;
    if (r % 2 === 0) [[a, byRadix], [b, bySort]] = [radixRun(), sortRun()];
    else [[b, bySort], [a, byRadix]] = [sortRun(), radixRun()];
    // Both are stable orders of the same prefixes, so they must agree entry for entry.
    for (let k = 0; k < count; k++)
      if (byRadix[k] !== bySort[k]) throw new Error(`the orders differ at ${k} in round ${r}`);
    radix.push(a);
    sorted.push(b);
  }
  const [mr, mf] = [median(radix), median(sorted)];
  console.log(
    `| ${count.toLocaleString("en")} | ${mr.toFixed(3)} | ${mf.toFixed(3)} | ${(mr / mf).toFixed(3)}× |`,
  );
}
