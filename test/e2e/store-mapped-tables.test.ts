import { readdir, readFile } from "node:fs/promises";
import { afterEach, describe, expect, it } from "vitest";
import { levelBindingName } from "../../src/storage/level-binding.js";
import { loggedDaemons, spotChainMember, waitFor } from "../helpers/daemon.js";
import { nativeAvailable } from "../helpers/native-required.js";

const dacdBinding = nativeAvailable("dacd's LevelDB binding", levelBindingName === "dacd");

// Each test file runs in a process of its own (vitest's forks pool): the first daemon here opens
// the process's first store, so its store_mapped_tables is the one LevelDB takes.
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function member(extra: string) {
  const { gw, expected, setup } = await spotChainMember(cleanups, undefined, extra);
  const { lines, start } = loggedDaemons(cleanups, setup.config);
  const daemon = await start();
  await waitFor(() => gw.accepted.length >= expected.batches.length, 60_000, "all batches signed");
  expect(gw.acceptedIds()).toEqual(expected.batches.map((b) => b.batch_id));
  return { lines, dataDir: setup.config.dataDir, daemon, start };
}

describe.skipIf(!dacdBinding || process.platform !== "linux")("store_mapped_tables", () => {
  it("0: the member reads every table with pread, maps none, and signs every batch", async () => {
    const { lines, dataDir, daemon, start } = await member("store_mapped_tables: 0");
    expect(lines.find((l) => l.msg === "dacd started")).toMatchObject({ mapped_tables: 0 });
    // The memory plan is logged at start, the operator's setting kept and named.
    const plan = lines.find((l) => String(l.msg).startsWith("memory budget "));
    expect(plan).toMatchObject({ memory: { store_mapped_tables: 0, overridden: ["store_mapped_tables"] } });
    expect(String(plan?.msg)).toMatch(/node cache \d+ levels below each tree's first branch/);
    // Started again: LevelDB turns the log of the batches into a table and opens it.
    await daemon.stop();
    const again = await start();
    await waitFor(() => again.member.state.phase === "idle", 30_000, "idle after the restart");
    // Tables there are (at least the replayed log's, which LevelDB opened once written), none mapped.
    expect((await readdir(dataDir)).filter((f) => f.endsWith(".ldb")).length).toBeGreaterThan(0);
    const maps = await readFile("/proc/self/maps", "utf8");
    expect(maps.split("\n").filter((l) => l.includes(dataDir) && l.endsWith(".ldb"))).toEqual([]);
  });

  it("another number later in the same process is refused with a warning, and the member runs", async () => {
    const { lines } = await member("store_mapped_tables: 50");
    expect(lines.find((l) => String(l.msg).startsWith("store_mapped_tables is read once"))).toMatchObject({
      store_mapped_tables: 50,
      mapped_tables: 0,
    });
  });
});
