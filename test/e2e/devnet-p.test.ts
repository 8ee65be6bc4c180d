import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDevnet, type Devnet } from "../../src/devnet/main.js";
import { approvalBody, get, post } from "../../src/devnet/client.js";
import type { Batch } from "../../src/devnet/batcher.js";
import { EthSigner } from "../../src/signer/eth-signer.js";
import { parseStateUpdate } from "../../src/wire/parse-update.js";
import { hex64, naiveDevnetRoots } from "../helpers/naive-chain.js";
import { computeRoots, type TreeState } from "../../src/verifier/trees/update/compute-roots.js";
import { MemoryNodeStore } from "../../src/storage/memory-store.js";
import { WasmEngine } from "../../src/verifier/hash/wasm-engine.js";
import { keptTrees } from "../../src/model/profile.js";
import { toHex64 } from "../../src/util/bytes.js";

const signer = new EthSigner(new Uint8Array(32).fill(7));
const SIG = { r: "0x1", s: "0x2" };
const FAR = Math.floor(Date.now() / 3_600_000) + 1000;
const alice = "0xa11ce";
const bob = "0xb0b";
const BTC = "0xb7c";

let dn: Devnet;
const addAt = (txId: number, tx: unknown): ReturnType<typeof post> =>
  post(dn.urls.gateway + "/add_transaction", { tx_id: txId, tx });
const firstUnused = async (): Promise<number> => {
  const r = await get(dn.urls.gateway + "/get_first_unused_tx_id");
  expect(r.contentType).toBe("text/plain");
  return Number(r.text);
};

const perpOrder = (
  position: string,
  key: string,
  buying: boolean,
  synthetic: string,
  collateral: string,
  fee: string,
  nonce: number,
) => ({
  type: "ORDER",
  position_id: position,
  public_key: key,
  synthetic_asset_id: BTC,
  synthetic_amount: synthetic,
  collateral_amount: collateral,
  fee_amount: fee,
  is_buying_synthetic: buying,
  nonce,
  expiration_timestamp: FAR,
  signature: SIG,
});

beforeAll(async () => {
  dn = await startDevnet({
    variant: "P",
    batchSize: 1000,
    batchIntervalMs: 0,
    blockedTxTypes: ["FUNDING_TICK"],
  });
});
afterAll(async () => {
  await dn?.close();
});

