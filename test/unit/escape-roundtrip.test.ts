import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { checkStore } from "../../src/maintenance/integrity-check.js";
import { dumpStore } from "../../src/escape/dump.js";
import { loadDump } from "../../src/escape/load.js";
import { LevelStore } from "../../src/storage/level-store.js";
import { parseVerifySignAndStore } from "../../src/poller/member/batch-stages.js";
import { chainStore, contextFor, dumpFiles, engine } from "../helpers/chain-store.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";

afterEach(removeTempDirs);

describe.each(["spot-chain", "spot-v40-chain", "perpetual-chain"] as const)("dump and load, %s", (chain) => {
  // Seconds on a quiet machine, more on a busy one: 60 s rather than the unit project's 20.
  it("reproduces the batch in a fresh store, which then verifies and signs the following batches", async () => {
    const N = 1; // every later batch of these chains builds on batch 1 or after it
    const src = await chainStore(chain);
    const out = join(await tempDir(), "dump");
    let manifest;
    let original;
    try {
      manifest = await dumpStore(src.store, engine, { outDir: out, batchId: N });
      original = await src.store.getBatch(N);
    } finally {
      await src.store.close();
    }
    expect(manifest.batch_id).toBe(N);
    expect(manifest.roots).toEqual(src.expected.batches[N]!.roots);
    expect(manifest.sequence_number).toBe(src.expected.batches[N]!.seq);
    for (const t of Object.values(manifest.trees)) expect(t.leaves).toBeGreaterThan(0);

    const dst = await LevelStore.open(join(await tempDir(), "db"));
    try {
      const loaded = await loadDump(dst, engine, { fromDir: out });
      expect(loaded.roots).toEqual(original!.roots);
      const record = await dst.getBatch(N);
      expect(record).toMatchObject({
        batch_id: N,
        prev_batch_id: original!.prev_batch_id,
        sequence_number: original!.sequence_number,
        roots: original!.roots,
        heights: original!.heights,
        claim_hash: original!.claim_hash,
        signature: "",
        member_key: "",
        loaded_from_dump: true,
      });
      expect(await dst.getCursor()).toEqual({ next_batch_id: N + 1, last_accepted_batch_id: N });
      expect(await dst.meta.identity()).toEqual({
        profile: src.expected.profile,
        heights: src.expected.heights,
      });

      // Every leaf equal: a dump of the loaded store is the same files.
      const again = join(await tempDir(), "dump");
      const manifest2 = await dumpStore(dst, engine, { outDir: again });
      expect(await dumpFiles(again)).toEqual(await dumpFiles(out));
      expect(manifest2.trees).toEqual(manifest.trees);

      const report = await checkStore(dst, engine, { deep: true });
      expect(report.problems).toEqual([]);
      expect(report.ok).toBe(true);

      // The loaded store continues the chain exactly like the member that verified it all.
      const ctx = contextFor(dst, chain);
      for (const want of src.expected.batches.slice(N + 1)) {
        const { record: r } = await parseVerifySignAndStore(
          ctx,
          want.batch_id,
          src.responses[want.batch_id]!.update,
        );
        expect(r.roots).toEqual(want.roots);
        expect(r.sequence_number).toBe(want.seq);
        expect(r.claim_hash).toBe(want.claim_hash);
        expect(r.signature).toBe(want.signature);
      }
      const after = await checkStore(dst, engine, { deep: true });
      expect(after.problems).toEqual([]);
    } finally {
      await dst.close();
    }
  }, 60_000);
});
