import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { BIN } from "../helpers/dacd-cli.js";
import { waitFor } from "../helpers/daemon.js";

/** `dacd demo --chain`: the rehearsal a newcomer follows, a freeze and an exit, from the printed steps. */
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function run(args: string[]): { child: ChildProcess; out: () => string } {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...process.env, DACD_HASH_ENGINE: "wasm" },
  });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  return { child, out: () => out };
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

async function runToEnd(line: string): Promise<string> {
  const r = run(line.trim().split(/\s+/).slice(1));
  expect(await exited(r.child), r.out()).toBe(0);
  return r.out();
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
    const { frozen_batch_id } = JSON.parse(await runToEnd(freeze)) as { frozen_batch_id: number };
    await waitFor(async () => (await gauge("dacd_onchain_frozen")) === 1, 30_000, "the freeze");
    const answer = JSON.parse(await runToEnd(proof)) as { batch_id: number };
    expect(answer.batch_id).toBe(frozen_batch_id);

    demo.child.kill("SIGINT");
    expect(await exited(demo.child)).toBe(0);
  }, 180_000);
});