describe("devnet variant P: transaction gateway", () => {
  it("get_first_unused_tx_id is 0 when empty and follows gaps", async () => {
    expect(await firstUnused()).toBe(0);
    const dep = (n: string) => ({ type: "DEPOSIT", amount: n, position_id: "1", public_key: alice });
    const r = await addAt(0, dep("1000"));
    expect(r.status).toBe(200);
    expect(r.contentType).toBe("application/json");
    expect(r.json).toEqual({ code: "TRANSACTION_RECEIVED", tx_id: 0 });
    expect((await addAt(2, dep("10"))).status).toBe(200);
    expect(await firstUnused()).toBe(1);
    // A batch only takes contiguous ids: tx 2 waits for tx 1.
    expect(dn.status().ready_txs).toBe(1);
    expect((await addAt(1, dep("5"))).status).toBe(200);
    expect(await firstUnused()).toBe(3);
    expect(dn.status().ready_txs).toBe(3);
  });

  it("get_first_unused_tx_id stays consistent under concurrent submissions", async () => {
    const start = await firstUnused();
    const ids = Array.from({ length: 20 }, (_, i) => start + i).reverse();
    const results = await Promise.all(
      ids.map((id) =>
        addAt(id, {
          type: "DEPOSIT",
          amount: "1",
          position_id: String(10 + (id % 3)),
          public_key: "0x" + (0x100 + (id % 3)).toString(16),
        }),
      ),
    );
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(await firstUnused()).toBe(start + 20);
  });

  it("refuses malformed transactions naming the field, changing nothing", async () => {
    const id = await firstUnused();
    const cases: [unknown, string][] = [
      [{ type: "DEPOSIT", amount: "1", position_id: 5, public_key: alice }, "tx.position_id"],
      [{ type: "DEPOSIT", amount: "1", position_id: String(2n ** 64n), public_key: alice }, "tx.position_id"],
      [{ type: "DEPOSIT", amount: "x", position_id: "1", public_key: alice }, "tx.amount"],
      [{ type: "DEPOSIT", amount: "1", position_id: "1" }, "tx.public_key"],
      [
        { type: "DEPOSIT", amount: "1", position_id: "1", public_key: "0x" + "f".repeat(64) },
        "tx.public_key",
      ],
      [{ amount: "1" }, "tx.type"],
      [
        {
          type: "TRADE",
          party_a_order: perpOrder("1", alice, true, "1", "1", "0", 1),
          party_b_order: perpOrder("2", bob, true, "1", "1", "0", 2),
          actual_synthetic: "1",
          actual_collateral: "1",
          actual_a_fee: "0",
          actual_b_fee: "0",
        },
        "tx.party_b_order.is_buying_synthetic",
      ],
      [
        {
          type: "TRADE",
          party_a_order: {
            ...perpOrder("1", alice, true, "1", "1", "0", 1),
            synthetic_asset_id: "0x" + "1".repeat(31),
          },
          party_b_order: perpOrder("2", bob, false, "1", "1", "0", 2),
          actual_synthetic: "1",
          actual_collateral: "1",
          actual_a_fee: "0",
          actual_b_fee: "0",
        },
        "tx.party_a_order.synthetic_asset_id",
      ],
      [
        {
          type: "WITHDRAWAL",
          amount: "1",
          position_id: "1",
          public_key: alice,
          nonce: -1,
          expiration_timestamp: FAR,
          signature: SIG,
        },
        "tx.nonce",
      ],
      [
        {
          type: "TRANSFER",
          amount: "1",
          sender_position_id: "1",
          sender_public_key: alice,
          receiver_position_id: "1",
          receiver_public_key: alice,
          nonce: 1,
          expiration_timestamp: FAR,
          signature: SIG,
        },
        "tx.receiver_position_id",
      ],
    ];
    for (const [tx, field] of cases) {
      const r = await addAt(id, tx);
      expect(r.status, JSON.stringify(tx)).toBe(400);
      expect(
        (r.json as { message: string }).message.startsWith(field),
        (r.json as { message: string }).message,
      ).toBe(true);
    }
    expect(await firstUnused()).toBe(id);
  });

  it("blocks filtered transaction types and lets the filter change", async () => {
    const id = await firstUnused();
    const tick = { type: "FUNDING_TICK", global_funding_indices: { [BTC]: String(1n << 32n) }, timestamp: 1 };
    const r = await addAt(id, tick);
    expect(r.status).toBe(403);
    expect(r.json).toMatchObject({ code: "TRANSACTION_BLOCKED" });
    expect((await post(`${dn.urls.availability}/devnet/tx_filter`, { blocked: [] })).status).toBe(200);
    expect((await addAt(id, tick)).status).toBe(200);
  });

  it("serves the contract address and refuses alternative config without dynamic configuration", async () => {
    for (const p of ["/get_core_contract_address", "/get_starkex_contract_address"]) {
      const r = await get(dn.urls.gateway + p);
      expect(r.contentType).toBe("text/plain");
      expect(JSON.parse(r.text)).toMatch(/^0x[0-9a-fA-F]{40}$/);
    }
    const cfg = {
      url: "https://alt.example",
      bearer_token: null,
      client_certificate: null,
      client_key: null,
      server_certificate: null,
      failure_description_url: null,
    };
    const r = await post(dn.urls.gateway + "/v2/gateway/set_alternative_endpoint_config", cfg);
    expect(r.status).toBe(200);
    expect(r.json).toMatch(/not set/);
    expect(dn.status().alternative_endpoint).toBeNull();
  });
});

