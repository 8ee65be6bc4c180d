import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { postsClaims } from "../../src/poller/member/shadow.js";

async function config(extra: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "dacd-mode-"));
  const path = join(dir, "dacd.yaml");
  await writeFile(
    path,
    [
      "profile: spot",
      'availability_gateway_url: "http://127.0.0.1:1"',
      "private_key_path: k",
      "data_dir: d",
      extra,
    ].join("\n") + "\n",
  );
  return path;
}

describe("mode", () => {
  it("is active by default, shadow when the file or DACD_MODE says so, and nothing else", async () => {
    expect(loadConfig(await config(""), {}).mode).toBe("active");
    expect(loadConfig(await config("mode: shadow"), {}).mode).toBe("shadow");
    expect(loadConfig(await config("mode: shadow"), { DACD_MODE: "active" }).mode).toBe("active");
    expect(loadConfig(await config(""), { DACD_MODE: "shadow" }).mode).toBe("shadow");
    const bad = await config("mode: passive");
    expect(() => loadConfig(bad, {})).toThrow(/mode.*must be one of active, shadow; got "passive"/);
  });

  it("decides whether claims are posted in one place", () => {
    expect(postsClaims("active")).toBe(true);
    expect(postsClaims(undefined)).toBe(true);
    expect(postsClaims("shadow")).toBe(false);
  });
});
