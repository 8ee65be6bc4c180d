#!/usr/bin/env node
/* global process, console */
// npm's "prepare" script, run by `npm ci`/`npm install` in a checkout: compiles dist/ there so that
// `npx dacd` works straight after `npm ci`. It needs TypeScript, a devDependency, so where the
// devDependencies are not installed (`npm ci --omit=dev`) it says so in one line and succeeds
// instead of failing the install on `tsc: not found`. `npm pack` and `npm publish` build in
// "prepack" (a clean build), so this does nothing for them.
//
// `npx dacd` in a checkout runs this again (npm exec installs the checkout as a package into its
// cache, which runs "prepare" with its output hidden): so a dist/ newer than every file it is built
// from is left as it is, and a build says first that it runs. `npm test` and `npm run test:e2e|system`
// build through it too (`npm run build:if-stale`), so a run after a run does not compile again.
import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

if (process.env.npm_command === "pack" || process.env.npm_command === "publish") process.exit(0);

/** The newest modification time among `p` and the files under it (0 when it does not exist). */
function newest(p) {
  let st;
  try {
    st = statSync(p);
  } catch {
    return 0;
  }
  if (!st.isDirectory()) return st.mtimeMs;
  let t = 0;
  for (const e of readdirSync(p)) t = Math.max(t, newest(path.join(p, e)));
  return t;
}

/**
 * tsc writes every output at each build: dist/ is current when its CLI and the page's bundle are
 * newer than every input.
 */
const built = Math.min(
  newest(path.join(root, "dist", "src", "cli", "main.js")),
  newest(path.join(root, "dist", "page", "escape.js")),
);
const inputs = ["src", "bench", "tsconfig.json", "tsconfig.build.json", "package.json"].map((p) =>
  newest(path.join(root, p)),
);
if (built > 0 && inputs.every((t) => t <= built)) {
  console.log("dacd: dist/ is up to date with src/, not rebuilt");
  process.exit(0);
}

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
console.log("dacd: compiling src/ into dist/ (tsc -p tsconfig.build.json; about half a minute)");
const build = spawnSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], {
  cwd: root,
  stdio: "inherit",
});
if (build.status !== 0) process.exit(build.status ?? 1);
// The escape page's script, bundled from the same sources (esbuild, a devDependency like tsc).
const page = spawnSync(process.execPath, [path.join(root, "scripts", "build-page.mjs")], {
  cwd: root,
  stdio: "inherit",
});
process.exit(page.status ?? 1);
