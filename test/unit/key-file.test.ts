import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { isDacdError } from "../../src/errors.js";
import { loadPrivateKey } from "../../src/signer/key-file.js";
import { encryptKeystore } from "../../src/signer/keystore.js";

const KEY_HEX = "bfb1d570ddf495e378a1a85140e72d177a92637223fa540e05aaa061179f4290";
const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");

const dir = mkdtempSync(join(tmpdir(), "dacd-keyfile-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
function file(content: string, mode = 0o600): string {
  const p = join(dir, `f${n++}`);
  writeFileSync(p, content, { mode });
  chmodSync(p, mode); // independent of the umask
  return p;
}

async function configError(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    expect(isDacdError(e, "CONFIG"), String(e)).toBe(true);
    const msg = (e as Error).message;
    expect(msg).not.toContain(KEY_HEX);
    expect(msg).not.toContain("\n");
    return msg;
  }
  throw new Error("expected a CONFIG error");
}

describe("loadPrivateKey: raw hex", () => {
  for (const [name, content] of [
    ["with 0x and trailing newline", `0x${KEY_HEX}\n`],
    ["without 0x", KEY_HEX],
    ["without 0x, trailing newline", `${KEY_HEX}\n`],
    ["upper case, surrounding whitespace", `  0X${KEY_HEX.toUpperCase()}\r\n\n`],
  ] as const) {
    it(`reads a key ${name}`, async () => {
      expect(hex(await loadPrivateKey(file(content)))).toBe(KEY_HEX);
    });
  }

  it("refuses empty, short, long, non-hex and zero keys without echoing them", async () => {
    expect(await configError(loadPrivateKey(file("")))).toMatch(/is empty/);
    expect(await configError(loadPrivateKey(file(" \n")))).toMatch(/is empty/);
    expect(await configError(loadPrivateKey(file(KEY_HEX.slice(2))))).toMatch(/neither 32 bytes of hex/);
    expect(await configError(loadPrivateKey(file(KEY_HEX + "00")))).toMatch(/neither/);
    expect(await configError(loadPrivateKey(file(KEY_HEX.slice(1) + "g")))).toMatch(/neither/);
    expect(await configError(loadPrivateKey(file("0x" + "0".repeat(64))))).toMatch(/zero key/);
    expect(await configError(loadPrivateKey(file(`{"a": "${KEY_HEX}"`)))).toMatch(/does not parse/);
    expect(await configError(loadPrivateKey(file(`{"a": "${KEY_HEX}"}`)))).toMatch(/not a V3 keystore/);
  });

  it("refuses a missing file, naming the path", async () => {
    const p = join(dir, "nope");
    const msg = await configError(loadPrivateKey(p));
    expect(msg).toContain(p);
    expect(msg).toMatch(/does not exist/);
  });

  it("refuses a directory", async () => {
    expect(await configError(loadPrivateKey(dir))).toMatch(/not a regular file/);
  });
});

describe("loadPrivateKey: permissions", () => {
  it("refuses a group-readable or world-writable file", async () => {
    for (const mode of [0o640, 0o604, 0o602, 0o620]) {
      const p = file(KEY_HEX, mode);
      const msg = await configError(loadPrivateKey(p));
      expect(msg).toContain(p);
      expect(msg).toMatch(/group or others/);
    }
  });

  it("allows it with the override, warning once", async () => {
    const p = file(KEY_HEX, 0o644);
    const warnings: string[] = [];
    const k = await loadPrivateKey(p, { allowInsecurePermissions: true, warn: (m) => warnings.push(m) });
    expect(hex(k)).toBe(KEY_HEX);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(p);
    expect(warnings[0]).not.toContain(KEY_HEX);
  });

  it("does not warn for a 0600 or 0400 file", async () => {
    const warnings: string[] = [];
    await loadPrivateKey(file(KEY_HEX, 0o400), {
      allowInsecurePermissions: true,
      warn: (m) => warnings.push(m),
    });
    expect(warnings).toHaveLength(0);
  });
});

describe("loadPrivateKey: keystore", () => {
  async function keystoreFile(password: string): Promise<string> {
    const ks = await encryptKeystore(Buffer.from(KEY_HEX, "hex"), password, {
      kdf: "scrypt",
      fastForTests: true,
    });
    return file(JSON.stringify(ks, null, 2) + "\n");
  }

  it("decrypts with the password file, stripping one trailing newline", async () => {
    const ks = await keystoreFile("s3cret ");
    expect(hex(await loadPrivateKey(ks, { passwordPath: file("s3cret \n") }))).toBe(KEY_HEX);
    expect(hex(await loadPrivateKey(ks, { passwordPath: file("s3cret ") }))).toBe(KEY_HEX);
  });

  it("falls back to the systemd credential", async () => {
    const ks = await keystoreFile("from-systemd");
    const credDir = mkdtempSync(join(dir, "creds-"));
    writeFileSync(join(credDir, "dacd-key-password"), "from-systemd\n", { mode: 0o400 });
    expect(hex(await loadPrivateKey(ks, { credentialsDirectory: credDir }))).toBe(KEY_HEX);
  });

  it("explains a missing password source", async () => {
    const ks = await keystoreFile("pw");
    expect(await configError(loadPrivateKey(ks))).toMatch(/no password file is configured/);
  });

  it("names private_key_password_path when a keystore has no password, and the password file when it is wrong", async () => {
    const ks = await keystoreFile("right");
    expect(await configError(loadPrivateKey(ks))).toMatch(
      /set private_key_password_path in the configuration/,
    );
    const pw = file("wrong\n");
    expect(await configError(loadPrivateKey(ks, { passwordPath: pw }))).toContain(
      `(password from ${pw}, the private_key_password_path)`,
    );
  });

  it("fails cleanly on a wrong password, naming the key file", async () => {
    const ks = await keystoreFile("right");
    const msg = await configError(loadPrivateKey(ks, { passwordPath: file("wrong\n") }));
    expect(msg).toContain(ks);
    expect(msg).toMatch(/MAC mismatch: wrong password or corrupted keystore/);
  });

  it("applies the permission rule to the password file too", async () => {
    const ks = await keystoreFile("pw");
    const pw = file("pw\n", 0o644);
    expect(await configError(loadPrivateKey(ks, { passwordPath: pw }))).toContain(pw);
  });
});
