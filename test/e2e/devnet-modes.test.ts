import { readFileSync } from "node:fs";
import { Command } from "commander";
import { afterEach, describe, expect, it, vi } from "vitest";
import { startDevnet, type Devnet } from "../../src/devnet/main.js";
import { registerDevnetCommand } from "../../src/devnet/cli.js";
import { get, post } from "../../src/devnet/client.js";
import { parseStateUpdate } from "../../src/wire/parse-update.js";
import { hex64, naiveDevnetRoots } from "../helpers/naive-chain.js";
import { computeRoots, type TreeState } from "../../src/verifier/trees/update/compute-roots.js";
import { MemoryNodeStore } from "../../src/storage/memory-store.js";
import { WasmEngine } from "../../src/verifier/hash/wasm-engine.js";
import { keptTrees } from "../../src/model/profile.js";
import { toHex64 } from "../../src/util/bytes.js";

const VECTORS = new URL("../fixtures/vectors/", import.meta.url).pathname;
const spotResponses = `${VECTORS}spot-chain/responses.json`;
const spotExpected = `${VECTORS}spot-chain/expected.json`;

let dn: Devnet | undefined;
afterEach(async () => {
  await dn?.close();
  dn = undefined;
});

interface Expected {
  member_key: string;
  batches: { batch_id: number; seq: number; claim_hash: string; signature: string }[];
}

describe("devnet replay mode", () => {
  it("serves the recorded spot chain and checks approvals against expected.json", async () => {
    dn = await startDevnet({ variant: "G", replay: spotResponses, expected: spotExpected });
    const responses = JSON.parse(readFileSync(spotResponses, "utf8")) as {
      update: Record<string, unknown>;
    }[];
    const expected = JSON.parse(readFileSync(spotExpected, "utf8")) as Expected;
    expect((await get(`${dn.urls.feeder}/feeder_gateway/v2/get_last_batch_id`)).json).toBe(
      responses.length - 1,
    );
    expect((await get(`${dn.urls.feeder}/feeder_gateway/v2/get_prev_batch_id?batch_id=3`)).json).toBe(1);
    const withRollup = await get(
      `${dn.urls.availability}/availability_gateway/get_batch_data?batch_id=2&validate_rollup=True`,
    );
    expect(withRollup.json).toEqual(responses[2]);
    const plain = (
      await get(
        `${dn.urls.availability}/availability_gateway/get_batch_data?batch_id=2&validate_rollup=False`,
      )
    ).json as {
      update: Record<string, unknown>;
    };
    expect(plain.update.rollup_vaults).toBeUndefined();
    expect(plain.update.vaults).toEqual(responses[2]!.update.vaults);

    const url = `${dn.urls.availability}/availability_gateway/approve_new_roots`;
    for (const b of expected.batches) {
      const r = await post(url, {
        batch_id: b.batch_id,
        signature: b.signature,
        member_key: expected.member_key,
        claim_hash: b.claim_hash,
      });
      expect(r.status, `batch ${b.batch_id}: ${r.text}`).toBe(200);
      expect(r.text).toBe("signature accepted");
    }
    const b0 = expected.batches[0]!;
    const b1 = expected.batches[1]!;
    const wrong = await post(url, {
      batch_id: 1,
      signature: b0.signature,
      member_key: expected.member_key,
      claim_hash: b0.claim_hash,
    });
    expect(wrong.status).toBe(400);
    expect(wrong.json).toMatchObject({ code: "WRONG_CLAIM" });
    expect(b1.seq).toBe(1);
    expect((await dn.waitForQuorum(5, 1000)).reached).toBe(true);
    // The gateway takes no transactions in replay mode.
    expect(
      (
        await post(`${dn.urls.gateway}/gateway/v2/add_transaction`, {
          tx_id: 0,
          tx: { type: "DepositRequest" },
        })
      ).status,
    ).toBe(409);
  });

  it("without expected.json computes claims from the recorded roots and the prev_batch_id chain", async () => {
    dn = await startDevnet({ variant: "G", replay: spotResponses });
    const expected = JSON.parse(readFileSync(spotExpected, "utf8")) as Expected;
    for (const id of [0, 3, 5])
      expect(Buffer.from(dn.chain.batch(id)!.expectedClaim).toString("hex")).toBe(
        expected.batches[id]!.claim_hash.slice(2),
      );
  });

  it("replays the perpetual chain for variant P", async () => {
    const file = `${VECTORS}perpetual-chain/responses.json`;
    dn = await startDevnet({
      variant: "P",
      replay: file,
      expected: `${VECTORS}perpetual-chain/expected.json`,
    });
    const info = (await get(`${dn.urls.feeder}/feeder_gateway/get_batch_info?batch_id=1`)).json as Record<
      string,
      unknown
    >;
    expect(info.previous_batch_id).toBe(0);
    expect(info.position_root).toMatch(/^[0-9]+$/);
    await expect(
      startDevnet({ variant: "G", replay: file, expected: `${VECTORS}perpetual-chain/expected.json` }),
    ).rejects.toThrow(/variant/);
  });
});

