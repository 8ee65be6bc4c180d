import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../helpers/daemon.js";

const BIN = join(import.meta.dirname, "..", "..", "bin", "dacd.js");
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function run(args: string[]): { child: ChildProcess; out: () => string } {
  const child = spawn(process.execPath, [BIN, ...args]);
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  return { child, out: () => out };
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

describe("dacd demo", () => {
  it("prints what to try next, and each suggestion answers while the demo runs", async () => {
    const dir = await mkdtemp(join(tmpdir(), "dacd-demo-"));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const demo = run(["demo", "--data-dir", dir, "--traffic", "20"]);
    cleanups.push(async () => {
      if (demo.child.exitCode === null && demo.child.signalCode === null) {
        demo.child.kill("SIGKILL");
        await exited(demo.child);
      }
    });
    await waitFor(() => /stop the demo with Ctrl-C/.test(demo.out()), 60_000, "the next steps");
    const out = demo.out();
    const status = /^ {2}npx dacd status --config (\S+)$/m.exec(out);
    expect(status?.[1]).toBe(join(dir, "dacd.yaml"));
    const metricsUrl = /^ {2}curl (http:\/\/127\.0\.0\.1:\d+\/metrics)$/m.exec(out)?.[1];
    const readyUrl = /^ {2}curl (http:\/\/127\.0\.0\.1:\d+\/readyz)$/m.exec(out)?.[1];
    expect(metricsUrl).toBeDefined();
    expect(readyUrl).toBeDefined();

    // The metrics URL serves the member's metrics; once it has signed a batch, status shows it.
    await waitFor(
      async () => /^dacd_last_signed_batch_id [0-9]+$/m.test(await (await fetch(metricsUrl!)).text()),
      90_000,
      "a signed batch in /metrics",
    );
    expect((await fetch(readyUrl!)).status).toBe(200);
    const st = run(["status", "--config", status![1]!]);
    expect(await exited(st.child)).toBe(0);
    const answer = JSON.parse(st.out()) as { profile: string; cursor: { next_batch_id: number } };
    expect(answer.profile).toBe("spot");
    expect(answer.cursor.next_batch_id).toBeGreaterThan(0);

    demo.child.kill("SIGINT");
    expect(await exited(demo.child)).toBe(0);
  }, 180_000);
});
