import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDevnet, type Devnet } from "../../src/devnet/main.js";
import { get, post, approvalBody } from "../../src/devnet/client.js";
import type { Batch } from "../../src/devnet/batcher.js";
import { EthSigner } from "../../src/signer/eth-signer.js";
import { parseStateUpdate } from "../../src/wire/parse-update.js";
import { computeRoots, type RootGens, type Roots } from "../../src/verifier/trees/update/compute-roots.js";
import { MemoryNodeStore } from "../../src/storage/memory-store.js";
import { WasmEngine } from "../../src/verifier/hash/wasm-engine.js";
import { keptTrees } from "../../src/model/profile.js";
import { bytesEqual, toHex64 } from "../../src/util/bytes.js";
import { hex64, naiveDevnetRoots } from "../helpers/naive-chain.js";

const KEY_A = "0x" + "11".repeat(32);
const KEY_B = "0x" + "22".repeat(32);
const KEY_C = "0x" + "33".repeat(32);
const signerOf = (k: string): EthSigner => new EthSigner(new Uint8Array(Buffer.from(k.slice(2), "hex")));
const A = signerOf(KEY_A);
const B = signerOf(KEY_B);
const C = signerOf(KEY_C);

const SIG = { r: "0x1", s: "0x2" };
const FAR = Math.floor(Date.now() / 3_600_000) + 1000;
const alice = "0xa11ce";
const bob = "0xb0b";
const ETH = "0xe7e";
const USD = "0x05d";
const ROLLUP_VAULT = 2 ** 30 + 5;

const deposit = (key: string, token: string, vault: number, amount: string): unknown => ({
  type: "DepositRequest",
  amount,
  core_key: key,
  token_id: token,
  vault_id: vault,
});

const order = (
  key: string,
  sell: string,
  buy: string,
  vSell: number,
  vBuy: number,
  amountSell: string,
  amountBuy: string,
  nonce: number,
) => ({
  type: "OrderL2Request",
  amount_buy: amountBuy,
  amount_sell: amountSell,
  expiration_timestamp: FAR,
  nonce,
  public_key: key,
  signature: SIG,
  token_buy: buy,
  token_sell: sell,
  vault_id_buy: vBuy,
  vault_id_sell: vSell,
});

let dn: Devnet;
let txId = 0;
const add = async (tx: unknown): Promise<{ status: number; json: unknown }> => {
  const r = await post(dn.urls.gateway + "/gateway/v2/add_transaction", { tx_id: txId, tx });
  if (r.status === 200) txId++;
  return r;
};
const lastBatch = (): Batch => dn.chain.batch(dn.chain.lastBatchId()) as Batch;

/** A member's-eye check: every batch, fetched over HTTP and parsed by dacd's parser, reproduces its roots. */
async function verifyAll(): Promise<Map<number, { roots: Roots; gens: RootGens; seq: number }>> {
  const engine = new WasmEngine();
  const store = new MemoryNodeStore();
  const done = new Map<number, { roots: Roots; gens: RootGens; seq: number }>();
  // The roots held against: a naive replay of the served bodies that shares no code with dacd.
  const naive = naiveDevnetRoots(dn.chain);
  for (let id = 0; id <= dn.chain.lastBatchId(); id++) {
    const r = await get(
      `${dn.urls.availability}/availability_gateway/get_batch_data?batch_id=${id}&validate_rollup=True`,
    );
    expect(r.status).toBe(200);
    const upd = parseStateUpdate((r.json as { update: unknown }).update, dn.profile, id, {
      validateRollup: true,
    });
    const prev = upd.prevBatchId < 0 ? null : done.get(upd.prevBatchId)!;
    const { roots, rootGens, newNodes } = await computeRoots(
      engine,
      store,
      keptTrees(dn.profile, true),
      prev ? { roots: prev.roots, gens: prev.gens } : null,
      upd.changes,
      id,
    );
    store.putNodes(newNodes);
    const batch = dn.chain.batch(id) as Batch;
    for (const t of keptTrees(dn.profile, true)) {
      // The member's recomputation and the devnet's own roots equal the naive ones, and so does the
      // stated root unless a fault corrupted it.
      const want = hex64(naive.roots.get(id)![t.name]!);
      expect(toHex64(roots[t.name]!), `batch ${id} ${t.name}`).toBe(want);
      expect(toHex64(batch.roots[t.name]!), `batch ${id} ${t.name}`).toBe(want);
      const corrupted = naive.wrongStated.get(id)?.includes(t.name) ?? false;
      expect(bytesEqual(roots[t.name]!, upd.statedRoots[t.name]!)).toBe(!corrupted);
    }
    done.set(id, { roots, gens: rootGens, seq: prev ? prev.seq + 1 : 0 });
  }
  return done;
}

