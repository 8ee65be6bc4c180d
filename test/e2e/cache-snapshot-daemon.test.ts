import { existsSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { partialPath, snapshotPath } from "../../src/verifier/trees/cache/cache-snapshot.js";
import { loggedDaemons, spotChainMember, waitFor } from "../helpers/daemon.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("the node cache's snapshot across a restart", () => {
  it("a clean stop saves the cache, and the next start warms from it rather than walking", async () => {
    const { gw, expected, setup } = await spotChainMember(cleanups);
    const { lines, start } = loggedDaemons(cleanups, setup.config);
    const warmed = () => lines.filter((l) => l.msg === "node cache warmed");
    const file = snapshotPath(setup.config.dataDir);

    const first = await start();
    await waitFor(() => gw.accepted.length >= expected.batches.length, 60_000, "all batches signed");
    await waitFor(() => warmed().length === 1, 30_000, "the first warm-up");
    // A store without a snapshot: the warm-up walks, says why, and then saves one.
    expect(warmed()[0]).toMatchObject({ source: "walk" });
    expect(lines.find((l) => String(l.msg).startsWith("node cache snapshot not used"))).toMatchObject({
      reason: "no snapshot",
    });
    await first.stop();
    const last = expected.batches.at(-1)!.batch_id;
    const written = lines.filter((l) => l.msg === "node cache snapshot written");
    // The stop's write is the last, at the newest batch.
    expect(written.at(-1)).toMatchObject({ batch_id: last });
    expect(Number(written.at(-1)!.nodes)).toBeGreaterThan(0);
    expect(existsSync(file)).toBe(true);
    expect(existsSync(partialPath(file))).toBe(false);

    const again = await start();
    await waitFor(() => warmed().length === 2, 30_000, "the warm-up after the restart");
    expect(warmed()[1]).toMatchObject({ source: "snapshot" });
    // Every node the stop saved is loaded (no tree's top moved, so none is walked).
    expect(warmed()[1]!.nodes).toBe(written.at(-1)!.nodes);
    expect(warmed()[1]!.walked).toBeUndefined();
    expect(lines.some((l) => String(l.msg).includes("batches older than the store"))).toBe(false);
    await waitFor(() => again.member.state.phase === "idle", 30_000, "idle after the restart");
  });
});
