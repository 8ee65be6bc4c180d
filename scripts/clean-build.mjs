#!/usr/bin/env node
/* global process */
// npm's "prepack" script: a clean build of dist/ before `npm pack`/`npm publish`, so the tarball
// carries exactly what the current sources compile to (no output of a source since deleted), with
// the escape page's bundle.
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
rmSync(path.join(root, "dist"), { recursive: true, force: true });
const tsc = createRequire(path.join(root, "package.json")).resolve("typescript/bin/tsc");
const build = spawnSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], {
  cwd: root,
  stdio: "inherit",
});
if (build.status !== 0) process.exit(build.status ?? 1);
// The escape page's browser bundle (dist/page/escape.js), which the package ships.
const page = spawnSync(process.execPath, [path.join(root, "scripts", "build-page.mjs")], {
  cwd: root,
  stdio: "inherit",
});
process.exit(page.status ?? 1);
