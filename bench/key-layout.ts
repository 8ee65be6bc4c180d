import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ClassicLevel } from "../src/storage/classic-level.js";
import type { LevelTuning } from "../src/storage/level-store.js";

/**
 * `node dist/bench/key-layout.js [--records N] [--batches B] [--block K] [--dir D] [--level JSON]`:
 * LevelDB alone, under the store's key layout and under keys led by the batch number, with a
 * W-spot batch's shape: 38,000 lookups of older records in 12 rounds (a tree's levels, each split
 * in two getMany calls as the store does), then 171,000 new records in key order, one fsynced
 * write and the memtable retire (level-store.ts). The stores start from N records written in key order (a
 * bulk load) and take the same records; their batches run in blocks of K, the layouts taking
 * turns, each block in a fresh open of its store so that the CPU time (the process's, LevelDB's
 * threads included) and `leveldb.stats`' writes (memtable flushes and compactions) of a block stay
 * its own. Prints the medians and the ratios.
 *
 * - hash-led: `0x01 ‖ hash` → a 64-byte record (the store's layout: content-addressed nodes), the
 *   retire's key a meta record (`0x04 ‖ name`);
 * - batch-led, meta above: `0x00 ‖ u32 batch ‖ 0x01 ‖ hash` → a 72-byte record (each child
 *   reference carrying the batch that wrote it): every batch's keys sort above all older ones;
 *   the retire's key stays the meta record, so each flushed table spans up to it;
 * - batch-led, meta in the batch's range: the same, the retire's key `0x00 ‖ u32 batch ‖ 0xff`, so
 *   flushed tables do not overlap at all.
 */
function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const RECORDS = arg("--records", 6_000_000);
const BATCHES = arg("--batches", 30);
const BLOCK = arg("--block", 5);
const WRITES = 171_000;
const READS = 38_000;
const ROUNDS = 12;
const PREFILL_CHUNK = 500_000;

type Db = ClassicLevel<Uint8Array, Uint8Array>;

interface Layout {
  readonly name: string;
  readonly valueBytes: number;
  key(hash: Uint8Array, at: number, batch: number): Uint8Array;
  /** The key each batch's memtable retire deletes (a meta record in the store). */
  retireKey(batch: number): Uint8Array;
}

const META_KEY = Uint8Array.of(0x04, 0x6d);

function batchLedKey(hash: Uint8Array, at: number, batch: number): Uint8Array {
  const k = new Uint8Array(38);
  new DataView(k.buffer).setUint32(1, batch);
  k[5] = 0x01;
  k.set(hash.subarray(at, at + 32), 6);
  return k;
}

const hashLed: Layout = {
  name: "hash-led (the store's)",
  valueBytes: 64,
  key(hash, at) {
    const k = new Uint8Array(33);
    k[0] = 0x01;
    k.set(hash.subarray(at, at + 32), 1);
    return k;
  },
  retireKey: () => META_KEY,
};

const batchLed: Layout = {
  name: "batch-led, meta above",
  valueBytes: 72,
  key: batchLedKey,
  retireKey: () => META_KEY,
};

/** Batch-led, and the batch's other records under its own number too (`0x00 ‖ u32 batch ‖ 0xff`). */
const batchLedWhole: Layout = {
  name: "batch-led, meta in the batch's range",
  valueBytes: 72,
  key: batchLedKey,
  retireKey(batch) {
    const k = new Uint8Array(6);
    new DataView(k.buffer).setUint32(1, batch);
    k[5] = 0xff;
    return k;
  },
};

/**
 * Random hashes below 2^251, as Pedersen hashes are; with `part` of `parts`, within that share of
 * the range (a load's chunks, so that loading them one after another writes in key order).
 */
function randomHashes(count: number, part = 0, parts = 1): Uint8Array {
  const h = new Uint8Array(randomBytes(count * 32));
  const span = 0x800 / parts;
  for (let i = 0; i < count; i++) {
    const top = Math.floor(part * span + ((h[i * 32]! << 8) | h[i * 32 + 1]!) * (span / 0x10000));
    h[i * 32] = top >> 8;
    h[i * 32 + 1] = top & 0xff;
  }
  return h;
}

