import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DacdError } from "../../src/errors.js";
import { makeProof, verifyProof } from "../../src/escape/proof.js";
import { buildBeside } from "../../src/escape/store-placement.js";
import { checkStore } from "../../src/maintenance/integrity-check.js";
import { pruneStore } from "../../src/maintenance/prune.js";
import type { LevelStore } from "../../src/storage/level-store.js";
import { chainStore, engine } from "../helpers/chain-store.js";
import { removeTempDirs } from "../helpers/temp-dir.js";
import { parseVerifySignAndStore } from "../../src/poller/member/batch-stages.js";

/**
 * After the exchange's confirmed freeze (recorded by the base-chain watch), the frozen batch is
 * what users escape with: prune keeps it whatever keep-batches says, `check` reports it missing,
 * no import replaces the store, and no new batch is signed unless sign_after_freeze says so.
 */
afterEach(removeTempDirs);

async function freezeAt(store: LevelStore, batchId: number): Promise<void> {
  await store.onchain.record(
    {
      contract: `0x${"ab".repeat(20)}`,
      next_block: 100,
      frozen: { batch_id: batchId, block_number: 90, detected_at: new Date(0).toISOString() },
    },
    [],
  );
}

describe("the frozen batch is pinned", () => {
  it("prune keeps the frozen batch's trees whatever keep-batches says: its proofs still verify", async () => {
    const s = await chainStore("spot-chain");
    try {
      await freezeAt(s.store, 1);
      const report = await pruneStore(s.store, { keepBatches: 2, engine });
      expect(report.kept_batches).toEqual([1, 4, 5]);
      expect(report.pruned_batches).toEqual([0, 2, 3]);
      for (const object of ["vault", "order", "rollup_vault"]) {
        const p = await makeProof(s.store, engine, object, "19237833", 1);
        expect((await verifyProof(engine, p)).valid).toBe(true);
      }
      expect((await checkStore(s.store, engine)).problems).toEqual([]);
    } finally {
      await s.store.close();
    }
  });

  it("check reports a frozen batch that is not stored, or whose trees were pruned", async () => {
    const s = await chainStore("spot-chain");
    try {
      await pruneStore(s.store, { keepBatches: 2, engine });
      await freezeAt(s.store, 2);
      const pruned = await checkStore(s.store, engine);
      expect(pruned.problems).toEqual([
        expect.objectContaining({ batch_id: 2, problem: expect.stringMatching(/froze at batch 2.*pruned/) }),
      ]);
      await freezeAt(s.store, 99);
      const missing = await checkStore(s.store, engine);
      expect(missing.ok).toBe(false);
      expect(missing.problems).toEqual([
        expect.objectContaining({
          batch_id: 99,
          problem: expect.stringMatching(/froze at batch 99.*not stored/),
        }),
      ]);
    } finally {
      await s.store.close();
    }
  });

  it("an import with --force does not replace a store holding the freeze", async () => {
    const s = await chainStore("spot-chain", 3);
    await freezeAt(s.store, 1);
    await s.store.close();
    let built = false;
    const err = await buildBeside(s.dir, true, async (dir) => {
      built = true;
      await mkdir(join(dir, "x"));
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DacdError);
    expect((err as Error).message).toMatch(/holds the exchange's freeze at batch 1/);
    expect(built).toBe(false);
  });

  it("no new batch is signed after the freeze unless sign_after_freeze says so", async () => {
    const s = await chainStore("spot-chain", 3);
    try {
      await freezeAt(s.store, 2);
      const err = await parseVerifySignAndStore(s.ctx, 3, s.responses[3]!.update).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DacdError);
      expect((err as DacdError).code).toBe("FROZEN");
      expect((err as Error).message).toMatch(/batch 3 not signed: the exchange is frozen at batch 2/);
      expect(await s.store.getBatch(3)).toBeUndefined();
      const overridden = { ...s.ctx, options: { ...s.ctx.options, signAfterFreeze: true } };
      await parseVerifySignAndStore(overridden, 3, s.responses[3]!.update);
      expect((await s.store.getBatch(3))?.signature).toMatch(/^0x[0-9a-f]+$/);
    } finally {
      await s.store.close();
    }
  });
});
