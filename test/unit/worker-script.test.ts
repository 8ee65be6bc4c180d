import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { workerScript } from "../../src/util/worker-script.js";

describe("workerScript", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "dacd-worker-script-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("finds the compiled worker beside a compiled module", () => {
    writeFileSync(path.join(dir, "some-worker.js"), "");
    const moduleUrl = pathToFileURL(path.join(dir, "lane.js")).href;
    expect(workerScript(moduleUrl, "some-worker.js")).toBe(path.join(dir, "some-worker.js"));
  });

  it("is undefined when no compiled worker is there", () => {
    const moduleUrl = pathToFileURL(path.join(dir, "lane.js")).href;
    expect(workerScript(moduleUrl, "absent-worker.js")).toBeUndefined();
  });

  it("finds the build in dist/ for a module run from the sources", () => {
    const compiledDir = fileURLToPath(new URL("../../dist/src/util/", import.meta.url));
    const name = `worker-script-test-${process.pid}.js`;
    mkdirSync(compiledDir, { recursive: true });
    writeFileSync(path.join(compiledDir, name), "");
    try {
      const moduleUrl = new URL("../../src/util/lane.ts", import.meta.url).href;
      expect(workerScript(moduleUrl, name)).toBe(path.join(compiledDir, name));
      expect(workerScript(moduleUrl, "never-built-worker.js")).toBeUndefined();
    } finally {
      rmSync(path.join(compiledDir, name));
    }
  });
});
