import { execFileSync } from "node:child_process";
import { copyFile, mkdir, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";

/**
 * `npx dacd` in a checkout runs npm's "prepare" again (issue 65, item 9): a dist/ newer than its
 * sources (its CLI and the page's bundle both) is not rebuilt, and a build says that it runs. Checked on a copy of the script in a tree
 * of its own, so that nothing here is built.
 */

afterEach(removeTempDirs);

async function tree(): Promise<string> {
  const root = await tempDir("dacd-prepare-");
  await mkdir(join(root, "scripts"));
  await copyFile(
    join(import.meta.dirname, "..", "..", "scripts", "prepare.mjs"),
    join(root, "scripts", "prepare.mjs"),
  );
  await writeFile(join(root, "package.json"), JSON.stringify({ name: "dacd", type: "module" }));
  await mkdir(join(root, "src", "cli"), { recursive: true });
  await writeFile(join(root, "src", "cli", "main.ts"), "export {};\n");
  await mkdir(join(root, "dist", "src", "cli"), { recursive: true });
  await writeFile(join(root, "dist", "src", "cli", "main.js"), "export {};\n");
  await mkdir(join(root, "dist", "page"), { recursive: true });
  await writeFile(join(root, "dist", "page", "escape.js"), "\n");
  const past = new Date(Date.now() - 60_000);
  for (const p of ["package.json", join("src", "cli", "main.ts"), join("scripts", "prepare.mjs")])
    await utimes(join(root, p), past, past);
  const built = new Date(Date.now() - 30_000);
  for (const p of [join("src", "cli", "main.js"), join("page", "escape.js")])
    await utimes(join(root, "dist", p), built, built);
  return root;
}

const prepare = (root: string): string =>
  execFileSync(process.execPath, [join(root, "scripts", "prepare.mjs")], {
    cwd: root,
    encoding: "utf8",
    env: { PATH: process.env.PATH ?? "" },
  });

describe("npm's prepare in a checkout", () => {
  it("leaves a dist/ newer than its sources as it is", async () => {
    expect(prepare(await tree())).toBe("dacd: dist/ is up to date with src/, not rebuilt\n");
  });

  it("builds when a source is newer than dist/ (here: says TypeScript is missing)", async () => {
    const root = await tree();
    await writeFile(join(root, "src", "cli", "main.ts"), "export const changed = 1;\n");
    expect(prepare(root)).toMatch(/^dacd: TypeScript is not installed/);
  });
});