/** The indices of n hashes in their keys' order (the hash decides it within one batch). */
function hashOrder(hashes: Uint8Array, n: number): number[] {
  const ids = Array.from({ length: n }, (_, i) => i);
  const view = Buffer.from(hashes.buffer, hashes.byteOffset, hashes.byteLength);
  return ids.sort((a, b) => view.compare(view, a * 32, a * 32 + 32, b * 32, b * 32 + 32));
}

interface Written {
  readonly hashes: Uint8Array;
  readonly batch: number;
}

/** One batch's work, the same for both layouts: which older records it reads, what it writes. */
interface BatchPlan {
  readonly batch: number;
  readonly reads: { set: number; index: number }[][];
  readonly writes: Uint8Array;
  readonly order: number[];
}

function planBatch(batch: number, recordsIn: readonly number[]): BatchPlan {
  const total = recordsIn.reduce((a, b) => a + b, 0);
  const reads: { set: number; index: number }[][] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const round: { set: number; index: number }[] = [];
    for (let i = 0; i < READS / ROUNDS; i++) {
      let pick = Math.floor(Math.random() * total);
      let set = 0;
      while (pick >= recordsIn[set]!) pick -= recordsIn[set++]!;
      round.push({ set, index: pick });
    }
    reads.push(round);
  }
  const writes = randomHashes(WRITES);
  return { batch, reads, writes, order: hashOrder(writes, WRITES) };
}

/** A batch's keys under one layout, made before the batch is timed. */
interface BatchKeys {
  readonly rounds: Uint8Array[][];
  readonly writes: Uint8Array[];
}

function batchKeys(layout: Layout, plan: BatchPlan, written: readonly Written[]): BatchKeys {
  const rounds = plan.reads.map((round) =>
    round
      .map(({ set, index }) => layout.key(written[set]!.hashes, index * 32, written[set]!.batch))
      .sort((a, b) => Buffer.compare(a, b)),
  );
  return { rounds, writes: plan.order.map((i) => layout.key(plan.writes, i * 32, plan.batch)) };
}

async function write(db: Db, layout: Layout, keys: readonly Uint8Array[], sync: boolean): Promise<void> {
  const value = new Uint8Array(randomBytes(layout.valueBytes));
  const chained = db.batch();
  for (const key of keys) chained.put(key, value);
  await chained.write({ sync });
}

async function runBatch(db: Db, layout: Layout, keys: BatchKeys, batch: number): Promise<void> {
  for (const round of keys.rounds) {
    const half = round.length >> 1;
    const found = await Promise.all([db.getMany(round.slice(0, half)), db.getMany(round.slice(half))]);
    for (const part of found)
      for (const record of part) if (!record) throw new Error(`${layout.name}: a written record is missing`);
  }
  await write(db, layout, keys.writes, true);
  await db.del(layout.retireKey(batch));
}

/** Megabytes LevelDB's compactions wrote so far (the Write(MB) column of leveldb.stats). */
function compactionMb(db: Db): number {
  const stats = db.getProperty("leveldb.stats");
  let mb = 0;
  for (const line of stats.split("\n")) {
    const cols = line.trim().split(/\s+/);
    if (/^\d+$/.test(cols[0] ?? "") && cols.length >= 6) mb += Number(cols[5]);
  }
  return mb;
}

const levelArg = process.argv.indexOf("--level");
/** LevelDB's options for every store, e.g. `'{"blockRestartInterval":4}'` (LevelTuning's names). */
const tuning = levelArg >= 0 ? (JSON.parse(process.argv[levelArg + 1]!) as LevelTuning) : {};

