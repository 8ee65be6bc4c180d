import { rm } from "node:fs/promises";
import { createPublicClient, http, type Abi, type Address } from "viem";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { DEVNET_EXCHANGE } from "../../src/devnet/exchange/artifact.js";
import { startDevnet } from "../../src/devnet/main.js";
import { expectMemberRootsNaive } from "../helpers/naive-chain.js";
import { ethAddressFromPrivateKey } from "../../src/signer/eth-signer.js";
import { dacdAsync } from "../helpers/dacd-cli.js";
import { memberSetup, startQuietDaemon, waitFor } from "../helpers/daemon.js";

/**
 * `dacd devnet --chain`: the devnet settles each signed batch on its local Ethereum node, a member
 * follows it (perpetual: the roots come from each updateState's program output), and `dacd devnet freeze`
 * freezes the exchange at the last committed batch, which the member records.
 */
const KEY = "0x1111111111111111111111111111111111111111111111111111111111111111";
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("devnet on a base chain", () => {
  it("commits each signed batch's roots, the member follows them, the freeze is recorded", async () => {
    const dn = await startDevnet({
      variant: "P",
      committee: [ethAddressFromPrivateKey(new Uint8Array(Buffer.from(KEY.slice(2), "hex")))],
      quorum: 1,
      traffic: 30,
      batchIntervalMs: 250,
      batchSize: 20,
      seed: 7,
      baseChain: true,
    });
    cleanups.push(() => dn.close());
    const chain = dn.baseChain!;
    expect(chain.rpcUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const setup = await memberSetup({
      profile: "perpetual",
      privateKey: KEY,
      gatewayUrl: dn.urls.availability,
      extra: [
        `base_chain_rpc_url: "${chain.rpcUrl}"`,
        `starkex_contract_address: "${chain.exchange.address}"`,
        "base_chain_confirmations: 0",
        "base_chain_poll_interval_s: 0.05",
      ].join("\n"),
    });
    cleanups.push(() => rm(setup.dir, { recursive: true, force: true }));
    const daemon = await startQuietDaemon({
      ...loadConfig(setup.configPath, {}),
      feederGatewayUrl: dn.urls.feeder,
    });
    cleanups.push(() => daemon.stop());

    await waitFor(
      async () => (daemon.chainWatch?.state?.last?.batch_id ?? -1) >= 2,
      60_000,
      "batch 2 on-chain",
    );
    for (let id = 0; id <= 2; id++) {
      const onchain = await daemon.store.onchain.batch(id);
      expect(onchain).toMatchObject({ batch_id: id, event: "LogUpdateState", sequence_number: id + 1 });
      // Each update's roots, read from its program output (the views show only a block's last).
      expect(onchain?.matches).toBe(true);
    }
    expect(await daemon.store.onchain.batch(2)).toMatchObject({ matches: true });
    // The roots committed are the devnet's, which are dacd's: the member's against a naive replay
    // (the first two batches; BigInt Pedersen is slow for random 64-bit position ids).
    await expectMemberRootsNaive(dn.chain, daemon.store, [0, 1]);

    // The freeze the member records is held against the contract's own views, read with viem and
    // the compiled exchange's ABI: none while isFrozen() is false, then the batch it froze at.
    const reader = createPublicClient({ transport: http(chain.rpcUrl) });
    const view = (functionName: "isFrozen" | "getLastBatchId"): Promise<unknown> =>
      reader.readContract({
        address: chain.exchange.address as Address,
        abi: DEVNET_EXCHANGE.abi as Abi,
        functionName,
      });
    expect(await view("isFrozen")).toBe(false);
    expect((await daemon.store.onchain.cursor())?.frozen).toBeUndefined();

    const frozen = await dacdAsync(["devnet", "freeze", "--availability-url", dn.urls.availability]);
    expect(frozen.code, frozen.err).toBe(0);
    const { frozen_batch_id } = JSON.parse(frozen.out) as { frozen_batch_id: number };
    expect(frozen_batch_id).toBeGreaterThanOrEqual(2);
    expect(dn.status().base_chain).toMatchObject({ frozen: true, committed_batch_id: frozen_batch_id });
    await waitFor(
      async () => (await daemon.store.onchain.frozenBatchId()) === frozen_batch_id,
      10_000,
      "the freeze",
    );
    expect(await view("isFrozen")).toBe(true);
    expect(await view("getLastBatchId")).toBe(BigInt(frozen_batch_id));
  });
});
