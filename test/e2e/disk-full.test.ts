import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, open, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { spotChainMember, startQuietDaemon, waitFor } from "../helpers/daemon.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A small tmpfs of our own (needs root, as in CI containers); undefined when mounting is not allowed. */
async function smallDisk(mb: number): Promise<string | undefined> {
  const dir = await mkdtemp(join(tmpdir(), "dacd-small-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${mb}m`, "tmpfs", dir], { stdio: "ignore" });
  } catch {
    await rm(dir, { recursive: true, force: true });
    return undefined;
  }
  cleanups.push(async () => {
    execFileSync("umount", ["-l", dir], { stdio: "ignore" });
    await rm(dir, { recursive: true, force: true });
  });
  return dir;
}

async function fill(path: string): Promise<void> {
  const fh = await open(path, "w");
  const block = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) await fh.write(block);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOSPC") throw err;
  } finally {
    await fh.close();
  }
}

describe("a full disk", () => {
  it("is reported as a full disk (STORE, not INTERNAL) and the member resumes once space returns", async (t) => {
    const disk = await smallDisk(16);
    if (!disk) return t.skip();
    const { gw, expected, setup } = await spotChainMember(cleanups);
    gw.available = 2;
    await mkdir(join(disk, "member"));
    const config = { ...setup.config, dataDir: join(disk, "member", "data") };
    const daemon = await startQuietDaemon(config);
    cleanups.push(() => daemon.stop());
    await waitFor(() => daemon.member.state.nextBatchId === 2, 60_000, "two batches");

    await fill(join(disk, "filler"));
    gw.available = 6;
    await waitFor(() => daemon.member.state.failing !== undefined, 60_000, "a failure");
    const failing = daemon.member.state.failing!;
    console.log(`disk full: ${failing.code}: ${failing.reason}`);
    expect(failing.code).toBe("STORE");
    expect(failing.reason).toMatch(/is full/);

    await rm(join(disk, "filler"));
    await waitFor(() => daemon.member.state.nextBatchId === 6, 120_000, "resumed");
    expect(gw.conflictingClaims()).toEqual([]);
    expect([...new Set(gw.acceptedIds())]).toEqual(expected.batches.map((b) => b.batch_id));
  }, 180_000);
});
