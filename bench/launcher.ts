import { spawn } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";

/**
 * Starts commands for the bench from a small process of its own, started while the bench is still
 * small. A process that forks (child_process.spawn) marks all its memory copy-on-write, and every
 * page it writes afterwards costs it a page fault, even once the child has exec'd: in a bench
 * holding a store's caches (~1 GiB), a batch right after a spawn runs much slower for that reason
 * alone. A daemon's operator starts `dacd dump` from a shell, never from the daemon, so the bench
 * must not fork either.
 */
export interface Launched {
  readonly pid: number;
  /** Resolves when the command has exited, with its exit code and what it wrote to stderr. */
  readonly exited: Promise<{ code: number | null; stderr: string }>;
  kill(): void;
}

export interface Launcher {
  /** Runs node with `args` (e.g. a script and its arguments); resolves once it is started. */
  run(args: readonly string[]): Promise<Launched>;
}

export function startLauncher(): Launcher {
  const proc = spawn(process.execPath, [join(import.meta.dirname, "launcher-process.js")], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  // Neither the launcher nor its pipes keep the bench alive; it ends with its stdin.
  proc.unref();
  (proc.stdout as unknown as { unref(): void }).unref();
  (proc.stdin as unknown as { unref(): void }).unref();
  const started = new Map<number, (pid: number) => void>();
  const ended = new Map<number, (v: { code: number | null; stderr: string }) => void>();
  const failed = new Map<number, (err: Error) => void>();
  void (async () => {
    for await (const line of createInterface({ input: proc.stdout })) {
      const msg = JSON.parse(line) as { id: number; pid?: number; exit?: number | null; stderr?: string };
      if (msg.pid !== undefined) started.get(msg.id)?.(msg.pid);
      else if (started.has(msg.id))
        failed.get(msg.id)?.(new Error(msg.stderr ?? "the command did not start"));
      else ended.get(msg.id)?.({ code: msg.exit ?? null, stderr: msg.stderr ?? "" });
      if (msg.pid === undefined) {
        started.delete(msg.id);
        failed.delete(msg.id);
        ended.delete(msg.id);
      }
    }
  })();
  let next = 0;
  return {
    async run(args) {
      const id = next++;
      const exited = new Promise<{ code: number | null; stderr: string }>((resolve) =>
        ended.set(id, resolve),
      );
      const pid = await new Promise<number>((resolve, reject) => {
        started.set(id, (p) => {
          started.delete(id);
          failed.delete(id);
          resolve(p);
        });
        failed.set(id, reject);
        proc.stdin!.write(JSON.stringify({ op: "run", id, args }) + "\n");
      });
      return { pid, exited, kill: () => void proc.stdin!.write(JSON.stringify({ op: "kill", pid }) + "\n") };
    },
  };
}
