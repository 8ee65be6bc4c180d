import { spawn, spawnSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadPrivateKey } from "../../src/signer/key-file.js";
import { ethAddressFromPrivateKey } from "../../src/signer/eth-signer.js";

/** `dacd keygen` as the README writes it: asked at a terminal, from a password file, or raw. */

const BIN = join(import.meta.dirname, "..", "..", "bin", "dacd.js");

function dacd(args: string[], input = ""): { code: number | null; out: string; err: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    encoding: "utf8",
    input,
    env: { ...process.env, DACD_HASH_ENGINE: "wasm" },
    timeout: 120_000,
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

function oneLine(r: { code: number | null; err: string }, code: number, pattern: RegExp): void {
  expect(r.code, r.err).toBe(code);
  expect(r.err.trim().split("\n"), r.err).toHaveLength(1);
  expect(r.err).toMatch(/^dacd: /);
  expect(r.err).toMatch(pattern);
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "dacd-keygen-cli-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function expectKeyOf(path: string, address: string, passwordPath?: string): Promise<void> {
  expect(statSync(path).mode & 0o777).toBe(0o600);
  const key = await loadPrivateKey(path, { passwordPath });
  expect(ethAddressFromPrivateKey(key)).toBe(address);
}

describe("dacd keygen", () => {
  it("--raw writes a hex key file (0600) and prints its address", async () => {
    const out = join(dir, "raw.key");
    const r = dacd(["keygen", "--out", out, "--raw"]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/^0x[0-9a-fA-F]{40}\n$/);
    expect(await readFile(out, "utf8")).toMatch(/^0x[0-9a-f]{64}\n$/);
    await expectKeyOf(out, r.out.trim());
  });

  it("--password-file writes a keystore that dacd loads with that password", async () => {
    const pw = join(dir, "pw");
    await writeFile(pw, "correct horse\n", { mode: 0o600 });
    const out = join(dir, "member.key");
    const r = dacd(["keygen", "--out", out, "--password-file", pw, "--kdf", "pbkdf2"]);
    expect(r.code, r.err).toBe(0);
    expect(JSON.parse(await readFile(out, "utf8"))).toMatchObject({ version: 3 });
    await expectKeyOf(out, r.out.trim(), pw);
  }, 120_000);

  it("without a terminal, a password file or --raw: one line, exit 64, nothing written", () => {
    const out = join(dir, "none.key");
    oneLine(dacd(["keygen", "--out", out]), 64, /no terminal .*--password-file FILE, or --raw/);
    expect(existsSync(out)).toBe(false);
    oneLine(
      dacd(["keygen", "--out", out, "--raw", "--password-file", "x"]),
      64,
      /--raw.*cannot be used with/,
    );
  });

  it("an existing file is refused (exit 2) and kept", async () => {
    const out = join(dir, "taken.key");
    await writeFile(out, "keep me\n", { mode: 0o600 });
    oneLine(dacd(["keygen", "--out", out, "--raw"]), 2, /already exists; refusing to overwrite/);
    expect(await readFile(out, "utf8")).toBe("keep me\n");
  });

  it.runIf(existsSync("/usr/bin/script"))(
    "at a terminal (a pseudo-terminal from script(1)) the password is asked twice, not echoed",
    async () => {
      const out = join(dir, "asked.key");
      const command = `${process.execPath} ${BIN} keygen --kdf pbkdf2 --out ${out}`;
      // script(1) forwards its stdin to the pseudo-terminal: each answer is typed after its prompt.
      const child = spawn("script", ["-qec", command, "/dev/null"], { stdio: ["pipe", "pipe", "pipe"] });
      let stdout = "";
      let answered = 0;
      child.stdout.setEncoding("utf8").on("data", (s: string) => {
        stdout += s;
        const prompts = (stdout.match(/password: /g) ?? []).length;
        for (; answered < prompts; answered++) child.stdin.write("s3cret pw\r");
      });
      const status = await new Promise<number | null>((resolve) => child.on("close", resolve));
      const r = { status, stdout, stderr: "" };
      expect(r.status, r.stdout + r.stderr).toBe(0);
      expect(r.stdout).toMatch(/New keystore password: /);
      expect(r.stdout).toMatch(/Repeat the password: /);
      expect(r.stdout).not.toMatch(/s3cret/);
      const address = /0x[0-9a-fA-F]{40}/.exec(r.stdout)![0];
      const pw = join(dir, "asked-pw");
      await writeFile(pw, "s3cret pw", { mode: 0o600 });
      await expectKeyOf(out, address, pw);
    },
    120_000,
  );
});
