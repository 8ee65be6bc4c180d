import { execFile } from "node:child_process";
import { join } from "node:path";

export const BIN = join(import.meta.dirname, "..", "..", "bin", "dacd.js");

/**
 * Runs `dacd …` (dist/) without blocking this process's event loop, so that a daemon started
 * in-process by the test can answer it over its control socket.
 */
export function dacdAsync(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { env: { ...process.env, DACD_HASH_ENGINE: "wasm", ...env }, maxBuffer: 64 << 20 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
        resolve({ code, out: stdout, err: stderr });
      },
    );
  });
}
