import { spawn, type ChildProcess } from "node:child_process";
import type { Readable, Writable } from "node:stream";
import { runtimeSettings } from "../config/runtime-settings.js";
import { DacdError } from "../errors.js";

/**
 * bzip2 through the system's `bzip2` program (libbz2, the reference implementation of the format),
 * in a child process: it decompresses or compresses on its own core while dacd parses and hashes,
 * and npm has no maintained bzip2 compressor. The archive's name is given only for messages.
 */

export interface Bzip2Process {
  /** Data in: compressed (decompress) or plain (compress). */
  readonly input: Writable;
  /** Data out. */
  readonly output: Readable;
  /** Resolves when bzip2 exited 0; rejects with one line naming the archive otherwise. */
  readonly done: Promise<void>;
  /** Stops it (on an error elsewhere). */
  kill(): void;
}

/** The bzip2 program (DACD_BZIP2, else bzip2 on PATH). */
const bzip2Program = (): string => runtimeSettings().bzip2;

function run(args: string[], archive: string, what: string): Bzip2Process {
  let child: ChildProcess;
  try {
    child = spawn(bzip2Program(), args, { stdio: ["pipe", "pipe", "pipe"] });
  } catch (err) {
    throw cannotRun(err);
  }
  let stderr = "";
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (s: string) => {
    if (stderr.length < 2000) stderr += s;
  });
  // A write after bzip2 stopped reading (it failed) is reported by `done`, not as an EPIPE.
  child.stdin!.on("error", () => undefined);
  const done = new Promise<void>((resolve, reject) => {
    child.once("error", (err) => reject(cannotRun(err)));
    child.once("close", (code, signal) => {
      if (code === 0) return resolve();
      // Its first line is the reason (the rest is advice about bzip2recover).
      const why = stderr
        .trim()
        .split("\n")[0]
        ?.replace(/^\S*bzip2: /, "")
        .replace(/;$/, "");
      reject(new DacdError("BAD_INPUT", `${archive}: ${what} failed: ${why || `exit ${code ?? signal}`}`));
    });
  });
  done.catch(() => undefined); // observed by the caller
  return {
    input: child.stdin!,
    output: child.stdout!,
    done,
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    },
  };
}

function cannotRun(err: unknown): DacdError {
  return new DacdError(
    "CONFIG",
    `cannot run ${bzip2Program()} (the system's bzip2, e.g. Debian's bzip2 package): ${(err as Error).message}`,
  );
}

/** `bzip2 -dc`: write the archive's bytes to `input`, read the tar from `output`. */
export function bunzip2(archive: string): Bzip2Process {
  return run(["-dc"], archive, "bzip2 decompression");
}

/** `bzip2 -c`: write the tar to `input`, read the archive's bytes from `output`. */
export function bzip2(archive: string): Bzip2Process {
  return run(["-c", "-9"], archive, "bzip2 compression");
}
