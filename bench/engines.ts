import os from "node:os";
import { pathToFileURL } from "node:url";
import type { HashEngine } from "../src/verifier/hash/engine.js";
import { JsEngine } from "../src/verifier/hash/js-engine.js";
import { loadNativePedersen, NativeEngine } from "../src/verifier/hash/native-engine.js";
import { PoolEngine } from "../src/verifier/hash/pool-engine.js";
import { WasmEngine } from "../src/verifier/hash/wasm-engine.js";
import { packedFieldElements } from "./field-elements.js";

export interface EngineBenchRow {
  name: string;
  kernel: string;
  threads: number;
  us_per_hash: number;
  hashes_per_s: number;
}

/** Best wall time over `reps` runs of `fn`, in seconds. */
async function best(reps: number, fn: () => unknown): Promise<number> {
  let min = Infinity;
  for (let r = 0; r < reps; r++) {
    const t = process.hrtime.bigint();
    await fn();
    min = Math.min(min, Number(process.hrtime.bigint() - t) / 1e9);
  }
  return min;
}

function row(name: string, kernel: string, threads: number, seconds: number, n: number): EngineBenchRow {
  const us = (seconds / n) * 1e6;
  return {
    name,
    kernel,
    threads,
    us_per_hash: Math.round(us * 1000) / 1000,
    hashes_per_s: Math.round(n / seconds),
  };
}

async function measure(
  engine: HashEngine,
  xs: Uint8Array,
  ys: Uint8Array,
  reps: number,
  chunk = xs.length / 32,
): Promise<number> {
  const n = xs.length / 32;
  await engine.hashMany(xs.subarray(0, Math.min(n, 64) * 32), ys.subarray(0, Math.min(n, 64) * 32)); // warm up
  return best(reps, async () => {
    for (let i = 0; i < n; i += chunk) {
      const end = Math.min(n, i + chunk) * 32;
      await engine.hashMany(xs.subarray(i * 32, end), ys.subarray(i * 32, end));
    }
  });
}

/**
 * Measures every Pedersen engine in one run: JS (small sample), WASM, each native kernel on one
 * thread (large batches, one pair per call, and one-sided pairs), and the native worker pool on
 * all cores.
 */
export async function benchEngines(opts: { quick: boolean }): Promise<EngineBenchRow[]> {
  const q = opts.quick;
  const nNative = q ? 20_000 : 200_000;
  const xs = packedFieldElements(nNative, "bench-x");
  const ys = packedFieldElements(nNative, "bench-y");
  const rows: EngineBenchRow[] = [];
  const reps = q ? 2 : 3;

  const nJs = q ? 20 : 100;
  rows.push(
    row(
      "js",
      "-",
      1,
      await measure(new JsEngine(), xs.subarray(0, nJs * 32), ys.subarray(0, nJs * 32), 1),
      nJs,
    ),
  );

  const nWasm = q ? 1_000 : 5_000;
  const wasm = new WasmEngine();
  rows.push(
    row(
      "wasm",
      "-",
      1,
      await measure(wasm, xs.subarray(0, nWasm * 32), ys.subarray(0, nWasm * 32), reps),
      nWasm,
    ),
  );

  const addon = loadNativePedersen();
  if (addon) {
    // Each kernel's forms are timed once per round and the rounds alternate the kernels, keeping
    // each form's best round: this machine's speed drifts by ±25% over minutes, so consecutive
    // repetitions of one kernel could all fall in a slow spell that the next kernel escapes.
    const nOne = q ? 2_000 : 10_000;
    const c = ys.subarray(0, 32); // a lone leaf's chain: H(v, E[k]), one side constant (most of W-perp)
    const forms = addon.kernels().flatMap((kernel) => {
      const e = new NativeEngine(addon, kernel);
      e.hashConst(xs.subarray(0, 64 * 32), c, true); // warm up (the first call builds the tables)
      return [
        { name: "native", kernel, n: nNative, time: () => measure(e, xs, ys, 1) },
        {
          name: "native (1 pair/call)",
          kernel,
          n: nOne,
          time: () => measure(e, xs.subarray(0, nOne * 32), ys.subarray(0, nOne * 32), 1, 1),
        },
        {
          name: "native (one-sided)",
          kernel,
          n: nNative,
          time: () => best(1, () => e.hashConst(xs, c, true)),
        },
      ];
    });
    const fastest = forms.map(() => Infinity);
    for (let round = 0; round < (q ? 2 : 5); round++) {
      for (const [i, form] of forms.entries()) fastest[i] = Math.min(fastest[i]!, await form.time());
    }
    forms.forEach((f, i) => rows.push(row(f.name, f.kernel, 1, fastest[i]!, f.n)));
    const threads = os.availableParallelism();
    const pool = PoolEngine.create({ threads });
    if (pool) {
      try {
        rows.push(row("native-pool", pool.kernel, threads, await measure(pool, xs, ys, reps), nNative));
      } finally {
        await pool.close();
      }
    }
  }
  return rows;
}

function printTable(rows: EngineBenchRow[]): void {
  const head = ["engine", "kernel", "threads", "us/hash", "hashes/s"];
  const body = rows.map((r) => [
    r.name,
    r.kernel,
    String(r.threads),
    r.us_per_hash.toFixed(3),
    r.hashes_per_s.toLocaleString("en-US"),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  console.log(line(head));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const b of body) console.log(line(b));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const quick = process.argv.includes("--quick");
  benchEngines({ quick }).then(printTable, (err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
