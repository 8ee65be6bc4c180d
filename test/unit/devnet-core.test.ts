import { describe, expect, it } from "vitest";
import { TxPool } from "../../src/devnet/txpool.js";
import { Draft, Journal, Table } from "../../src/devnet/state/tables.js";
import { orderId } from "../../src/devnet/txs/order-id.js";
import { parseGTx } from "../../src/devnet/txs/parse-g.js";
import { TxError } from "../../src/devnet/txs/fields.js";
import { Faults, corruptRoot } from "../../src/devnet/faults.js";
import { Approvals } from "../../src/devnet/approvals.js";
import { parseAlternativeConfig } from "../../src/devnet/servers/gateway.js";
import { TxFactory } from "../../src/devnet/traffic.js";
import { GState } from "../../src/devnet/state/g-state.js";
import { PState } from "../../src/devnet/state/p-state.js";

describe("devnet tx pool", () => {
  it("tracks the first unused id across gaps and takes contiguous ids only", () => {
    const p = new TxPool<number>();
    expect(p.firstUnused()).toBe(0);
    expect(p.add(1, {}, 1)).toBe("added");
    expect(p.firstUnused()).toBe(0);
    expect(p.take(10)).toEqual([]);
    expect(p.add(0, { a: 1 }, 0)).toBe("added");
    expect(p.firstUnused()).toBe(2);
    expect(p.add(0, { a: 1 }, 0)).toBe("same");
    expect(p.add(0, { a: 2 }, 0)).toBe("duplicate");
    expect(p.take(1).map((t) => t.txId)).toEqual([0]);
    expect(p.ready()).toBe(1);
  });
});

describe("devnet tables", () => {
  it("commits drafts, journals old values and undoes a batch", () => {
    const t = new Table<number>("t");
    t.rows.set(1n, 10);
    const j = new Journal();
    const d = new Draft();
    d.set(t, 1n, 11);
    d.set(t, 2n, 20);
    expect(d.get(t, 1n)).toBe(11);
    expect(t.rows.get(1n)).toBe(10);
    d.commit(j);
    expect(j.touched(t).sort()).toEqual([1n, 2n]);
    j.undo();
    expect([...t.rows.entries()]).toEqual([[1n, 10]]);
  });
});

describe("devnet order ids and parsing", () => {
  it("derives deterministic order ids within the tree height", () => {
    const a = orderId("X", [1n, 2, "z"], 64);
    expect(orderId("X", [1n, 2, "z"], 64)).toBe(a);
    expect(a < 2n ** 64n).toBe(true);
    expect(orderId("X", [1n, 2, "y"], 64)).not.toBe(a);
  });

  it("names the offending field in nested transactions", () => {
    const ctx = { vaultHeight: 31, orderHeight: 251 };
    try {
      parseGTx(
        {
          type: "MultiTransactionRequest",
          txs: [{ type: "DepositRequest", amount: "1", core_key: "0x1", token_id: "0x1", vault_id: -1 }],
        },
        ctx,
      );
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(TxError);
      expect((e as TxError).field).toBe("tx.txs.0.vault_id");
    }
  });

  it("validates the alternative endpoint configuration", () => {
    const ok = {
      url: "http://x",
      bearer_token: null,
      client_certificate: null,
      client_key: null,
      server_certificate: null,
      failure_description_url: null,
    };
    expect(parseAlternativeConfig(ok).url).toBe("http://x");
    expect(() => parseAlternativeConfig({ ...ok, bearer_token: 5 })).toThrow(/^bearer_token/);
    expect(() => parseAlternativeConfig({ ...ok, server_certificate: "nope" })).toThrow(
      /^server_certificate/,
    );
    expect(() => parseAlternativeConfig({ ...ok, url: null })).toThrow(/^url/);
  });
});

describe("devnet faults and approvals", () => {
  it("plays request faults per scope and path", () => {
    const f = new Faults();
    f.addRequestFault("unavailable", 1, { scope: "feeder", path: "/a" });
    expect(f.onRequest("gateway", "/a")).toBeNull();
    expect(f.onRequest("feeder", "/b")).toBeNull();
    expect(f.onRequest("feeder", "/a/x")).toEqual({ kind: "unavailable" });
    expect(f.onRequest("feeder", "/a")).toBeNull();
    expect(corruptRoot("0".repeat(64))).toBe("0".repeat(63) + "1");
  });

  it("counts distinct signers toward quorum", async () => {
    const a = new Approvals(2, new Set(["0xaa"]));
    expect(a.inCommittee("0xAA")).toBe(true);
    expect(a.inCommittee("0xbb")).toBe(false);
    const waiting = a.wait(3);
    a.record(3, "0xaa", "s");
    a.record(3, "0xaa", "s");
    expect(a.state(3)).toMatchObject({ count: 1, reached: false });
    a.record(3, "0xbb", "s");
    await waiting;
    expect(a.reached(3)).toBe(true);
  });
});

describe("devnet traffic factory", () => {
  it("produces transactions that parse (valid) or are refused (invalid)", () => {
    for (const variant of ["G", "P"] as const) {
      const f = new TxFactory(variant, 3);
      const machine =
        variant === "G"
          ? new GState({ vaultHeight: 31, orderHeight: 251 })
          : new PState({ positionHeight: 64, orderHeight: 64 });
      let invalid = 0;
      for (let i = 0; i < 300; i++) {
        const t = f.next();
        if (t.invalid) {
          invalid++;
          expect(() => machine.parse(t.tx)).toThrow(TxError);
        } else {
          expect(() => machine.parse(t.tx)).not.toThrow();
        }
      }
      expect(invalid).toBeGreaterThan(10);
    }
  });
});
