import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { answerJson } from "../../src/api/json-answers.js";
import { makeProof } from "../../src/escape/proof.js";
import { defaultBatchNote, showLeaf } from "../../src/inspect/inspect.js";
import { chainStore, engine } from "../helpers/chain-store.js";
import { LevelStore } from "../../src/storage/level-store.js";
import { placeholderRecord } from "../helpers/batch-record.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";

/**
 * After a freeze (issue 65, item 9): `/v1/batches/latest` is, as documented, the batch the other
 * answers default to (the frozen one), and names the latest signed one beside it; `show leaf`
 * (the newest batch) and `proof` (the frozen one) say which batch they answer at and why.
 */

let store: LevelStore | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
  await removeTempDirs();
});

/** Batches 0..5 signed, the exchange frozen at batch `frozenAt` (if any). */
async function signedStore(frozenAt?: number): Promise<LevelStore> {
  const s = await LevelStore.open(join(await tempDir("dacd-freeze-labels-"), "db"));
  for (let id = 0; id <= 5; id++)
    await s.batches.moveCursor({ kind: "accepted", record: placeholderRecord(id), at: new Date(0) });
  if (frozenAt !== undefined)
    await s.onchain.record(
      {
        contract: "0x" + "11".repeat(20),
        next_block: 100,
        frozen: { batch_id: frozenAt, block_number: 99, detected_at: new Date(0).toISOString() },
      },
      [],
    );
  return s;
}

const latest = async (s: LevelStore): Promise<Record<string, unknown>> =>
  (
    await answerJson(
      { store: s, engine: undefined as never, contracts: undefined },
      "batches_latest",
      [],
      undefined,
    )
  ).body as Record<string, unknown>;

describe("/v1/batches/latest", () => {
  it("is the frozen batch after a freeze, naming the latest signed one beside it", async () => {
    store = await signedStore(2);
    expect(await latest(store)).toMatchObject({
      batch_id: 2,
      sequence_number: 2,
      latest_signed_batch_id: 5,
      frozen_batch_id: 2,
    });
  });

  it("is the latest signed batch before a freeze", async () => {
    store = await signedStore();
    expect(await latest(store)).toMatchObject({
      batch_id: 5,
      latest_signed_batch_id: 5,
      frozen_batch_id: null,
    });
  });
});

describe("show leaf and proof after a freeze", () => {
  it("show leaf says whether it is at the frozen batch, and both say which batch and why", async () => {
    const chain = await chainStore("spot-chain");
    store = chain.store;
    const last = (await store.lastBatchId())!;
    const frozenAt = last - 1;
    await store.onchain.record(
      {
        contract: "0x" + "11".repeat(20),
        next_block: 100,
        frozen: { batch_id: frozenAt, block_number: 99, detected_at: new Date(0).toISOString() },
      },
      [],
    );
    const leaf = await showLeaf(store, engine, "vault", "0");
    expect(leaf).toMatchObject({ batch_id: last, frozen_batch_id: frozenAt, at_frozen_batch: false });
    const proof = await makeProof(store, engine, "vault", "0");
    expect(proof.batch_id).toBe(frozenAt);
    expect(defaultBatchNote("leaf", last, frozenAt)).toBe(
      `leaf at batch ${last}, the newest verified batch; the exchange froze at batch ${frozenAt}, ` +
        `whose state escapes are checked against (\`dacd proof\` answers at it): --batch ${frozenAt} for the leaf there`,
    );
    expect(defaultBatchNote("proof", frozenAt, frozenAt)).toBe(
      `proof at batch ${frozenAt}, the batch the exchange froze at (escapes are checked against its state)`,
    );
    expect(defaultBatchNote("proof", last, undefined)).toBeUndefined();
    expect(await showLeaf(store, engine, "vault", "0", frozenAt)).toMatchObject({ at_frozen_batch: true });
  });
});