beforeAll(async () => {
  dn = await startDevnet({
    variant: "G",
    committee: [A.memberKey, B.memberKey],
    quorum: 2,
    batchSize: 100,
    batchIntervalMs: 0,
    allowDynamicConfig: true,
  });
});
afterAll(async () => {
  await dn?.close();
});

describe("devnet variant G: transaction gateway", () => {
  it("add_transaction answers TRANSACTION_PENDING and get_transaction returns the stored tx", async () => {
    const tx = deposit(alice, ETH, 1, "1000");
    const r = await add(tx);
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ code: "TRANSACTION_PENDING" });
    const g = await get(dn.urls.gateway + "/gateway/v2/get_transaction?tx_id=0");
    expect(g.status).toBe(200);
    expect(g.contentType).toBe("application/json");
    expect(g.json).toEqual(tx);
    expect((await get(dn.urls.gateway + "/gateway/v2/get_transaction?tx_id=999")).status).toBe(404);
  });

  it("refuses a tx without type, naming the field, and changes nothing", async () => {
    const r = await post(dn.urls.gateway + "/gateway/v2/add_transaction", {
      tx_id: txId,
      tx: { amount: "1" },
    });
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ code: "MALFORMED_REQUEST" });
    expect((r.json as { message: string }).message).toMatch(/^tx\.type/);
    expect((await get(`${dn.urls.gateway}/gateway/v2/get_transaction?tx_id=${txId}`)).status).toBe(404);
  });

  it.each([
    [{ ...(deposit(alice, ETH, 1, "1") as object), amount: "-1" }, "tx.amount"],
    [{ ...(deposit(alice, ETH, 1, "1") as object), amount: 5 }, "tx.amount"],
    [{ ...(deposit(alice, ETH, 1, "1") as object), core_key: "a11ce" }, "tx.core_key"],
    [{ ...(deposit(alice, ETH, 1, "1") as object), vault_id: 2 ** 31 }, "tx.vault_id"],
    [{ ...(deposit(alice, ETH, 1, "1") as object), extra: 1 }, "tx.extra"],
    [{ type: "FullWithdrawalRequest", vault_id: 1 }, "tx.core_key"],
    [{ type: "FalseFullWithdrawalRequest", requester_core_key: alice, vault_id: "1" }, "tx.vault_id"],
    [{ type: "Bogus" }, "tx.type"],
    [
      {
        type: "SettlementRequest",
        party_a_order: { ...order(alice, ETH, USD, 1, 2, "10", "10", 1), signature: { r: "0x1" } },
        party_b_order: order(bob, USD, ETH, 3, 4, "10", "10", 2),
        settlement_info: { party_a_sold: "10", party_b_sold: "10" },
      },
      "tx.party_a_order.signature.s",
    ],
    [
      {
        type: "SettlementRequest",
        party_a_order: order(alice, ETH, USD, 1, 2, "10", "10", 1),
        party_b_order: { ...order(bob, USD, ETH, 3, 4, "10", "10", 2), type: "OrderL1Request" },
        settlement_info: { party_a_sold: "10", party_b_sold: "10" },
      },
      "tx.party_b_order",
    ],
    [
      {
        type: "MultiTransactionRequest",
        txs: [deposit(alice, ETH, 1, "1"), { type: "MultiTransactionRequest", txs: [] }],
      },
      "tx.txs.1",
    ],
    [
      {
        type: "ConditionalTransferRequest",
        amount: "1",
        expiration_timestamp: FAR,
        nonce: 1,
        receiver_public_key: bob,
        receiver_vault_id: 3,
        sender_public_key: alice,
        sender_vault_id: 1,
        signature: SIG,
        token: ETH,
        fact: "0xabc",
        fact_registry_address: "0x" + "12".repeat(20),
      },
      "tx.fact",
    ],
    [
      {
        type: "MultiAssetTradeRequest",
        fulfillment_info: { given: [], received: [] },
        orders: [],
      },
      "tx.fulfillment_info.given",
    ],
  ])("refuses malformed tx %# naming %s", async (tx, field) => {
    const before = dn.status().first_unused_tx_id;
    const r = await post(dn.urls.gateway + "/gateway/v2/add_transaction", { tx_id: txId, tx });
    expect(r.status).toBe(400);
    expect(r.contentType).toBe("application/json");
    expect(Object.keys(r.json as object).sort()).toEqual(["code", "message"]);
    expect((r.json as { message: string }).message.startsWith(field)).toBe(true);
    expect(dn.status().first_unused_tx_id).toBe(before);
  });

  it("refuses a malformed envelope and a reused tx_id", async () => {
    expect((await post(dn.urls.gateway + "/gateway/v2/add_transaction", "{nope")).status).toBe(400);
    const r = await post(dn.urls.gateway + "/gateway/v2/add_transaction", {
      tx: deposit(alice, ETH, 1, "1"),
    });
    expect((r.json as { message: string }).message).toMatch(/^tx_id/);
    const dup = await post(dn.urls.gateway + "/gateway/v2/add_transaction", {
      tx_id: 0,
      tx: deposit(bob, ETH, 1, "1"),
    });
    expect(dup.status).toBe(409);
    // Resubmitting the identical transaction is idempotent.
    expect(
      (
        await post(dn.urls.gateway + "/gateway/v2/add_transaction", {
          tx_id: 0,
          tx: deposit(alice, ETH, 1, "1000"),
        })
      ).status,
    ).toBe(200);
  });

  it("serves the contract address at both paths as a JSON-quoted string", async () => {
    for (const p of [
      "/gateway/v2/testing/get_core_dex_address",
      "/gateway/v2/testing/get_starkex_dex_address",
    ]) {
      const r = await get(dn.urls.gateway + p);
      expect(r.status).toBe(200);
      expect(r.contentType).toBe("text/plain");
      expect(r.text).toMatch(/^"0x[0-9a-fA-F]{40}"$/);
    }
    expect((await post(dn.urls.gateway + "/gateway/v2/testing/get_core_dex_address")).status).toBe(405);
    expect((await get(dn.urls.gateway + "/nope")).status).toBe(404);
  });

  it("validates and accepts set_alternative_endpoint_config", async () => {
    const cfg = {
      url: "https://alt.example/tx",
      bearer_token: "<BEARER_TOKEN>",
      client_certificate: null,
      client_key: null,
      server_certificate: null,
      failure_description_url: null,
    };
    const ok = await post(dn.urls.gateway + "/gateway/v2/set_alternative_endpoint_config", cfg);
    expect(ok.status).toBe(200);
    expect(ok.contentType).toBe("application/json");
    expect(ok.json).toBe("Alternative strategy config is set");
    const bad = await post(dn.urls.gateway + "/gateway/v2/set_alternative_endpoint_config", {
      ...cfg,
      url: "ftp://x",
    });
    expect(bad.status).toBe(400);
    expect((bad.json as { message: string }).message).toMatch(/^url/);
    const { failure_description_url: _omit, ...missing } = cfg;
    const r2 = await post(dn.urls.gateway + "/gateway/v2/set_alternative_endpoint_config", missing);
    expect((r2.json as { message: string }).message).toMatch(/^failure_description_url/);
    const r3 = await post(dn.urls.gateway + "/gateway/v2/set_alternative_endpoint_config", {
      ...cfg,
      client_key: "k",
    });
    expect((r3.json as { message: string }).message).toMatch(/^client_key/);
  });
});

