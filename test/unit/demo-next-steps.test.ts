import { mkdir, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { dacdCommand, demoNextSteps } from "../../src/cli/demo-next-steps.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";

/**
 * The demo's next steps name a command that runs this dacd where the user is (issue 65, item 9): an
 * installed dacd's steps never say `npx dacd` outside a project, where npm would ask the public
 * registry for a package named dacd.
 */

afterEach(removeTempDirs);

/** A global install under a prefix: lib/node_modules/dacd and its launcher linked from bin/dacd. */
async function installed(): Promise<{ top: string; root: string; bin: string; elsewhere: string }> {
  const top = await tempDir("dacd-installed-");
  const root = join(top, "prefix", "lib", "node_modules", "dacd");
  await mkdir(join(root, "bin"), { recursive: true });
  await writeFile(join(root, "package.json"), JSON.stringify({ name: "dacd", version: "0.1.0" }));
  await writeFile(join(root, "bin", "dacd.js"), "", { mode: 0o755 });
  const bin = join(top, "prefix", "bin");
  await mkdir(bin);
  await symlink("../lib/node_modules/dacd/bin/dacd.js", join(bin, "dacd"));
  const elsewhere = join(top, "home");
  await mkdir(elsewhere);
  return { top, root, bin, elsewhere };
}

describe("the demo's next steps", () => {
  it("say `dacd` when the PATH's dacd is this install", async () => {
    const { root, bin, elsewhere } = await installed();
    expect(dacdCommand({ root, path: `/nonexistent:${bin}`, cwd: elsewhere })).toBe("dacd");
  });

  it("name the launcher by its path when no PATH leads to it and no project holds it", async () => {
    const { root, bin, elsewhere } = await installed();
    expect(dacdCommand({ root, path: "/usr/bin", cwd: elsewhere, argv1: join(bin, "dacd") })).toBe(
      join(bin, "dacd"),
    );
    expect(dacdCommand({ root, path: "", cwd: elsewhere, argv1: "/usr/bin/true" })).toBe(
      `node ${join(root, "bin", "dacd.js")}`,
    );
  });

  it("say `npx dacd` in the package's own directory and in a project that installed it", async () => {
    const { top, root } = await installed();
    expect(dacdCommand({ root, path: "", cwd: root })).toBe("npx dacd");
    const project = join(top, "project");
    await mkdir(join(project, "node_modules", ".bin"), { recursive: true });
    await symlink(join(root, "bin", "dacd.js"), join(project, "node_modules", ".bin", "dacd"));
    expect(dacdCommand({ root, path: "", cwd: project })).toBe("npx dacd");
  });

  it("print every step with that command", () => {
    const text = demoNextSteps({
      configPath: "/tmp/demo/dacd.yaml",
      metricsPort: 9100,
      freeze: { url: "http://127.0.0.1:9000", tree: "vault" },
      command: "dacd",
    });
    expect(text).not.toContain("npx");
    expect(text).toContain("  dacd status --config /tmp/demo/dacd.yaml");
    expect(text).toContain("  dacd proof vault 0 --config /tmp/demo/dacd.yaml");
  });

  it("say `npx dacd` in this checkout, where the tests run", () => {
    expect(dacdCommand({ path: "" })).toBe("npx dacd");
  });
});
