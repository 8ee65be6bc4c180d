import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { BIN } from "../helpers/dacd-cli.js";
import { waitFor } from "../helpers/daemon.js";

/**
 * `dacd demo --chain`: one user's exit, which the demo walks through itself, then the rehearsal a
 * newcomer follows from the printed steps (the freeze, already made by the user, answers the frozen
 * batch; the proof is at that batch).
 */
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** `out`: stdout and stderr as they came; `stdout` alone (a command's JSON answer). */
function run(args: string[]): { child: ChildProcess; out: () => string; stdout: () => string } {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...process.env, DACD_HASH_ENGINE: "wasm" },
  });
  let out = "";
  let stdout = "";
  child.stdout!.on("data", (d: Buffer) => {
    out += d.toString();
    stdout += d.toString();
  });
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  return { child, out: () => out, stdout: () => stdout };
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

async function runToEnd(line: string): Promise<string> {
  const r = run(line.trim().split(/\s+/).slice(1));
  expect(await exited(r.child), r.out()).toBe(0);
  return r.stdout();
}

describe("dacd demo --chain", () => {
  it("the member follows the devnet's chain; the printed freeze and proof steps work", async () => {
    const dir = await mkdtemp(join(tmpdir(), "dacd-demo-chain-"));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const demo = run(["demo", "--data-dir", dir, "--traffic", "20", "--chain"]);
    cleanups.push(async () => {
      if (demo.child.exitCode === null && demo.child.signalCode === null) {
        demo.child.kill("SIGKILL");
        await exited(demo.child);
      }
    });
    await waitFor(() => /stop the demo with Ctrl-C/.test(demo.out()), 60_000, "the next steps");
    const out = demo.out();
    const metricsUrl = /^ {2}curl (http:\/\/127\.0\.0\.1:\d+\/metrics)$/m.exec(out)![1]!;
    // The steps are printed as `npx dacd …`, run here with this checkout's bin/dacd.js.
    const freeze = /^ {2}npx (dacd devnet freeze .*)$/m.exec(out)![1]!;
    const proof = /^ {2}npx (dacd proof vault 0 .*)$/m.exec(out)![1]!;
    const gauge = async (name: string): Promise<number> =>
      Number(new RegExp(`^${name} (-?[0-9]+)$`, "m").exec(await (await fetch(metricsUrl)).text())?.[1]);

    await waitFor(async () => (await gauge("dacd_onchain_batch_id")) >= 1, 90_000, "a batch on-chain");
    // The demo ends its story with one user's exit on the chain: exactly quantum × amount arrives.
    await waitFor(
      () => /balance of 0x[0-9a-fA-F]{40}: \d+ before/.test(demo.out()),
      150_000,
      "the user's exit",
    );
    const [, before, after, amount, quantum] =
      / balance of 0x[0-9a-fA-F]{40}: (\d+) before, (\d+) after \((\d+) quantized × quantum (\d+)/.exec(
        demo.out(),
      )!;
    expect(BigInt(amount!)).toBe(5000n);
    expect(BigInt(after!) - BigInt(before!)).toBe(BigInt(amount!) * BigInt(quantum!));
    for (const step of [
      "registerEthAddress",
      "fullWithdrawalRequest",
      "freezeRequest",
      "verifyEscape",
      "escape",
      "withdraw",
    ])
      expect(demo.out()).toMatch(new RegExp(`^ {2}${step} +[0-9,]+ gas$`, "m"));
    const { frozen_batch_id } = JSON.parse(await runToEnd(freeze)) as { frozen_batch_id: number };
    await waitFor(async () => (await gauge("dacd_onchain_frozen")) === 1, 30_000, "the freeze");
    const answer = JSON.parse(await runToEnd(proof)) as { batch_id: number };
    expect(answer.batch_id).toBe(frozen_batch_id);

    demo.child.kill("SIGINT");
    expect(await exited(demo.child)).toBe(0);
  }, 300_000);
});
