import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** src/ and dist/src/ as seen from this module when it runs from the TypeScript sources. */
const SOURCE_DIR = fileURLToPath(new URL("../", import.meta.url));
const COMPILED_DIR = fileURLToPath(new URL("../../dist/src/", import.meta.url));

/**
 * The compiled worker `fileName` (e.g. "file-worker.js") that sits beside the module at
 * `moduleUrl` (its import.meta.url), or undefined when there is none. A worker thread runs
 * JavaScript only: from dist/ it is the sibling file; from the .ts sources (tests, tsx) it is the
 * same file in dist/ after `npm run build`, and undefined before it, so each caller decides whether
 * to work on its own thread or fail with a hint to build.
 */
export function workerScript(moduleUrl: string, fileName: string): string | undefined {
  const candidates = [fileURLToPath(new URL(fileName, moduleUrl))];
  if (moduleUrl.endsWith(".ts")) {
    const relativeDir = path.relative(SOURCE_DIR, path.dirname(fileURLToPath(moduleUrl)));
    candidates.push(path.join(COMPILED_DIR, relativeDir, fileName));
  }
  return candidates.find((file) => existsSync(file));
}
