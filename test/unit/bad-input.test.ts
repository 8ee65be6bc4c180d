import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DacdError } from "../../src/errors.js";
import { EthSigner } from "../../src/signer/eth-signer.js";
import { LevelStore } from "../../src/storage/level-store.js";
import { WasmEngine } from "../../src/verifier/hash/wasm-engine.js";
import { makeProfile } from "../../src/model/profile.js";
import { parseVerifySignAndStore, type StageContext } from "../../src/poller/member/batch-stages.js";
import { updateOf } from "../../src/cli/replay.js";
import { loadChain, privateKeyBytes } from "../helpers/vectors.js";
import { levelDb } from "../../src/storage/level-db.js";

type Json = Record<string, unknown>;
const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;
const P = "0x800000000000011000000000000000000000000000000000000000000000001";

async function storeSnapshot(store: LevelStore): Promise<string[]> {
  const out: string[] = [];
  for await (const [k, v] of levelDb(store).iterator())
    out.push(Buffer.from(k).toString("hex") + "=" + Buffer.from(v).toString("hex"));
  return out;
}

/**
 * Runs each mutation of a good update (batch 1 of a chain) and expects a refusal with the code and
 * the field the mutation returns, naming batch 1, with the store unchanged; then the good batch
 * still verifies.
 */
function refusals(chain: "spot-chain" | "perpetual-chain", cases: [string, string, (u: Json) => string][]) {
  describe(`${chain}: refused input`, () => {
    const { responses, expected } = loadChain(chain);
    const profile = makeProfile(expected.profile);
    let dir: string;
    let ctx: StageContext;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), "dacd-bad-"));
      const store = await LevelStore.open(dir);
      ctx = {
        profile,
        engine: new WasmEngine(),
        store,
        signer: new EthSigner(privateKeyBytes(expected.private_key)),
        options: { validateOrders: true, validateRollup: profile.rollup ? true : undefined },
      };
      await parseVerifySignAndStore(ctx, 0, responses[0]!.update);
    });
    afterAll(async () => {
      await ctx.store.close();
      await rm(dir, { recursive: true, force: true });
    });

    it.each(cases)("%s", async (_name, code, mutate) => {
      const before = await storeSnapshot(ctx.store);
      const update = clone(responses[1]!.update) as Json;
      const field = mutate(update);
      const err = await parseVerifySignAndStore(ctx, 1, update).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(DacdError);
      expect((err as DacdError).code).toBe(code);
      expect((err as DacdError).batchId).toBe(1);
      expect((err as DacdError).field).toBe(field);
      expect((err as DacdError).message).toMatch(/^batch 1, field /);
      expect(await storeSnapshot(ctx.store)).toEqual(before);
    });

    it("refuses an unknown prev_batch_id and stores nothing", async () => {
      const before = await storeSnapshot(ctx.store);
      const update = clone(responses[1]!.update) as Json;
      update.prev_batch_id = 2;
      await expect(parseVerifySignAndStore(ctx, 3, update)).rejects.toMatchObject({
        code: "UNKNOWN_PREV_BATCH",
        batchId: 3,
        field: "prev_batch_id",
      });
      expect(await storeSnapshot(ctx.store)).toEqual(before);
    });

    it("still verifies the good batch afterwards", async () => {
      const { record } = await parseVerifySignAndStore(ctx, 1, responses[1]!.update);
      expect(record.claim_hash).toBe(expected.batches[1]!.claim_hash);
      expect(record.signature).toBe(expected.batches[1]!.signature);
    });
  });
}

const firstKey = (o: unknown): string => Object.keys(o as Json)[0]!;
/** Mutates the first vault (or order, position) and returns the dotted path of `field` in it. */
const inVault = (u: Json, field: string, value: unknown): string => {
  const id = firstKey(u.vaults);
  ((u.vaults as Json)[id] as Json)[field] = value;
  return `update.vaults.${id}.${field}`;
};
const inOrder = (u: Json, value: unknown): string => {
  const id = firstKey(u.orders);
  ((u.orders as Json)[id] as Json).fulfilled_amount = value;
  return `update.orders.${id}.fulfilled_amount`;
};
const inPosition = (u: Json, field: string, value: unknown): string => {
  const id = firstKey(u.positions);
  ((u.positions as Json)[id] as Json)[field] = value;
  return `update.positions.${id}.${field}`;
};

