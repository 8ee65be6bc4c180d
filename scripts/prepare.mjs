#!/usr/bin/env node
/* global process, console */
// npm's "prepare" script, run by `npm ci`/`npm install` in a checkout: compiles dist/ there so that
// `npx dacd` works straight after `npm ci`. It needs TypeScript, a devDependency, so where the
// devDependencies are not installed (`npm ci --omit=dev`) it says so in one line and succeeds
// instead of failing the install on `tsc: not found`. `npm pack` and `npm publish` build in
// "prepack" (a clean build), so this does nothing for them.
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

if (process.env.npm_command === "pack" || process.env.npm_command === "publish") process.exit(0);

let tsc;
try {
  tsc = createRequire(path.join(root, "package.json")).resolve("typescript/bin/tsc");
} catch {
  console.log(
    "dacd: TypeScript is not installed (devDependencies omitted), so dist/ was not built here; " +
      "install dacd from its packed tarball (npm pack), which carries dist/",
  );
  process.exit(0);
}
const build = spawnSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], {
  cwd: root,
  stdio: "inherit",
});
process.exit(build.status ?? 1);