describe("devnet variant G: state machine", () => {
  it("applies every transaction type and replaces what cannot be applied", async () => {
    // Funding: alice ETH in vault 1 (1000 from the first test), bob USD in vault 3, a rollup vault.
    for (const tx of [
      deposit(bob, USD, 3, "5000"),
      { type: "MintRequest", amount: "70", core_key: alice, token_id: ETH, vault_id: ROLLUP_VAULT },
      { type: "WithdrawalRequest", amount: "100", core_key: alice, token_id: ETH, vault_id: 1 },
    ]) {
      expect((await add(tx)).status).toBe(200);
    }
    const b0 = (await dn.cutBatch())!;
    expect(b0.batchId).toBe(0);
    expect(b0.prevBatchId).toBe(-1);
    expect(b0.txs.map((t) => t.wasReplaced)).toEqual([false, false, false, false]);
    const b0f = b0 as Batch;
    expect(b0f.changes.vault!.get(1n)).toEqual({ key: 0xa11cen, token: 0xe7en, balance: 900n });
    expect(b0f.changes.rollup_vault!.get(BigInt(ROLLUP_VAULT))).toEqual({
      key: 0xa11cen,
      token: 0xe7en,
      balance: 70n,
    });
    expect(b0f.changes.vault!.has(BigInt(ROLLUP_VAULT))).toBe(false);

    const settlement = {
      type: "SettlementRequest",
      party_a_order: order(alice, ETH, USD, 1, 2, "100", "400", 7),
      party_b_order: {
        ...order(bob, USD, ETH, 3, 4, "800", "200", 8),
        fee_info: { fee_limit: "10", source_vault_id: 3, token_id: USD },
      },
      settlement_info: {
        party_a_sold: "50",
        party_b_sold: "200",
        party_b_fee_info: { destination_core_key: "0xfee", destination_vault_id: 99, fee_taken: "5" },
      },
    };
    const transfer = {
      type: "TransferRequest",
      amount: "10",
      expiration_timestamp: FAR,
      nonce: 3,
      receiver_public_key: bob,
      receiver_vault_id: 4,
      sender_public_key: alice,
      sender_vault_id: 1,
      signature: SIG,
      token: ETH,
    };
    const conditional = {
      ...transfer,
      type: "ConditionalTransferRequest",
      nonce: 4,
      fact: "ab".repeat(32),
      fact_registry_address: "0x" + "12".repeat(20),
    };
    const multiAsset = {
      type: "MultiAssetTradeRequest",
      fulfillment_info: {
        given: [
          { amount: "20", asset_id: ETH, public_key: alice, vault_id: 1 },
          { amount: "40", asset_id: USD, public_key: bob, vault_id: 3 },
        ],
        received: [
          { amount: "20", asset_id: ETH, public_key: bob, vault_id: 4 },
          { amount: "40", asset_id: USD, public_key: alice, vault_id: 2 },
        ],
      },
      orders: [
        {
          expiration_timestamp: FAR,
          facts: [],
          give: [{ amount: "20", asset_id: ETH, vault_id: 1 }],
          nonce: 1,
          public_key: alice,
          receive: [{ amount: "40", asset_id: USD, public_key: alice, vault_id: 2 }],
          signature: SIG,
          system_id: 1,
        },
        {
          expiration_timestamp: FAR,
          facts: [],
          give: [{ amount: "40", asset_id: USD, vault_id: 3 }],
          nonce: 2,
          public_key: bob,
          receive: [{ amount: "20", asset_id: ETH, public_key: bob, vault_id: 4 }],
          signature: SIG,
          system_id: 1,
        },
      ],
    };
    const txs = [
      settlement, // ok
      transfer, // ok
      transfer, // replay of the same transfer: replaced (tx_id differs, order id the same)
      conditional, // ok
      multiAsset, // ok
      { type: "WithdrawalRequest", amount: "999999", core_key: alice, token_id: ETH, vault_id: 1 }, // too much: replaced
      { type: "MultiTransactionRequest", txs: [deposit(alice, ETH, 1, "1"), deposit(bob, ETH, 1, "1")] }, // 2nd fails: none applied
      { type: "FullWithdrawalRequest", core_key: alice, vault_id: ROLLUP_VAULT }, // ok: rollup vault emptied
      { type: "FalseFullWithdrawalRequest", requester_core_key: bob, vault_id: 1 }, // ok: no-op
      { type: "FalseFullWithdrawalRequest", requester_core_key: alice, vault_id: 1 }, // alice owns it: replaced
      deposit(alice, ETH, 1, String(2n ** 63n - 1n)), // range: replaced
    ];
    for (const tx of txs) expect((await add(tx)).status).toBe(200);
    const b1 = (await dn.cutBatch()) as Batch;
    expect(b1.prevBatchId).toBe(0);
    expect(b1.sequenceNumber).toBe(1);
    expect(b1.txs.map((t) => t.wasReplaced)).toEqual([
      false,
      false,
      true,
      false,
      false,
      true,
      true,
      false,
      false,
      true,
      true,
    ]);
    for (const t of b1.txs.filter((x) => x.wasReplaced)) expect(t.altTxs.length).toBeGreaterThan(0);
    const v = (id: number): unknown =>
      b1.changes.vault!.get(BigInt(id)) ?? b1.changes.rollup_vault!.get(BigInt(id));
    // alice ETH: 900 - 50 (settlement) - 10 (transfer) - 10 (conditional) - 20 (multi-asset) = 810
    expect(v(1)).toEqual({ key: 0xa11cen, token: 0xe7en, balance: 810n });
    // alice USD: +200 (settlement) + 40 (multi-asset)
    expect(v(2)).toEqual({ key: 0xa11cen, token: 0x05dn, balance: 240n });
    // bob USD: 5000 - 200 - 5 fee - 40
    expect(v(3)).toEqual({ key: 0xb0bn, token: 0x05dn, balance: 4755n });
    // bob ETH: 50 + 10 + 10 + 20
    expect(v(4)).toEqual({ key: 0xb0bn, token: 0xe7en, balance: 90n });
    expect(v(99)).toEqual({ key: 0xfeen, token: 0x05dn, balance: 5n });
    expect(v(ROLLUP_VAULT)).toEqual({ key: 0xa11cen, token: 0xe7en, balance: 0n });
    // Orders: two settlement orders, two transfers, two multi-asset orders.
    expect(([...b1.changes.order!.values()] as bigint[]).sort((x, y) => Number(x - y))).toEqual([
      10n,
      10n,
      20n,
      40n,
      50n,
      200n,
    ]);

    const info = await get(`${dn.urls.feeder}/feeder_gateway/v2/get_batch_info?batch_id=1`);
    expect(info.status).toBe(200);
    const j = info.json as {
      txs_info: { tx_id: number; was_replaced: boolean; alt_txs: unknown[]; original_tx: unknown }[];
    };
    expect(Object.keys(j).sort()).toEqual(["prev_batch_id", "sequence_number", "time_created", "txs_info"]);
    expect(j.txs_info[2]).toMatchObject({
      tx_id: b1.txs[2]!.txId,
      was_replaced: true,
      original_tx: transfer,
    });
    expect(j.txs_info[2]!.alt_txs[0]).toMatchObject({ type: "FalseFullWithdrawalRequest" });
  });

  it("serves batches a member verifies, with rollup leaves only when asked", async () => {
    await verifyAll();
    const noRollup = await get(
      `${dn.urls.availability}/availability_gateway/get_batch_data?batch_id=0&validate_rollup=False`,
    );
    expect(Object.keys((noRollup.json as { update: object }).update).sort()).toEqual([
      "order_root",
      "orders",
      "prev_batch_id",
      "vault_root",
      "vaults",
    ]);
    const omitted = await get(`${dn.urls.availability}/availability_gateway/get_batch_data?batch_id=0`);
    expect(omitted.json).toEqual(noRollup.json);
    const withRollup = await get(
      `${dn.urls.availability}/availability_gateway/get_batch_data?batch_id=0&validate_rollup=True`,
    );
    const u = (withRollup.json as { update: Record<string, unknown> }).update;
    expect(u.rollup_vaults).toEqual({
      [String(ROLLUP_VAULT)]: { stark_key: alice, token: ETH, balance: "70" },
    });
    expect(u.vault_root).toMatch(/^[0-9a-f]{64}$/);
    expect(
      (
        await get(
          `${dn.urls.availability}/availability_gateway/get_batch_data?batch_id=0&validate_rollup=maybe`,
        )
      ).status,
    ).toBe(400);
    // A batch that does not exist yet: 200 {"update": null}, as StarkWare's mock gateway answers.
    const notYet = await get(`${dn.urls.availability}/availability_gateway/get_batch_data?batch_id=77`);
    expect(notYet.status).toBe(200);
    expect(notYet.json).toEqual({ update: null });
    expect((await get(`${dn.urls.availability}/availability_gateway/get_batch_data`)).status).toBe(400);
  });
});