describe("devnet variant P: state, feeder and availability", () => {
  it("applies deposits, transfers, withdrawals, trades and funding", async () => {
    const b0 = (await dn.cutBatch()) as Batch;
    expect(b0.txs.every((t) => !t.wasReplaced)).toBe(true);
    expect(b0.changes.position!.get(1n)).toMatchObject({ publicKey: 0xa11cen, collateral: 1015n });

    let id = await firstUnused();
    const txs = [
      { type: "DEPOSIT", amount: "5000", position_id: "2", public_key: bob },
      {
        type: "TRANSFER",
        amount: "15",
        sender_position_id: "1",
        sender_public_key: alice,
        receiver_position_id: "2",
        receiver_public_key: bob,
        nonce: 1,
        expiration_timestamp: FAR,
        signature: SIG,
      },
      {
        type: "WITHDRAWAL",
        amount: "100",
        position_id: "1",
        public_key: alice,
        nonce: 2,
        expiration_timestamp: FAR,
        signature: SIG,
      },
      {
        type: "TRADE",
        party_a_order: perpOrder("1", alice, true, "10", "500", "10", 3),
        party_b_order: perpOrder("2", bob, false, "10", "400", "10", 4),
        actual_synthetic: "4",
        actual_collateral: "180",
        actual_a_fee: "2",
        actual_b_fee: "3",
      },
      {
        type: "WITHDRAWAL",
        amount: "99999",
        position_id: "1",
        public_key: alice,
        nonce: 5,
        expiration_timestamp: FAR,
        signature: SIG,
      }, // too much
      { type: "DEPOSIT", amount: "1", position_id: "1", public_key: bob }, // not bob's position
      {
        type: "WITHDRAWAL",
        amount: "1",
        position_id: "1",
        public_key: alice,
        nonce: 6,
        expiration_timestamp: 1,
        signature: SIG,
      }, // expired
      { type: "FUNDING_TICK", global_funding_indices: { [BTC]: String(3n << 32n) }, timestamp: 5 },
      { type: "DEPOSIT", amount: "0", position_id: "1", public_key: alice }, // touches alice: funding applied
    ];
    for (const tx of txs) expect((await addAt(id++, tx)).status).toBe(200);
    const b1 = (await dn.cutBatch()) as Batch;
    expect(b1.txs.map((t) => t.wasReplaced)).toEqual([
      false,
      false,
      false,
      false,
      true,
      true,
      true,
      false,
      false,
    ]);
    expect(b1.txs[4]!.altTxs[0]).toMatchObject({ type: "NO_OP" });
    // The funding tick of batch 0 set BTC's index to 2^32 before anyone held BTC: alice's cached index is 2^32.
    // alice: 1015 - 15 - 100 - 180 - 2 = 718, then funding (3-1)*4 = 8 → 710; BTC +4 at index 3·2^32.
    expect(b1.changes.position!.get(1n)).toEqual({
      publicKey: 0xa11cen,
      collateral: 710n,
      assets: [{ assetId: 0xb7cn, balance: 4n, fundingIndex: 3n << 32n }],
    });
    // bob: 5000 + 15 + 180 - 3 = 5192, BTC -4 (not touched after the tick).
    expect(b1.changes.position!.get(2n)).toEqual({
      publicKey: 0xb0bn,
      collateral: 5192n,
      assets: [{ assetId: 0xb7cn, balance: -4n, fundingIndex: 1n << 32n }],
    });
    expect(b1.changes.position!.get(0n)).toMatchObject({ collateral: 5n });
    expect(([...b1.changes.order!.values()] as bigint[]).sort((x, y) => Number(x - y))).toEqual([
      4n,
      4n,
      15n,
      100n,
    ]);
  });

  it("serves feeder batch info in the variant P form", async () => {
    const f = dn.urls.feeder;
    expect((await get(`${f}/feeder_gateway/get_last_batch_id`)).json).toBe(1);
    expect((await get(`${f}/get_prev_batch_id?batch_id=1`)).json).toBe(0);
    const info = (await get(`${f}/feeder_gateway/get_batch_info?batch_id=1`)).json as Record<string, unknown>;
    expect(Object.keys(info).sort()).toEqual([
      "order_root",
      "position_root",
      "previous_batch_id",
      "previous_order_root",
      "previous_position_root",
      "sequence_number",
      "time_created",
      "txs_info",
    ]);
    const b0 = dn.chain.batch(0)!;
    expect(info.previous_position_root).toBe(BigInt("0x" + b0.stated.position).toString());
    expect(info.time_created).toMatch(/^[0-9]+$/);
    expect((info.txs_info as Record<string, unknown>[])[4]).toMatchObject({ was_replaced: true });
    expect(Object.keys((info.txs_info as object[])[0]!).sort()).toEqual([
      "alt_txs",
      "original_tx",
      "original_tx_id",
      "was_replaced",
    ]);
    const i0 = (await get(`${f}/feeder_gateway/get_batch_info?batch_id=0`)).json as Record<string, unknown>;
    expect(i0.previous_batch_id).toBe(-1);
  });

  it("serves batches a member verifies and accepts its signature", async () => {
    const engine = new WasmEngine();
    const store = new MemoryNodeStore();
    let prev: TreeState | null = null;
    const naive = naiveDevnetRoots(dn.chain, 1);
    expect(naive.wrongStated.size).toBe(0);
    for (let id = 0; id <= 1; id++) {
      const r = await get(`${dn.urls.availability}/availability_gateway/get_batch_data?batch_id=${id}`);
      expect(r.contentType).toBe("application/json");
      const upd = parseStateUpdate((r.json as { update: unknown }).update, dn.profile, id);
      const { roots, rootGens, newNodes } = await computeRoots(
        engine,
        store,
        keptTrees(dn.profile, false),
        prev,
        upd.changes,
        id,
      );
      store.putNodes(newNodes);
      // Against a naive replay that shares no code with dacd (the devnet's stated roots are dacd's).
      expect(toHex64(roots.position!)).toBe(hex64(naive.roots.get(id)!.position!));
      expect(toHex64(roots.order!)).toBe(hex64(naive.roots.get(id)!.order!));
      expect(toHex64(roots.position!)).toBe(dn.chain.batch(id)!.stated.position);
      expect(toHex64(roots.order!)).toBe(dn.chain.batch(id)!.stated.order);
      const a = await post(
        `${dn.urls.availability}/availability_gateway/approve_new_roots`,
        approvalBody(dn.profile, { batchId: id, sequenceNumber: id, roots }, signer),
      );
      expect(a.status).toBe(200);
      expect(a.text).toBe("signature accepted");
      prev = { roots, gens: rootGens };
    }
    // Without a configured committee any correctly recovered signer counts; quorum defaults to 1.
    expect((await dn.waitForQuorum(1, 1000)).reached).toBe(true);
    const bt = await post(`${dn.urls.availability}/availability_gateway/get_blockchain_type`);
    expect([bt.contentType, bt.text]).toEqual(["application/str", "ETHEREUM"]);
  });
});