refusals("spot-chain", [
  ["missing prev_batch_id", "BAD_INPUT", (u) => (delete u.prev_batch_id, "update.prev_batch_id")],
  ["prev_batch_id as a string", "BAD_INPUT", (u) => ((u.prev_batch_id = "0"), "update.prev_batch_id")],
  ["prev_batch_id not before the batch", "BAD_INPUT", (u) => ((u.prev_batch_id = 1), "update.prev_batch_id")],
  ["missing vaults", "BAD_INPUT", (u) => (delete u.vaults, "update.vaults")],
  ["vaults as an array", "BAD_INPUT", (u) => ((u.vaults = []), "update.vaults")],
  ["negative balance", "BAD_INPUT", (u) => inVault(u, "balance", "-1")],
  ["balance of 2^63", "BAD_INPUT", (u) => inVault(u, "balance", (1n << 63n).toString())],
  ["balance as a number", "BAD_INPUT", (u) => inVault(u, "balance", 5)],
  ["missing balance", "BAD_INPUT", (u) => inVault(u, "balance", undefined)],
  ["non-hex key", "BAD_INPUT", (u) => inVault(u, "stark_key", "0xZZ")],
  ["key at the field prime", "BAD_INPUT", (u) => inVault(u, "stark_key", P)],
  ["token at the field prime", "BAD_INPUT", (u) => inVault(u, "token", P)],
  ["stark_key and core_key differ", "BAD_INPUT", (u) => inVault(u, "core_key", "0x1")],
  ["extra field in a vault", "BAD_INPUT", (u) => inVault(u, "colour", "red")],
  [
    "vault id beyond the tree",
    "BAD_INPUT",
    (u) => {
      (u.vaults as Json)[String(2 ** 31)] = (u.vaults as Json)[firstKey(u.vaults)];
      return `update.vaults.${2 ** 31}`;
    },
  ],
  [
    "__proto__ key",
    "BAD_INPUT",
    (u) => {
      Object.defineProperty(u.vaults, "__proto__", { value: {}, enumerable: true });
      return "update.vaults.__proto__";
    },
  ],
  ["order amount of 2^63", "BAD_INPUT", (u) => inOrder(u, (1n << 63n).toString())],
  ["order amount not decimal", "BAD_INPUT", (u) => inOrder(u, "1e5")],
  ["order root not hex", "BAD_INPUT", (u) => ((u.order_root = "xyz"), "update.order_root")],
  ["missing rollup leaves", "BAD_INPUT", (u) => (delete u.rollup_vaults, "update.rollup_vaults")],
  ["vault root mismatch", "ROOT_MISMATCH", (u) => ((u.vault_root = "0".repeat(63) + "1"), "vault_root")],
  ["order root mismatch", "ROOT_MISMATCH", (u) => ((u.order_root = "0".repeat(63) + "1"), "order_root")],
  [
    "rollup root mismatch",
    "ROOT_MISMATCH",
    (u) => ((u.rollup_vault_root = "0".repeat(63) + "1"), "rollup_vault_root"),
  ],
]);

refusals("perpetual-chain", [
  [
    "collateral below -2^63",
    "BAD_INPUT",
    (u) => inPosition(u, "collateral_balance", (-(1n << 63n) - 1n).toString()),
  ],
  ["public key not hex", "BAD_INPUT", (u) => inPosition(u, "public_key", "12")],
  [
    "asset id of 2^120",
    "BAD_INPUT",
    (u) => {
      const id = firstKey(u.positions);
      const assetId = "0x" + (1n << 120n).toString(16);
      (((u.positions as Json)[id] as Json).assets as Json)[assetId] = {
        balance: "1",
        cached_funding_index: "0",
      };
      return `update.positions.${id}.assets.${assetId}`;
    },
  ],
  [
    "funding index missing",
    "BAD_INPUT",
    (u) => {
      const id = firstKey(u.positions);
      (((u.positions as Json)[id] as Json).assets as Json)["0x1"] = { balance: "1" };
      return `update.positions.${id}.assets.0x1.cached_funding_index`;
    },
  ],
  ["perpetual order amount of 2^64", "BAD_INPUT", (u) => inOrder(u, (1n << 64n).toString())],
  ["position root mismatch", "ROOT_MISMATCH", (u) => ((u.position_root = "0".repeat(64)), "position_root")],
]);

describe("replay input", () => {
  it("refuses a body without update, or a null update, naming batch and field", () => {
    expect(() => updateOf([], 3)).toThrow(/batch 3, field update/);
    expect(() => updateOf({ update: null }, 4)).toThrow(/batch 4, field update: the batch is not ready/);
  });
});
