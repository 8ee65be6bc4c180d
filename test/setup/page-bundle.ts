import { spawnSync } from "node:child_process";
import { join } from "node:path";

/**
 * The unit project does not build, but the escape page's script is served and written into kits
 * from dist/page/escape.js: bundle it here (esbuild, well under a second) so that unit tests of the
 * API and the kit run on a fresh checkout without `npm run build`.
 */
export default function bundlePage(): void {
  const root = join(import.meta.dirname, "..", "..");
  const run = spawnSync(process.execPath, [join(root, "scripts", "build-page.mjs")], {
    cwd: root,
    stdio: "inherit",
  });
  if (run.status !== 0) throw new Error("scripts/build-page.mjs failed: the page's bundle is missing");
}
