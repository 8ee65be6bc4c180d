import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";

/**
 * The child side of bench/launcher.ts: reads requests as JSON lines on stdin, starts each command
 * with this node binary, answers with its pid and, once it exits, its exit code and stderr. Ends
 * with its stdin (its parent gone).
 */
const children = new Map<number, ChildProcess>();
const answer = (v: object): void => void process.stdout.write(JSON.stringify(v) + "\n");

for await (const line of createInterface({ input: process.stdin })) {
  const req = JSON.parse(line) as { op: "run"; id: number; args: string[] } | { op: "kill"; pid: number };
  if (req.op === "kill") {
    children.get(req.pid)?.kill("SIGTERM");
    continue;
  }
  const child = spawn(process.execPath, req.args, { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
  child.once("error", (err) => answer({ id: req.id, exit: -1, stderr: err.message }));
  child.once("spawn", () => {
    children.set(child.pid!, child);
    answer({ id: req.id, pid: child.pid });
  });
  child.once("close", (code) => {
    children.delete(child.pid!);
    answer({ id: req.id, exit: code, stderr });
  });
}
for (const child of children.values()) child.kill("SIGTERM");
