import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { keccak_256 } from "@noble/hashes/sha3.js";
import { afterEach, describe, expect, it } from "vitest";
import { CONTROL_SOCKET } from "../../src/control/server.js";
import { LevelStore } from "../../src/storage/level-store.js";
import { dacdAsync } from "../helpers/dacd-cli.js";
import { freePort } from "../helpers/free-port.js";
import { signingMember as startSigningMember } from "../helpers/signing-member.js";
import { loadChain, type ChainName } from "../helpers/vectors.js";

/**
 * `dacd exit` from a member signing the vector chains: through its control socket, its escape API
 * (`GET /v1/escape/{tree}/{id}/exit`) and a stopped copy of its store the plan is the same, has
 * issue 64's shape with the request's call data packed here by hand, names an empty leaf's lack of
 * steps, and, once the store has seen a freeze, labels a plan at another batch.
 */

const EXCHANGE = "0x5fbdb2315678afecb367f032d93f642f64180aa3";
const VERIFIER = "0xe7f1725e7734ce288f8367e1bb143e90bb3f0512";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const sel = (signature: string): string =>
  Buffer.from(keccak_256(new TextEncoder().encode(signature)).subarray(0, 4)).toString("hex");
const w = (v: bigint): string => v.toString(16).padStart(64, "0");

/** A member that has signed the whole chain, its escape API on a free port. */
async function signingMember(chain: ChainName) {
  return startSigningMember(
    chain,
    [
      `escape_api_port: ${await freePort()}`,
      "escape_api_rate_limit: 100000",
      "escape_contracts:",
      `  exchange: "${EXCHANGE}"`,
      `  verifier: "${VERIFIER}"`,
    ].join("\n"),
    cleanups,
  );
}

/** A non-empty leaf of the chain's last update (still there at the last batch); a position with positive collateral. */
function someId(chain: ChainName, key: string): string {
  const { responses } = loadChain(chain);
  const last = responses[responses.length - 1]!.update as Record<
    string,
    Record<string, { collateral_balance?: string }>
  >;
  return Object.entries(last[key] ?? {}).find(([, v]) => !v.collateral_balance?.startsWith("-"))![0];
}

/** The ids whose leaf has `ownerKey` once every update of the chain is applied (non-empty ones), ascending. */
function leavesOf(chain: ChainName, key: string, ownerKey: string): string[] {
  const state = new Map<string, { stark_key?: string; public_key?: string; balance?: string }>();
  for (const r of loadChain(chain).responses) {
    const update = r.update as Record<
      string,
      Record<string, { stark_key?: string; public_key?: string; balance?: string }>
    >;
    for (const [id, leaf] of Object.entries(update[key] ?? {})) state.set(id, leaf);
  }
  return [...state]
    .filter(([, l]) => BigInt(l.stark_key ?? l.public_key ?? "0") === BigInt(ownerKey) && l.balance !== "0")
    .map(([id]) => id)
    .sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1));
}

type Plan = {
  object: string;
  id: string;
  batch_id: number;
  owner_key: string;
  quantized_amount: string;
  steps: { step: string; to: string | null; function: string; data: string | null }[];
  [k: string]: unknown;
};