describe("devnet variant G: feeder", () => {
  it("answers every feeder endpoint", async () => {
    const f = dn.urls.feeder;
    expect((await get(`${f}/feeder_gateway/v2/get_last_batch_id`)).json).toBe(1);
    expect((await get(`${f}/feeder_gateway/v2/get_prev_batch_id?batch_id=1`)).json).toBe(0);
    expect((await get(`${f}/feeder_gateway/v2/get_prev_batch_id?batch_id=0`)).json).toBe(-1);
    expect((await get(`${f}/feeder_gateway/v2/get_batch_enclosing_ids?batch_id=0`)).json).toEqual([0, 3]);
    const full = (await get(`${f}/feeder_gateway/get_batch_info?batch_id=1`)).json as Record<
      string,
      { height: number; root: string }
    >;
    expect(full.vault_root).toEqual({ height: 31, root: lastBatch().stated.vault });
    expect(full.order_root!.height).toBe(251);
    expect(full.prev_vault_root).toEqual({ height: 31, root: dn.chain.batch(0)!.stated.vault });
    const b1 = lastBatch();
    const ids = await get(
      `${f}/feeder_gateway/get_batch_ids?vault_root=${b1.stated.vault}&order_root=0x${b1.stated.order}&sequence_number=1`,
    );
    expect(ids.json).toEqual([1]);
    expect(
      (
        await get(
          `${f}/feeder_gateway/get_batch_ids?vault_root=${b1.stated.vault}&order_root=${b1.stated.order}&sequence_number=0`,
        )
      ).json,
    ).toEqual([]);
    expect(
      (await get(`${f}/feeder_gateway/get_batch_ids?vault_root=zz&order_root=1&sequence_number=0`)).status,
    ).toBe(400);
  });
});

