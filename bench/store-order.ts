import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { keyOrder, treeKey, TreeKind } from "../src/storage/keys.js";
import { levelDb } from "../src/storage/level-db.js";
import { LevelStore } from "../src/storage/level-store.js";

/**
 * `node dist/bench/store-order.js [--records N] [--batch N] [--reads N] [--rounds N]`: what the order
 * of a batch's keys costs LevelDB. A store is filled with N random node records (as a bulk load
 * would), then each round commits a batch of new random nodes and looks up random stored ones, once
 * in the order the trees produce them (random to LevelDB) and once in key order (keyOrder), one
 * after the other. Prints the median of each and their ratio. Both orders hold the same records,
 * so only LevelDB's work differs. As in a store, the load's records are keyed under its gen (1) and
 * each round's commits under a gen of their own (keys.ts).
 */
function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const records = arg("--records", 2_000_000);
const batchSize = arg("--batch", 170_000);
const readCount = arg("--reads", 50_000);
const rounds = arg("--rounds", 5);

const random = (n: number): Uint8Array[] => Array.from({ length: n }, () => new Uint8Array(randomBytes(32)));
/** The gen the bulk-loaded records are keyed under. */
const LOAD_GEN = 1;
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "dacd-store-order-"));
  const store = await LevelStore.open(dir);
  // The key order is measured on LevelDB itself, below LevelStore's own writes.
  const db = levelDb(store);
  try {
    const stored: Uint8Array[] = [];
    for (let done = 0; done < records; done += 100_000) {
      const batch = db.batch();
      for (const h of random(Math.min(100_000, records - done))) {
        batch.put(treeKey(LOAD_GEN, TreeKind.node, h), new Uint8Array(72).fill(h[0]!));
        stored.push(h);
      }
      await batch.write();
    }
    await store.compact();
    const times = {
      commitRandom: [] as number[],
      commitSorted: [] as number[],
      readRandom: [] as number[],
      readSorted: [] as number[],
    };
    const timed = async (into: number[], fn: () => Promise<unknown>): Promise<void> => {
      const t = performance.now();
      await fn();
      into.push(performance.now() - t);
    };
    const record = new Uint8Array(72).fill(7);
    let gen = LOAD_GEN;
    for (let r = 0; r < rounds; r++) {
      for (const sorted of [false, true]) {
        const hashes = random(batchSize);
        await timed(sorted ? times.commitSorted : times.commitRandom, async () => {
          const batch = db.batch();
          const order = sorted ? keyOrder(hashes) : hashes.map((_, i) => i);
          const commitGen = ++gen;
          for (const i of order) batch.put(treeKey(commitGen, TreeKind.node, hashes[i]!), record);
          await batch.write({ sync: true });
        });
        const picks = Array.from(
          { length: readCount },
          () => stored[Math.floor(Math.random() * stored.length)]!,
        );
        await timed(sorted ? times.readSorted : times.readRandom, async () => {
          const order = sorted ? keyOrder(picks) : picks.map((_, i) => i);
          const keys = Array.from(order, (i) => treeKey(LOAD_GEN, TreeKind.node, picks[i]!));
          const got = await db.getMany(keys);
          if (got.some((v) => v === undefined)) throw new Error("a stored record was not found");
        });
      }
    }
    const row = (what: string, a: number[], b: number[]): string =>
      `| ${what} | ${median(a).toFixed(0)} | ${median(b).toFixed(0)} | ${(median(a) / median(b)).toFixed(2)}× |`;
    console.log(`store of ${records} records; medians of ${rounds} rounds, ms`);
    console.log("| operation | random order | key order | ratio |");
    console.log("|---|---|---|---|");
    console.log(row(`commit ${batchSize} records (fsync)`, times.commitRandom, times.commitSorted));
    console.log(row(`getMany ${readCount} stored records`, times.readRandom, times.readSorted));
  } finally {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
