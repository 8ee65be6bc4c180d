#!/usr/bin/env node
// Writes dist/build-info.json ({ "commit": "<sha>" }) after the TypeScript build, so that an
// installed copy (no .git next to it) can still say which commit it was built from. Outside a
// git checkout (a build from the npm tarball) the commit is left out: `dacd --version` then says
// "commit unknown" rather than guessing.
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
let commit;
try {
  commit = execFileSync("git", ["-C", root, "rev-parse", "HEAD"], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"],
    timeout: 5000,
  }).trim();
  if (!/^[0-9a-f]{40}$/.test(commit)) commit = undefined;
} catch {
  commit = undefined;
}
mkdirSync(path.join(root, "dist"), { recursive: true });
writeFileSync(
  path.join(root, "dist", "build-info.json"),
  JSON.stringify(
    commit ? { commit, built_at: new Date().toISOString() } : { built_at: new Date().toISOString() },
  ) + "\n",
);
