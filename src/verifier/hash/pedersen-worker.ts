/**
 * The worker thread of the native Pedersen pool engine (pool-engine.ts). Each message names a
 * slice of a SharedArrayBuffer: xs and ys (or the values and one constant, for one-sided pairs, or
 * a slice of chains to climb) and the place for the results; the addon (loaded once per process,
 * its tables shared by all threads) writes them in place.
 */
import { createRequire } from "node:module";
import { parentPort, workerData } from "node:worker_threads";
import type { NativePedersen } from "./native-engine.js";
import type { WorkerJob } from "./pool-engine.js";

const port = parentPort;
if (!port) throw new Error("pedersen-worker runs as a worker thread");
// The very file the pool's thread loaded, so both run the same build.
const addon = createRequire(import.meta.url)(
  (workerData as { addonPath: string }).addonPath,
) as NativePedersen;

/** A slice of a chain climb (ClimbSlice): job.n chains from the offsets given. */
function climb(u8: Uint8Array, job: WorkerJob): void {
  const c = job.climb!;
  const n = job.n;
  addon.climbChains(
    u8.subarray(c.starts, c.starts + n * 32),
    u8.subarray(c.paths, c.paths + n * 32),
    u8.subarray(c.from, c.from + n),
    u8.subarray(c.to, c.to + n),
    u8.subarray(c.empty, c.empty + c.emptyBytes),
    c.step,
    c.slots,
    u8.subarray(c.tops, c.tops + n * 32),
    u8.subarray(c.marks, c.marks + n * c.slots * 32),
    job.kernel,
  );
}

port.on("message", (job: WorkerJob) => {
  try {
    const bytes = job.n * 32;
    const u8 = new Uint8Array(job.sab);
    const out = u8.subarray(job.o, job.o + bytes);
    if (job.climb !== undefined) {
      climb(u8, job);
    } else if (job.c === undefined) {
      addon.hashMany(u8.subarray(job.x, job.x + bytes), u8.subarray(job.y, job.y + bytes), out, job.kernel);
    } else {
      addon.hashConst(
        u8.subarray(job.x, job.x + bytes),
        u8.subarray(job.c, job.c + 32),
        job.cIsY!,
        out,
        job.kernel,
      );
    }
    port.postMessage({ id: job.id });
  } catch (err) {
    port.postMessage({ id: job.id, error: err instanceof Error ? err.message : String(err) });
  }
});
