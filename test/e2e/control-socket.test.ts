/**
 * The control socket answers `/status`, `/check` and `/dump`, so only the daemon's user may reach
 * it: under umask 000 it is 0600 in a 0700 directory, in a private data_dir (0700) and in a shared
 * one (0755, where it moves to data_dir/control/), and the CLI finds it in either place. As root,
 * the test also asks it as another user (nobody), who must be refused.
 */
import { spawn, execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdir, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { dacdAsync, BIN } from "../helpers/dacd-cli.js";
import { memberSetup, waitFor } from "../helpers/daemon.js";
import { VectorGateway } from "../helpers/vector-gateway.js";
import { loadChain } from "../helpers/vectors.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** `dacd run` under `umask 000`, as a child process. */
function runUnderUmask0(configPath: string): void {
  const child = spawn(
    "sh",
    ["-c", `umask 000 && exec "${process.execPath}" "${BIN}" run --config "${configPath}"`],
    {
      stdio: "ignore",
      env: { ...process.env, DACD_HASH_ENGINE: "wasm" },
    },
  );
  const exit = new Promise<void>((r) => child.once("exit", () => r()));
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await exit;
  });
}

/** What user nobody (65534) gets when it asks `socketPath` for /status: a status code or an error code. */
function askAsNobody(socketPath: string): Promise<string> {
  const script = `require("node:http").get({ socketPath: ${JSON.stringify(socketPath)}, path: "/status" }, (r) => { console.log(r.statusCode); r.resume(); }).on("error", (e) => console.log(e.code));`;
  return new Promise((resolve) =>
    execFile(process.execPath, ["-e", script], { uid: 65534, gid: 65534 }, (_err, out) =>
      resolve(out.trim()),
    ),
  );
}

const mode = async (p: string): Promise<string> => ((await stat(p)).mode & 0o777).toString(8);

describe("the control socket under umask 000", () => {
  for (const [dataDirMode, socketDir] of [
    [0o755, "control"],
    [0o700, ""],
  ] as const) {
    it(`is 0600 in a 0700 directory with a data_dir of mode ${dataDirMode.toString(8)}, and the CLI finds it`, async () => {
      const { responses, expected } = loadChain("spot-chain");
      const gw = await new VectorGateway(responses, expected, "G").start();
      cleanups.push(() => gw.close());
      gw.available = 2;
      const setup = await memberSetup({
        profile: "spot",
        privateKey: expected.private_key,
        gatewayUrl: gw.url,
        feeder: true,
      });
      cleanups.push(() => rm(setup.dir, { recursive: true, force: true }));
      // Traversable by everyone down to data_dir, as /var/lib is: only the modes dacd sets protect it.
      await chmod(setup.dir, 0o755);
      const dataDir = setup.config.dataDir;
      await mkdir(dataDir);
      await chmod(dataDir, dataDirMode);
      runUnderUmask0(setup.configPath);
      const socket = join(dataDir, socketDir, "dacd.sock");
      await waitFor(() => existsSync(socket), 30_000, `the socket at ${socket}`);

      expect(await mode(socket)).toBe("600");
      expect(await mode(join(dataDir, socketDir))).toBe("700");
      expect(await mode(dataDir)).toBe(dataDirMode.toString(8)); // dacd leaves the operator's mode alone
      if (socketDir !== "") expect(existsSync(join(dataDir, "dacd.sock"))).toBe(false);

      // The CLI reaches the daemon (the store is locked, so only the daemon can answer with its runtime).
      const r = await dacdAsync(["status", "--json", "--config", setup.configPath]);
      expect(r.err).toBe("");
      expect(r.code).toBe(0);
      expect(JSON.parse(r.out)).toHaveProperty("runtime");

      if (process.getuid?.() === 0) {
        for (const p of [socket, join(dataDir, "dacd.sock")])
          expect(await askAsNobody(p)).toMatch(/^(EACCES|ENOENT)$/);
      }
    }, 60_000);
  }
});
