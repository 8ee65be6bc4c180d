import { spawn, spawnSync } from "node:child_process";
import { chmod, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { encryptKeystore } from "../../src/signer/keystore.js";
import { freePort } from "../helpers/free-port.js";
import { memberSetup, waitFor } from "../helpers/daemon.js";
import { VectorGateway } from "../helpers/vector-gateway.js";
import { FIXTURES, loadChain, privateKeyBytes } from "../helpers/vectors.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";

const BIN = join(import.meta.dirname, "..", "..", "bin", "dacd.js");
const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  await removeTempDirs();
});

const tmp = (): Promise<string> => tempDir("dacd-keys-");

/** The vectors' key as a V3 keystore (cheap KDF) and its password file, both 0600. */
async function keystoreFiles(dir: string, privateKey: string, password = "correct horse battery staple") {
  const keystore = await encryptKeystore(privateKeyBytes(privateKey), password, { fastForTests: true });
  const keyFile = join(dir, "member.keystore.json");
  const passwordFile = join(dir, "password");
  await writeFile(keyFile, JSON.stringify(keystore), { mode: 0o600 });
  await writeFile(passwordFile, password + "\n", { mode: 0o600 });
  return { keyFile, passwordFile };
}

describe("key custody", () => {
  it("dacd replay --password-file signs with a V3 keystore exactly as with the raw key", async () => {
    const { expected } = loadChain("spot-chain");
    const dir = await tmp();
    const { keyFile, passwordFile } = await keystoreFiles(dir, expected.private_key);
    const args = (db: string, pw: string) => [
      BIN,
      "replay",
      "--profile",
      "spot",
      "--key-file",
      keyFile,
      "--password-file",
      pw,
      "--input",
      join(FIXTURES, "spot-chain", "responses.json"),
      "--db",
      join(dir, db),
    ];
    const r = spawnSync(process.execPath, args("db", passwordFile), { encoding: "utf8", timeout: 120_000 });
    // Nothing on stderr but, where the addon is not built, the one-line engine fallback notice.
    expect(r.stderr.replace(/^native Pedersen engine unavailable.*\n/m, "")).toBe("");
    expect(r.status).toBe(0);
    const lines = r.stdout
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { batch_id: number; signature: string; member_key: string });
    expect(lines.map((l) => [l.batch_id, l.signature, l.member_key])).toEqual(
      expected.batches.map((b) => [b.batch_id, b.signature, expected.member_key]),
    );

    // A wrong password: one line naming the key file, no output, non-zero exit.
    const wrong = join(dir, "wrong");
    await writeFile(wrong, "not it\n", { mode: 0o600 });
    const bad = spawnSync(process.execPath, args("db2", wrong), { encoding: "utf8", timeout: 120_000 });
    expect(bad.status).toBe(78);
    expect(bad.stdout).toBe("");
    expect(bad.stderr.trim().split("\n")).toHaveLength(1);
    expect(bad.stderr).toContain(keyFile);
    expect(bad.stderr).not.toContain("not it");
  });

  it("dacd run takes the keystore password from the systemd credential (LoadCredential=dacd-key-password:…)", async () => {
    const { responses, expected } = loadChain("spot-chain");
    const gw = await new VectorGateway(responses, expected, "G").start();
    const port = await freePort();
    const setup = await memberSetup({
      profile: "spot",
      privateKey: expected.private_key,
      gatewayUrl: gw.url,
      feeder: true,
      // The whole service path: metrics listener and a scheduled job, stopped cleanly on SIGTERM.
      extra: `metrics_port: ${port}\nschedule:\n  check: "*/1 * * * * *"`,
    });
    dirs.push(setup.dir);
    // Replace the raw key by a keystore; the password lives only in the credentials directory.
    const { keyFile, passwordFile } = await keystoreFiles(setup.dir, expected.private_key);
    await writeFile(join(setup.dir, "member.key"), await readFile(keyFile));
    await chmod(join(setup.dir, "member.key"), 0o600);
    const credentials = join(setup.dir, "credentials");
    await mkdir(credentials, { mode: 0o700 });
    await writeFile(join(credentials, "dacd-key-password"), await readFile(passwordFile), { mode: 0o600 });
    const child = spawn(process.execPath, [BIN, "run", "--config", setup.configPath], {
      env: { ...process.env, CREDENTIALS_DIRECTORY: credentials },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    try {
      await waitFor(() => gw.accepted.length === expected.batches.length || child.exitCode !== null, 60_000);
      expect(stderr).toBe("");
      expect(gw.acceptedIds()).toEqual(expected.batches.map((b) => b.batch_id));
      await waitFor(
        async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200,
        10_000,
        "ready",
      );
      await new Promise((r) => setTimeout(r, 1200)); // let the check job run at least once
    } finally {
      child.kill("SIGTERM");
      await new Promise((r) => (child.exitCode !== null ? r(null) : child.once("exit", r)));
      await gw.close();
    }
    expect(child.exitCode).toBe(0);
    expect(stderr).toBe("");
  });
});