const open = (dir: string): Db =>
  new ClassicLevel<Uint8Array, Uint8Array>(dir, {
    keyEncoding: "view",
    valueEncoding: "view",
    compression: false,
    maxOpenFiles: 5000,
    ...tuning,
  });

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

async function main(): Promise<void> {
  const dirArg = process.argv.indexOf("--dir");
  const root = await mkdtemp(join(dirArg >= 0 ? process.argv[dirArg + 1]! : tmpdir(), "dacd-key-layout-"));
  const layouts = [hashLed, batchLed, batchLedWhole];
  const written: Written[] = [];
  const recordsIn: number[] = [];
  try {
    console.log(
      `LevelDB, three key layouts: ${RECORDS.toLocaleString("en")} records loaded, ${BATCHES} batches in blocks of ${BLOCK}`,
    );
    const chunks = Math.ceil(RECORDS / PREFILL_CHUNK);
    for (let c = 0; c < chunks; c++) {
      const n = Math.min(PREFILL_CHUNK, RECORDS - c * PREFILL_CHUNK);
      written.push({ hashes: randomHashes(n, c, chunks), batch: 0 });
      recordsIn.push(n);
    }
    for (const layout of layouts) {
      const db = open(join(root, layout.name));
      await db.open();
      const t0 = performance.now();
      // In key order, as a bulk load writes: the chunks hold ascending shares of the range.
      for (const { hashes } of written) {
        const order = hashOrder(hashes, hashes.length / 32);
        await write(
          db,
          layout,
          order.map((i) => layout.key(hashes, i * 32, 0)),
          false,
        );
      }
      await db.close();
      console.log(`${layout.name}: loaded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    }
    const wall = new Map(layouts.map((l) => [l, [] as number[]]));
    const cpu = new Map(layouts.map((l) => [l, 0]));
    const compacted = new Map(layouts.map((l) => [l, 0]));
    for (let first = 1; first <= BATCHES; first += BLOCK) {
      const plans: BatchPlan[] = [];
      for (let b = first; b < Math.min(first + BLOCK, BATCHES + 1); b++) plans.push(planBatch(b, recordsIn));
      // Which layout goes first rotates by block.
      const turn = Math.floor(first / BLOCK) % layouts.length;
      const order = [...layouts.slice(turn), ...layouts.slice(0, turn)];
      for (const layout of order) {
        const keys = plans.map((plan) => batchKeys(layout, plan, written));
        const db = open(join(root, layout.name));
        await db.open();
        const before = compactionMb(db);
        const c0 = process.cpuUsage();
        for (const [k, batch] of keys.entries()) {
          const t = performance.now();
          await runBatch(db, layout, batch, plans[k]!.batch);
          wall.get(layout)!.push(performance.now() - t);
        }
        const mb = compactionMb(db) - before;
        await db.close();
        const used = process.cpuUsage(c0);
        cpu.set(layout, cpu.get(layout)! + (used.user + used.system) / 1e6);
        compacted.set(layout, compacted.get(layout)! + mb);
      }
      for (const plan of plans) {
        written.push({ hashes: plan.writes, batch: plan.batch });
        recordsIn.push(WRITES);
      }
    }
    console.log(
      "| keys | median batch ms | CPU s per batch (LevelDB's threads too) | MB written by flushes and compactions per batch |",
    );
    console.log("|---|---|---|---|");
    for (const layout of layouts)
      console.log(
        `| ${layout.name} | ${median(wall.get(layout)!).toFixed(0)} | ${(cpu.get(layout)! / BATCHES).toFixed(2)} | ${(compacted.get(layout)! / BATCHES).toFixed(1)} |`,
      );
    for (const layout of [batchLed, batchLedWhole]) {
      const ratio = median(wall.get(layout)!) / median(wall.get(hashLed)!);
      const cpuRatio = cpu.get(layout)! / cpu.get(hashLed)!;
      console.log(
        `${layout.name} / hash-led: ${ratio.toFixed(2)}× the batch time, ${cpuRatio.toFixed(2)}× the CPU`,
      );
    }
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

await main();
