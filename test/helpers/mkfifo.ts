import { execFileSync } from "node:child_process";

/** Creates a named pipe (Node has no mkfifo of its own). */
export function mkfifo(path: string): void {
  execFileSync("mkfifo", [path]);
}