describe.each([
  ["spot-chain", "vault", "vaults"],
  ["perpetual-chain", "position", "positions"],
] as const)("dacd exit from a signing member (%s)", (chain, tree, key) => {
  it("socket, API and a stopped copy give the same plan, in issue 64's shape", async () => {
    const m = await signingMember(chain);
    const cfg = ["--config", m.configPath];
    const id = someId(chain, key);
    const last = m.expected.batches.at(-1)!;

    const cli = await dacdAsync(["exit", ...cfg, tree, id, "--json"]);
    expect(cli.err).toBe("");
    expect(cli.code).toBe(0);
    const plan = JSON.parse(cli.out) as Plan;
    expect(Object.keys(plan)).toEqual(
      expect.arrayContaining([
        "object",
        "id",
        "batch_id",
        "chain_id",
        "steps",
        "frozen_batch_id",
        "at_frozen_batch",
      ]),
    );
    expect(plan).toMatchObject({
      object: tree,
      id,
      batch_id: last.batch_id,
      chain_id: null,
      exchange: EXCHANGE,
      verifier: VERIFIER,
      frozen_batch_id: null,
      at_frozen_batch: null,
    });
    const names = plan.steps.map((s) => s.step);
    expect(names).toEqual(["register", "request", "freeze", "verify_escape", "escape", "withdraw"]);
    for (const s of plan.steps) {
      expect(Object.keys(s).sort()).toEqual(
        [
          "args",
          "contract",
          "data",
          "function",
          "inputs",
          "note",
          "sender",
          "state",
          "step",
          "to",
          "value",
        ].sort(),
      );
      expect(s.to).toBe(s.step === "verify_escape" ? VERIFIER : EXCHANGE);
    }
    const keyWord = w(BigInt(plan.owner_key));
    const request = plan.steps[1]!;
    if (tree === "vault") {
      expect(request.data).toBe(
        "0x" + sel("fullWithdrawalRequest(uint256,uint256)") + keyWord + w(BigInt(id)),
      );
      // verify_escape and escape are the starkex proof's call data.
      const proof = JSON.parse((await dacdAsync(["proof", ...cfg, tree, id, "--format", "starkex"])).out) as {
        calldata: { verify_escape: string; escape: string };
      };
      expect(plan.steps[3]!.data).toBe(proof.calldata.verify_escape);
      expect(plan.steps[4]!.data).toBe(proof.calldata.escape);
    } else {
      expect(request.data).toBe(
        "0x" +
          sel("forcedWithdrawalRequest(uint256,uint256,uint256,bool)") +
          keyWord +
          w(BigInt(id)) +
          w(BigInt(plan.quantized_amount)) +
          w(0n),
      );
      // No shared state read (no base chain followed): verifyEscape and escape need the chain.
      expect(plan.steps[3]!.data).toBeNull();
      expect(plan.steps[4]!.data).toBeNull();
    }

    const api = await fetch(`${m.api}/v1/escape/${tree}/${id}/exit`);
    expect(api.status).toBe(200);
    expect(await api.json()).toEqual(plan);
    const atBatch = await fetch(`${m.api}/v1/escape/${tree}/${id}/exit?batch=0`);
    expect(atBatch.headers.get("cache-control")).toBe("public, max-age=86400");
    expect(((await atBatch.json()) as Plan).batch_id).toBe(m.expected.batches[0]!.batch_id);
    const other = tree === "vault" ? "position" : "vault";
    expect((await fetch(`${m.api}/v1/escape/${other}/1/exit`)).status).toBe(404);
    expect((await fetch(`${m.api}/v1/escape/${tree}/1x/exit`)).status).toBe(400);

    // The key's leaves: every id whose leaf, after replaying the chain's updates here, has this key.
    const mine = leavesOf(chain, key, plan.owner_key);
    expect(mine).toContain(id);
    const byKey = await dacdAsync(["exit", ...cfg, "--key", plan.owner_key, "--json"]);
    expect(byKey.code, byKey.err).toBe(0);
    const found = JSON.parse(byKey.out) as { leaves: { id: string }[]; batch_id: number; scanned: number };
    expect(found.batch_id).toBe(last.batch_id);
    expect(found.leaves.map((l) => l.id)).toEqual(mine);
    const apiKey = await fetch(`${m.api}/v1/escape/keys/${plan.owner_key}`);
    expect(apiKey.status).toBe(200);
    expect(await apiKey.json()).toEqual(found);
    const nobody = JSON.parse((await dacdAsync(["exit", ...cfg, "--key", "0x1234", "--json"])).out) as {
      leaves: unknown[];
    };
    expect(nobody.leaves).toEqual([]);
    expect((await fetch(`${m.api}/v1/escape/keys/0xzz`)).status).toBe(400);
    const keyText = await dacdAsync(["exit", ...cfg, "--key", plan.owner_key, "--no-json"]);
    expect(keyText.out).toMatch(new RegExp(`\\n  ${tree} ${id}: `));

    // For a person: the steps in order.
    const text = await dacdAsync(["exit", ...cfg, tree, id, "--no-json"]);
    expect(text.code).toBe(0);
    expect(text.out).toMatch(new RegExp(`^${tree} ${id} at batch ${last.batch_id}`));
    expect(text.out).toMatch(/\n2\. request: (fullWithdrawalRequest|forcedWithdrawalRequest)\(/);
    expect(text.out).toMatch(/\n6\. withdraw: /);

    // The top id is empty: no step, a message.
    const top = String(2n ** (tree === "vault" ? 31n : 64n) - 1n);
    const empty = JSON.parse((await dacdAsync(["exit", ...cfg, tree, top, "--json"])).out) as Plan;
    expect(empty.steps).toEqual([]);
    expect(empty.message).toMatch(/is empty at batch .*nothing to withdraw/);
    // Outside the tree, or a tree with no escape: errors.
    expect((await dacdAsync(["exit", ...cfg, tree, String(2n ** 64n)])).code).toBe(2);
    expect((await dacdAsync(["exit", ...cfg, "order", "1"])).code).toBe(64);

    // A stopped copy, opened directly, with the addresses as flags.
    await m.stop();
    const work = await mkdtemp(join(tmpdir(), "dacd-exit-"));
    cleanups.push(() => rm(work, { recursive: true, force: true }));
    const copy = join(work, "copy");
    await cp(m.config.dataDir, copy, { recursive: true, filter: (s) => !s.endsWith(CONTROL_SOCKET) });
    const flags = ["--exchange", EXCHANGE, "--verifier", VERIFIER];
    const off = await dacdAsync(["exit", "--db", copy, tree, id, ...flags, "--json"]);
    expect(off.code).toBe(0);
    expect(JSON.parse(off.out)).toEqual(plan);

    // Once the store has seen the exchange freeze at the first batch: that is the default, and a
    // plan or proof at the last batch says it is not the frozen one.
    const frozenAt = m.expected.batches[0]!.batch_id;
    const store = await LevelStore.open(copy);
    await store.onchain.record(
      {
        contract: EXCHANGE,
        next_block: 10,
        frozen: { batch_id: frozenAt, block_number: 9, detected_at: new Date(0).toISOString() },
      },
      [],
    );
    await store.close();
    const atFrozen = JSON.parse((await dacdAsync(["exit", "--db", copy, tree, id, "--json"])).out) as Plan;
    expect(atFrozen).toMatchObject({ batch_id: frozenAt, frozen_batch_id: frozenAt, at_frozen_batch: true });
    // Both chains have batches after the first, so a plan at the last batch is not at the frozen one.
    expect(last.batch_id).not.toBe(frozenAt);
    const late = JSON.parse(
      (await dacdAsync(["exit", "--db", copy, tree, id, "--batch", String(last.batch_id), "--json"])).out,
    ) as Plan & { notes: string[] };
    expect(late).toMatchObject({
      batch_id: last.batch_id,
      frozen_batch_id: frozenAt,
      at_frozen_batch: false,
    });
    expect(late.notes[0]).toMatch(new RegExp(`not at batch ${frozenAt} where the exchange froze`));
    const proof = JSON.parse(
      (
        await dacdAsync([
          "proof",
          "--db",
          copy,
          tree,
          id,
          "--format",
          "starkex",
          "--batch",
          String(last.batch_id),
        ])
      ).out,
    ) as Record<string, unknown>;
    expect(proof).toMatchObject({ frozen_batch_id: frozenAt, at_frozen_batch: false });
    expect(proof.frozen_batch_note).toMatch(/not at batch/);
    const lateText = await dacdAsync([
      "exit",
      "--db",
      copy,
      tree,
      id,
      "--batch",
      String(last.batch_id),
      "--no-json",
    ]);
    expect(lateText.out).toMatch(new RegExp(`NOT the frozen batch ${frozenAt}`));
  }, 240_000);
});