describe("devnet variant G: approvals", () => {
  it("accepts committee signatures over the right claim and counts quorum", async () => {
    const v = await verifyAll();
    const roots = v.get(1)!;
    const body = approvalBody(dn.profile, { batchId: 1, sequenceNumber: roots.seq, roots: roots.roots }, A);
    const r = await post(`${dn.urls.availability}/availability_gateway/approve_new_roots`, body);
    expect(r.status).toBe(200);
    expect(r.contentType).toBe("application/str");
    expect(r.text).toBe("signature accepted");
    // Signing again counts once.
    expect((await post(`${dn.urls.availability}/availability_gateway/approve_new_roots`, body)).status).toBe(
      200,
    );
    let q = (await get(`${dn.urls.availability}/devnet/quorum?batch_id=1`)).json as {
      count: number;
      reached: boolean;
    };
    expect(q).toMatchObject({ count: 1, reached: false });
    const waiting = dn.waitForQuorum(1, 5000);
    const rb = await post(
      `${dn.urls.availability}/availability_gateway/approve_new_roots`,
      approvalBody(dn.profile, { batchId: 1, sequenceNumber: roots.seq, roots: roots.roots }, B),
    );
    expect(rb.status).toBe(200);
    expect(await waiting).toMatchObject({ count: 2, reached: true, quorum: 2 });
    q = (await get(`${dn.urls.availability}/devnet/quorum?batch_id=1`)).json as {
      count: number;
      reached: boolean;
    };
    expect(q.reached).toBe(true);
  });

  it("refuses a non-committee key, a wrong claim, a mismatched member key and bad shapes", async () => {
    const v = await verifyAll();
    const ok = v.get(0)!;
    const url = `${dn.urls.availability}/availability_gateway/approve_new_roots`;
    const outsider = await post(
      url,
      approvalBody(dn.profile, { batchId: 0, sequenceNumber: ok.seq, roots: ok.roots }, C),
    );
    expect(outsider.status).toBe(403);
    expect(outsider.json).toMatchObject({ code: "NOT_IN_COMMITTEE" });
    const wrongSeq = await post(
      url,
      approvalBody(dn.profile, { batchId: 0, sequenceNumber: 5, roots: ok.roots }, A),
    );
    expect(wrongSeq.status).toBe(400);
    expect(wrongSeq.json).toMatchObject({ code: "WRONG_CLAIM" });
    const good = approvalBody(dn.profile, { batchId: 0, sequenceNumber: ok.seq, roots: ok.roots }, A);
    const mismatch = await post(url, { ...good, member_key: B.memberKey });
    expect(mismatch.json).toMatchObject({ code: "SIGNATURE_MISMATCH" });
    expect((await post(url, { ...good, signature: { r: "0x1", s: "0x2" } })).status).toBe(400);
    expect(((await post(url, { ...good, claim_hash: "0x12" })).json as { message: string }).message).toMatch(
      /^claim_hash/,
    );
    expect((await post(url, { ...good, batch_id: 99 })).status).toBe(404);
    expect(dn.status().batches.length).toBe(2);
    expect((await post(url, good)).status).toBe(200);
  });

  it("reports the blockchain type", async () => {
    const r = await post(`${dn.urls.availability}/availability_gateway/get_blockchain_type`);
    expect(r.status).toBe(200);
    expect(r.contentType).toBe("application/str");
    expect(r.text).toBe("ETHEREUM");
  });
});

