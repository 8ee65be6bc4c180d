import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { spotChainMember, startQuietDaemon, waitFor } from "../helpers/daemon.js";
import { fill, smallDisk } from "../helpers/small-disk.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("a full disk", () => {
  it("is reported as a full disk (STORE, not INTERNAL) and the member resumes once space returns", async (t) => {
    const small = await smallDisk(16);
    if (!small) return t.skip();
    cleanups.push(small.remove);
    const disk = small.dir;
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
