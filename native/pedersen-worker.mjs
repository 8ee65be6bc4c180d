// Worker thread for the native Pedersen pool engine (src/verifier/hash/pool-engine.ts). Plain
// JavaScript next to the addon sources so the same file serves the TS sources under vitest and the
// compiled output under dist/. Each message names a slice of a SharedArrayBuffer: xs and ys (or the
// values and one constant, for one-sided pairs) and the place for the hashes; the addon (loaded
// once per process, its tables shared by all threads) writes the hashes in place.
import { createRequire } from "node:module";
import { parentPort, workerData } from "node:worker_threads";

const addon = createRequire(import.meta.url)(workerData.addonPath);

parentPort.on("message", (job) => {
  try {
    const bytes = job.n * 32;
    const u8 = new Uint8Array(job.sab);
    const out = u8.subarray(job.o, job.o + bytes);
    if (job.c === undefined) {
      addon.hashMany(u8.subarray(job.x, job.x + bytes), u8.subarray(job.y, job.y + bytes), out, job.kernel);
    } else {
      addon.hashConst(
        u8.subarray(job.x, job.x + bytes),
        u8.subarray(job.c, job.c + 32),
        job.cIsY,
        out,
        job.kernel,
      );
    }
    parentPort.postMessage({ id: job.id });
  } catch (err) {
    parentPort.postMessage({ id: job.id, error: err instanceof Error ? err.message : String(err) });
  }
});
