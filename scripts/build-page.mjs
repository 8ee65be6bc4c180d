#!/usr/bin/env node
/* global console, process */
// Bundles the escape page's browser app (src/escape/page/app/main.ts and the browser-safe modules
// it imports, viem's ABI code included) into one same-origin script, dist/page/escape.js, which
// the escape API serves and the escape kit writes (src/escape/page/assets.ts). Part of
// `npm run build`; no source map (the package carries none).
import { build } from "esbuild";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
try {
  await build({
    entryPoints: [path.join(root, "src/escape/page/app/main.ts")],
    outfile: path.join(root, "dist/page/escape.js"),
    bundle: true,
    format: "iife",
    platform: "browser",
    target: ["es2020", "chrome90", "firefox90", "safari14"],
    minify: true,
    legalComments: "eof",
    logLevel: "warning",
  });
} catch (err) {
  console.error(`build-page: ${err.message}`);
  process.exit(1);
}