describe("devnet variant G: faults", () => {
  it("rejects the head batch: its state is discarded and the next batch names an earlier prev_batch_id", async () => {
    expect((await add(deposit(bob, ETH, 50, "77"))).status).toBe(200);
    const b2 = (await dn.cutBatch()) as Batch;
    expect(b2.batchId).toBe(2);
    const rej = await post(`${dn.urls.availability}/devnet/fault`, { type: "reject_batch" });
    expect(rej.json).toMatchObject({ rejected: 2, head_batch_id: 1 });
    // Vault 50 is empty again, so carol may take it.
    expect((await add(deposit("0xca401", USD, 50, "5"))).status).toBe(200);
    const b3 = (await dn.cutBatch()) as Batch;
    expect(b3.prevBatchId).toBe(1);
    expect(b3.sequenceNumber).toBe(2);
    expect(b3.txs[0]!.wasReplaced).toBe(false);
    expect((await get(`${dn.urls.feeder}/feeder_gateway/v2/get_prev_batch_id?batch_id=3`)).json).toBe(1);
    const v = await verifyAll();
    const body = approvalBody(
      dn.profile,
      { batchId: 2, sequenceNumber: v.get(2)!.seq, roots: v.get(2)!.roots },
      A,
    );
    expect((await post(`${dn.urls.availability}/availability_gateway/approve_new_roots`, body)).status).toBe(
      409,
    );
    const body3 = approvalBody(
      dn.profile,
      { batchId: 3, sequenceNumber: v.get(3)!.seq, roots: v.get(3)!.roots },
      A,
    );
    expect((await post(`${dn.urls.availability}/availability_gateway/approve_new_roots`, body3)).status).toBe(
      200,
    );
  });

  it("publishes a wrong root on demand; signing the stated roots is refused", async () => {
    await post(`${dn.urls.availability}/devnet/fault`, { type: "wrong_root" });
    expect((await add(deposit(bob, ETH, 51, "1"))).status).toBe(200);
    const b = (await dn.cutBatch()) as Batch;
    expect(b.stated.vault).not.toBe(toHex64(b.roots.vault!));
    // Wrong against the naive replay too, and only that root: the computed ones stay right.
    expect(naiveDevnetRoots(dn.chain).wrongStated.get(b.batchId)).toEqual(["vault"]);
    const r = await get(
      `${dn.urls.availability}/availability_gateway/get_batch_data?batch_id=${b.batchId}&validate_rollup=True`,
    );
    const upd = parseStateUpdate((r.json as { update: unknown }).update, dn.profile, b.batchId, {
      validateRollup: true,
    });
    const statedBody = approvalBody(
      dn.profile,
      { batchId: b.batchId, sequenceNumber: b.sequenceNumber, roots: upd.statedRoots },
      A,
    );
    expect(
      (await post(`${dn.urls.availability}/availability_gateway/approve_new_roots`, statedBody)).json,
    ).toMatchObject({ code: "WRONG_CLAIM" });
  });

  it("answers 503, hangs and truncates on demand, then recovers", async () => {
    const url = `${dn.urls.feeder}/feeder_gateway/v2/get_last_batch_id`;
    await post(`${dn.urls.availability}/devnet/fault`, { type: "unavailable", count: 2, scope: "feeder" });
    expect((await get(url)).status).toBe(503);
    expect((await get(url)).status).toBe(503);
    expect((await get(url)).status).toBe(200);
    await post(`${dn.urls.availability}/devnet/fault`, {
      type: "hang",
      ms: 300,
      path: "/feeder_gateway/v2/get_last",
    });
    const t0 = Date.now();
    expect((await get(url)).status).toBe(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
    await post(`${dn.urls.availability}/devnet/fault`, { type: "truncate", scope: "availability" });
    const tr = await get(`${dn.urls.availability}/availability_gateway/get_batch_data?batch_id=0`);
    expect(tr.status).toBe(200);
    expect(tr.json).toBeUndefined();
    expect(
      (await get(`${dn.urls.availability}/availability_gateway/get_batch_data?batch_id=0`)).json,
    ).toBeDefined();
    const bad = await post(`${dn.urls.availability}/devnet/fault`, { type: "explode" });
    expect(bad.status).toBe(400);
  });

  it("exposes status with batches and quorum", async () => {
    const s = (await get(`${dn.urls.availability}/devnet/status`)).json as {
      batches: { rejected: boolean; quorum: { reached: boolean } }[];
    };
    expect(s.batches[1]!.quorum.reached).toBe(true);
    expect(s.batches[2]!.rejected).toBe(true);
  });
});
