import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { rm } from "node:fs/promises";
import { createPublicClient, http, keccak256, parseAbi } from "viem";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { startDevnet } from "../../src/devnet/main.js";
import { makeOnchainProof } from "../../src/escape/onchain/from-proof.js";
import type { PerpetualEscape } from "../../src/escape/onchain/perpetual.js";
import { kitPath } from "../../src/escape/kit/layout.js";
import { ethAddressFromPrivateKey } from "../../src/signer/eth-signer.js";
import { dacdAsync } from "../helpers/dacd-cli.js";
import { submitToDevnet } from "../helpers/devnet-submit.js";
import { memberSetup, startQuietDaemon, waitFor } from "../helpers/daemon.js";
import { expectMemberRootsNaive } from "../helpers/naive-chain.js";
import { fastH } from "../helpers/naive-trees.js";
import { freePort } from "../helpers/free-port.js";

/**
 * A perpetual exchange frozen on the devnet's local Ethereum node: the member reads the frozen
 * batch's shared state from the updateState transaction (the devnet contract keeps its hash as
 * StarkEx's does), and `dacd proof position ID --format starkex`, with the daemon running and then
 * stopped, carries it with the withdrawal amount, the fact and the call data; verify-proof
 * accepts the proof, and the amount is recomputed here from the position and the shared state.
 */
const KEY = "0x1111111111111111111111111111111111111111111111111111111111111111";
const B63 = 1n << 63n;
const FXP = 1n << 32n;
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const floorDiv = (a: bigint, b: bigint): bigint => (a % b !== 0n && a < 0n !== b < 0n ? a / b - 1n : a / b);

/** The amount PerpetualEscapeVerifier describes, from the JSON's position and shared state. */
function amountOf(e: PerpetualEscape): bigint {
  const s = e.shared_state!.map((w) => BigInt(w));
  const n = Number(s[4]);
  const funding = new Map(Array.from({ length: n }, (_, k) => [s[5 + 2 * k]!, s[6 + 2 * k]! - B63]));
  const pricesAt = 5 + 2 * n + 2;
  const prices = new Map(
    Array.from({ length: Number(s[pricesAt - 1]) }, (_, k) => [
      s[pricesAt + 2 * k]!,
      s[pricesAt + 2 * k + 1]!,
    ]),
  );
  let fxp = BigInt(e.collateral_balance) * FXP;
  let owed = 0n;
  for (const a of e.assets) {
    const id = BigInt(a.asset_id);
    owed -= BigInt(a.balance) * (funding.get(id)! - BigInt(a.cached_funding_index));
    fxp += BigInt(a.balance) * prices.get(id)!;
  }
  return floorDiv(fxp + floorDiv(owed, FXP) * FXP, FXP);
}

function factOf(e: PerpetualEscape, amount: bigint): string {
  const hex64 = (v: bigint): string => v.toString(16).padStart(64, "0");
  return keccak256(
    `0x${hex64(BigInt(e.public_key))}${hex64(amount)}${e.shared_state_hash!.slice(2)}${hex64(BigInt(e.position_id))}`,
  );
}

