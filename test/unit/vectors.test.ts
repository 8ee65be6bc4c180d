import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { EthSigner } from "../../src/signer/eth-signer.js";
import { LevelStore } from "../../src/storage/level-store.js";
import { WasmEngine } from "../../src/verifier/hash/wasm-engine.js";
import { makeProfile } from "../../src/model/profile.js";
import { parseVerifySignAndStore } from "../../src/poller/member/batch-stages.js";
import { CHAINS, loadChain, privateKeyBytes } from "../helpers/vectors.js";

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

async function openStore(): Promise<LevelStore> {
  const dir = await mkdtemp(join(tmpdir(), "dacd-vectors-"));
  dirs.push(dir);
  return LevelStore.open(dir);
}

describe.each(CHAINS)("vector chain %s", (chain) => {
  it("reproduces every root, sequence number, claim and signature from a LevelDB store", async () => {
    const { responses, expected } = loadChain(chain);
    const profile = makeProfile(expected.profile, expected.heights);
    const signer = new EthSigner(privateKeyBytes(expected.private_key));
    expect(signer.memberKey).toBe(expected.member_key);
    const store = await openStore();
    const ctx = {
      profile,
      engine: new WasmEngine(),
      store,
      signer,
      options: { validateOrders: true, validateRollup: profile.rollup ? true : undefined },
    };
    try {
      for (const want of expected.batches) {
        const { record } = await parseVerifySignAndStore(
          ctx,
          want.batch_id,
          responses[want.batch_id]!.update,
        );
        expect(record.roots).toEqual(want.roots);
        expect(record.sequence_number).toBe(want.seq);
        expect(record.claim_hash).toBe(want.claim_hash);
        expect(record.signature).toBe(want.signature);
        expect(record.member_key).toBe(expected.member_key);
      }
      expect(expected.batches.length).toBe(responses.length);
    } finally {
      await store.close();
    }
  });
});

describe("stored batches", () => {
  it("are reused, not recomputed, when a batch id comes again", async () => {
    const { responses, expected } = loadChain("spot-golden");
    const profile = makeProfile("spot");
    const store = await openStore();
    const ctx = {
      profile,
      engine: new WasmEngine(),
      store,
      signer: new EthSigner(privateKeyBytes(expected.private_key)),
      options: { validateOrders: true, validateRollup: true },
    };
    try {
      const first = await parseVerifySignAndStore(ctx, 0, responses[0]!.update);
      const again = await parseVerifySignAndStore(ctx, 0, responses[0]!.update);
      expect(first.detail.reused).toBe(false);
      expect(again.detail.reused).toBe(true);
      expect(again.record).toEqual(first.record);
    } finally {
      await store.close();
    }
  });
});