describe("devnet traffic generator", () => {
  it("submits a mix of valid and invalid transactions whose batches a member verifies", async () => {
    for (const variant of ["G", "P"] as const) {
      dn = await startDevnet({ variant, traffic: 400, batchSize: 15, batchIntervalMs: 100, seed: 7 });
      await dn.waitForBatch(3, 20_000);
      const stats = dn.status().traffic!;
      expect(stats.refused).toBeGreaterThan(0);
      expect(stats.accepted).toBeGreaterThan(0);
      const engine = new WasmEngine();
      const store = new MemoryNodeStore();
      const states = new Map<number, TreeState>();
      let replaced = 0;
      for (let id = 0; id <= 3; id++) {
        const r = await get(
          `${dn.urls.availability}/availability_gateway/get_batch_data?batch_id=${id}&validate_rollup=True`,
        );
        const upd = parseStateUpdate((r.json as { update: unknown }).update, dn.profile, id, {
          validateRollup: true,
        });
        const prev = upd.prevBatchId < 0 ? null : states.get(upd.prevBatchId)!;
        const out = await computeRoots(engine, store, keptTrees(dn.profile, true), prev, upd.changes, id);
        store.putNodes(out.newNodes);
        for (const t of keptTrees(dn.profile, true))
          expect(toHex64(out.roots[t.name]!)).toBe(dn.chain.batch(id)!.stated[t.name]);
        states.set(id, { roots: out.roots, gens: out.rootGens });
        replaced += dn.chain.batch(id)!.txs.filter((t) => t.wasReplaced).length;
      }
      // The stated roots are dacd's: the first two batches against a naive replay sharing no code
      // with it (BigInt Pedersen is slow for the whole chain).
      const naive = naiveDevnetRoots(dn.chain, 1);
      expect(naive.wrongStated.size).toBe(0);
      for (const id of [0, 1])
        for (const t of keptTrees(dn.profile, true))
          expect(toHex64(states.get(id)!.roots[t.name]!), `${variant} batch ${id} ${t.name}`).toBe(
            hex64(naive.roots.get(id)![t.name]!),
          );
      expect(dn.chain.batch(3)!.txs.length).toBeGreaterThan(0);
      expect(replaced).toBeGreaterThan(0);
      await dn.close();
      dn = undefined;
    }
  });
});

describe("dacd devnet command", () => {
  it("prints the three base URLs and stops on SIGINT", async () => {
    const lines: string[] = [];
    const spy = vi.spyOn(process.stdout, "write").mockImplementation((s: string | Uint8Array) => {
      lines.push(String(s));
      return true;
    });
    const program = new Command().exitOverride();
    registerDevnetCommand(program);
    const running = program.parseAsync([
      "node",
      "dacd",
      "devnet",
      "--variant",
      "G",
      "--batch-size",
      "2",
      "--committee",
      "0x" + "ab".repeat(20),
    ]);
    try {
      await vi.waitFor(() => expect(lines.join("")).toMatch(/availability http/), { timeout: 5000 });
    } finally {
      spy.mockRestore();
    }
    const out = lines.join("");
    const m =
      /^gateway (http:\/\/127\.0\.0\.1:\d+)\nfeeder (http:\/\/127\.0\.0\.1:\d+)\navailability (http:\/\/127\.0\.0\.1:\d+)\n$/.exec(
        out,
      );
    expect(m).not.toBeNull();
    expect((await get(`${m![2]}/feeder_gateway/v2/get_last_batch_id`)).json).toBe(-1);
    process.emit("SIGINT");
    await running;
    await expect(fetch(`${m![2]}/feeder_gateway/v2/get_last_batch_id`)).rejects.toThrow();
  });

  it("refuses a bad variant", async () => {
    const program = new Command().exitOverride();
    registerDevnetCommand(program);
    await expect(program.parseAsync(["node", "dacd", "devnet", "--variant", "X"])).rejects.toThrow(/variant/);
  });
});

describe("devnet spot-v4.0 profile", () => {
  it("keeps every vault in the vault tree and serves a Merkle order tree of height 63", async () => {
    dn = await startDevnet({ variant: "G", profile: "spot-v4.0", batchIntervalMs: 0 });
    const tx = {
      type: "DepositRequest",
      amount: "9",
      core_key: "0x1",
      token_id: "0x2",
      vault_id: 2 ** 30 + 1,
    };
    expect((await post(`${dn.urls.gateway}/gateway/v2/add_transaction`, { tx_id: 0, tx })).status).toBe(200);
    await dn.cutBatch();
    const r = await get(
      `${dn.urls.availability}/availability_gateway/get_batch_data?batch_id=0&validate_rollup=True`,
    );
    const update = (r.json as { update: Record<string, unknown> }).update;
    expect(update.rollup_vaults).toBeUndefined();
    const upd = parseStateUpdate(update, dn.profile, 0);
    const out = await computeRoots(
      new WasmEngine(),
      new MemoryNodeStore(),
      keptTrees(dn.profile, false),
      null,
      upd.changes,
      0,
    );
    expect(toHex64(out.roots.vault!)).toBe(update.vault_root);
    const naive = naiveDevnetRoots(dn.chain).roots.get(0)!;
    expect(toHex64(out.roots.vault!)).toBe(hex64(naive.vault!));
    expect(toHex64(out.roots.order!)).toBe(hex64(naive.order!));
    const full = (await get(`${dn.urls.feeder}/feeder_gateway/get_batch_info?batch_id=0`)).json as {
      order_root: { height: number };
    };
    expect(full.order_root.height).toBe(63);
  });
});