describe("a perpetual exchange frozen on the base chain", () => {
  it("gives each position its escape with the frozen shared state, daemon running and stopped", async () => {
    const dn = await startDevnet({
      variant: "P",
      committee: [ethAddressFromPrivateKey(new Uint8Array(Buffer.from(KEY.slice(2), "hex")))],
      quorum: 1,
      traffic: 40,
      batchIntervalMs: 250,
      batchSize: 20,
      seed: 11,
      baseChain: true,
    });
    cleanups.push(() => dn.close());
    const chain = dn.baseChain!;
    const apiPort = await freePort();
    const setup = await memberSetup({
      profile: "perpetual",
      privateKey: KEY,
      gatewayUrl: dn.urls.availability,
      extra: [
        `base_chain_rpc_url: "${chain.rpcUrl}"`,
        `starkex_contract_address: "${chain.exchange.address}"`,
        "base_chain_confirmations: 0",
        "base_chain_poll_interval_s: 0.05",
        `escape_api_port: ${apiPort}`,
      ].join("\n"),
    });
    cleanups.push(() => rm(setup.dir, { recursive: true, force: true }));
    const daemon = await startQuietDaemon({
      ...loadConfig(setup.configPath, {}),
      feederGatewayUrl: dn.urls.feeder,
    });
    let running = true;
    cleanups.push(async () => {
      if (running) await daemon.stop();
    });

    // A position with collateral and no asset, beside the traffic's positions 100..105.
    await submitToDevnet(dn.urls.gateway, {
      type: "DEPOSIT",
      amount: "777000",
      position_id: "7",
      public_key: "0x7777",
    });
    const TRADERS = ["100", "101", "102", "103", "104", "105"];
    // Trading until a position holds all three of the traffic's synthetic assets, settled on-chain.
    await waitFor(
      async () => {
        const onchain = daemon.chainWatch?.state?.last?.batch_id ?? -1;
        // Not at every tick of waitFor: each look builds six proofs.
        await new Promise((r) => setTimeout(r, 500));
        if (onchain < 2 || (await daemon.store.getBatch(onchain)) === undefined) return false;
        for (const id of TRADERS) {
          const e = await makeOnchainProof(daemon.store, daemon.engine, "position", id, onchain);
          if ((e as PerpetualEscape).n_assets === 3) return true;
        }
        return false;
      },
      120_000,
      "a position with 3 assets on-chain",
    );

    const frozen = await dacdAsync(["devnet", "freeze", "--availability-url", dn.urls.availability]);
    expect(frozen.code, frozen.err).toBe(0);
    const { frozen_batch_id } = JSON.parse(frozen.out) as { frozen_batch_id: number };
    await waitFor(
      async () => (await daemon.store.onchain.cursor())?.frozen?.shared_state !== undefined,
      20_000,
      "the shared state read",
    );
    const shared = (await daemon.store.onchain.cursor())!.frozen!.shared_state!;
    expect(shared.batch_id).toBe(frozen_batch_id);
    expect(shared.system_asset_type).toMatch(
      /^0x0*2893294412a4c8f915f75892b395ebbf6859ec246ec365c3b1f56f47c3a0a5d$/,
    );
    const client = createPublicClient({ transport: http(chain.rpcUrl) });
    const onchainHash = await client.readContract({
      address: chain.exchange.address,
      abi: parseAbi(["function getSharedStateHash() view returns (bytes32)"]),
      functionName: "getSharedStateHash",
    });
    expect(keccak256(`0x${shared.words.map((w) => w.slice(2)).join("")}`)).toBe(onchainHash);

    // The positions there are, by their asset count, built in process as the daemon's socket does.
    const byAssets = new Map<number, PerpetualEscape>();
    for (const id of ["7", ...TRADERS]) {
      const e = (await makeOnchainProof(daemon.store, daemon.engine, "position", id)) as PerpetualEscape;
      if (!e.empty && e.calldata && !byAssets.has(e.n_assets)) byAssets.set(e.n_assets, e);
    }
    expect(byAssets.get(0)?.position_id).toBe("7");
    expect(byAssets.has(3)).toBe(true);

    // The frozen root the escapes are checked against is the devnet's, which is dacd's: held
    // against a naive replay of the devnet's chain (the member's record, and so the chain's).
    const naive = await expectMemberRootsNaive(dn.chain, daemon.store, [frozen_batch_id], fastH);
    const naiveRoot = BigInt(naive.get(frozen_batch_id)!.position!);

    const work = setup.dir;
    const check = async (e: PerpetualEscape, how: string): Promise<void> => {
      expect(e.batch_id, how).toBe(frozen_batch_id);
      expect(e.shared_state, how).toEqual(shared.words);
      expect(e.shared_state![0], how).toBe(e.position_root);
      expect(BigInt(e.position_root), how).toBe(naiveRoot);
      const amount = amountOf(e);
      expect(e.withdrawal_amount, how).toBe(amount.toString());
      expect(e.fact_hash, how).toBe(factOf(e, amount));
      expect(e.calldata?.withdraw, how).toMatch(/^0x[0-9a-f]{136}$/);
      const file = join(work, `position-${e.position_id}.json`);
      await writeFile(file, JSON.stringify(e));
      const verdict = await dacdAsync(["verify-proof", file, "--root", e.position_root]);
      expect(verdict.code, `${how}: ${verdict.out}${verdict.err}`).toBe(0);
      expect(verdict.out, how).toMatch(/fact hash and call data match the shared state/);
    };

    const cfg = ["--config", setup.configPath];
    const live = new Map<number, string>();
    for (const [n, e] of byAssets) {
      const r = await dacdAsync(["proof", ...cfg, "position", e.position_id, "--format", "starkex"]);
      expect(r.code, r.err).toBe(0);
      live.set(n, r.out);
      const api = await fetch(`http://127.0.0.1:${apiPort}/v1/escape/position/${e.position_id}`);
      expect(api.status).toBe(200);
      expect(await api.json()).toEqual(JSON.parse(r.out));
      await check(JSON.parse(r.out) as PerpetualEscape, `running, ${n} assets`);
    }

    // The exit plan with the chain's state (base_chain_rpc_url is configured): at the frozen batch,
    // the proof's call data, request and freeze done; the same from the API and from `dacd exit`.
    const deposit = byAssets.get(0)!;
    const exitRes = await fetch(`http://127.0.0.1:${apiPort}/v1/escape/position/${deposit.position_id}/exit`);
    expect(exitRes.status).toBe(200);
    const plan = (await exitRes.json()) as {
      steps: { step: string; data: string | null; state: { status: string } | null }[];
      chain: { frozen: boolean; last_batch_id: number };
    } & Record<string, unknown>;
    expect(plan).toMatchObject({
      object: "position",
      batch_id: frozen_batch_id,
      frozen_batch_id,
      at_frozen_batch: true,
      chain_id: 31337,
      quantized_amount: deposit.withdrawal_amount,
      chain: { frozen: true, last_batch_id: frozen_batch_id },
    });
    const stepOf = (name: string) => plan.steps.find((s) => s.step === name)!;
    expect(stepOf("verify_escape").data).toBe(deposit.calldata!.verify_escape);
    expect(stepOf("escape").data).toBe(deposit.calldata!.escape);
    expect(stepOf("withdraw").data).toBe(deposit.calldata!.withdraw);
    expect(stepOf("request").state?.status).toBe("done");
    expect(stepOf("freeze").state?.status).toBe("done");
    const exitCli = await dacdAsync(["exit", ...cfg, "position", deposit.position_id, "--json"]);
    expect(exitCli.code, exitCli.err).toBe(0);
    expect(JSON.parse(exitCli.out)).toEqual(plan);
    const earlier = (await (
      await fetch(
        `http://127.0.0.1:${apiPort}/v1/escape/position/${deposit.position_id}/exit?batch=${frozen_batch_id - 1}`,
      )
    ).json()) as Record<string, unknown>;
    expect(earlier).toMatchObject({ frozen_batch_id, at_frozen_batch: false });
    await daemon.stop();
    running = false;
    for (const [n, e] of byAssets) {
      const r = await dacdAsync([
        "proof",
        "--db",
        join(setup.dir, "data"),
        "position",
        e.position_id,
        "--format",
        "starkex",
      ]);
      expect(r.code, r.err).toBe(0);
      expect(r.out).toBe(live.get(n));
      await check(JSON.parse(r.out) as PerpetualEscape, `stopped, ${n} assets`);
    }
    // The kit's files are the same text (it writes them without viem; it stops on a difference).
    const kit = join(setup.dir, "kit");
    const built = await dacdAsync([
      "escape-kit",
      "--format",
      "1",
      "--db",
      join(setup.dir, "data"),
      "--out",
      kit,
    ]);
    expect(built.code, built.err).toBe(0);
    for (const [n, e] of byAssets)
      expect(await readFile(join(kit, kitPath("position", e.position_id)), "utf8")).toBe(live.get(n));
  }, 240_000);
});
