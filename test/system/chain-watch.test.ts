import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPublicClient, http, type Abi } from "viem";
import type { Daemon } from "../../src/app.js";
import { loadConfig } from "../../src/config/config.js";
import { startEthNode, type EthNode } from "../../src/devnet/exchange/eth-node.js";
import { DEVNET_EXCHANGE } from "../../src/devnet/exchange/artifact.js";
import { DevnetExchange } from "../../src/devnet/exchange/exchange.js";
import { rootHex } from "../../src/chain/root-update.js";
import { EXCHANGE_ABI } from "../../src/chain/exchange-abi.js";
import { dacdAsync } from "../helpers/dacd-cli.js";
import { spotChainMember, startQuietDaemon, waitFor } from "../helpers/daemon.js";
import { freePort } from "../helpers/free-port.js";
import { rpc, RpcProxy } from "../helpers/rpc-proxy.js";

/**
 * A member following the devnet's exchange contract on a local Hardhat node through a proxy that
 * fails on purpose: it reads each confirmed root update, flags the one whose roots differ from
 * its own, keeps going through RPC errors, hangs and reorgs, records the freeze, and after a
 * restart continues from its stored block.
 */
const cleanups: (() => Promise<void>)[] = [];
let node: EthNode;
let proxy: RpcProxy;
let exchange: DevnetExchange;
const CONFIRMATIONS = 2;

beforeAll(async () => {
  node = await startEthNode();
  cleanups.push(() => node.close());
  proxy = await new RpcProxy(node.url).start();
  cleanups.push(() => proxy.close());
  exchange = await DevnetExchange.deploy(node.url, "spot", 31);
});
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function metric(daemon: Daemon, name: string, labels = ""): Promise<number> {
  const text = await daemon.metrics.registry.metrics();
  const line = text.split("\n").find((l) => l.startsWith(`${name}${labels} `));
  return line === undefined ? NaN : Number(line.split(" ")[1]);
}

const mine = (blocks: number): Promise<unknown> =>
  rpc(node.url, "hardhat_mine", [`0x${blocks.toString(16)}`]);

/** The stored roots of a batch, as the contract takes them (`wrong`: the vault root changed). */
async function rootsOf(daemon: Daemon, batchId: number, wrong = false) {
  const r = (await daemon.store.getBatch(batchId))!.roots;
  const vault = BigInt(`0x${r.vault}`);
  return {
    vault: wrong ? vault ^ 1n : vault,
    rollupVault: BigInt(`0x${r.rollup_vault}`),
    order: BigInt(`0x${r.order}`),
  };
}

describe("following the base chain", () => {
  it("follows root updates, flags a differing root, survives errors, hangs and reorgs, records the freeze, resumes", async () => {
    const extra = [
      `base_chain_rpc_url: "${proxy.url}"`,
      `starkex_contract_address: "${exchange.address}"`,
      `base_chain_confirmations: ${CONFIRMATIONS}`,
      `base_chain_poll_interval_s: 0.05`,
      `escape_api_port: ${await freePort()}`,
    ].join("\n");
    const { setup } = await spotChainMember(cleanups, undefined, extra);
    let daemon = await startQuietDaemon(setup.config);
    cleanups.push(() => daemon.stop());
    await waitFor(
      async () => (await daemon.store.getCursor())?.last_accepted_batch_id === 5,
      30_000,
      "batches signed",
    );
    const mismatches = () => metric(daemon, "dacd_onchain_root_mismatch_total");
    const onchainId = () => metric(daemon, "dacd_onchain_batch_id");
    expect(await onchainId()).toBe(-1);

    // Root updates become visible once confirmed.
    await exchange.commit(0, await rootsOf(daemon, 0));
    await exchange.commit(1, await rootsOf(daemon, 1));
    await mine(CONFIRMATIONS - 1);
    await new Promise((r) => setTimeout(r, 300));
    expect(await onchainId()).toBe(0);
    await mine(1);
    await waitFor(async () => (await onchainId()) === 1, 10_000, "batch 1 on-chain");
    expect(await daemon.store.onchain.batch(1)).toMatchObject({
      batch_id: 1,
      sequence_number: 2,
      matches: true,
    });

    // A root that differs from the stored one: counted, recorded, and the watch goes on.
    await exchange.commit(2, await rootsOf(daemon, 2, true));
    await mine(CONFIRMATIONS);
    await waitFor(async () => (await daemon.store.onchain.batch(2)) !== undefined, 10_000, "the mismatch");
    expect(await mismatches()).toBe(1);
    expect(await daemon.store.onchain.batch(2)).toMatchObject({ matches: false });
    expect(await onchainId()).toBe(2);

    // RPC errors: counted, never fatal; the watch catches up once the endpoint answers.
    proxy.mode = "error";
    await exchange.commit(3, await rootsOf(daemon, 3));
    await mine(CONFIRMATIONS);
    await waitFor(
      async () => (await metric(daemon, "dacd_onchain_rpc_failures_total", '{reason="error"}')) >= 3,
    );
    expect(await onchainId()).toBe(2);
    proxy.mode = "ok";
    await waitFor(async () => (await onchainId()) === 3, 10_000, "batch 3 after the errors");

    // A hanging endpoint: each call times out (http_request_timeout_s), then the watch goes on.
    proxy.mode = "hang";
    await exchange.commit(4, await rootsOf(daemon, 4));
    await mine(CONFIRMATIONS);
    await waitFor(
      async () => (await metric(daemon, "dacd_onchain_rpc_failures_total", '{reason="timeout"}')) >= 1,
    );
    proxy.mode = "ok";
    await waitFor(async () => (await onchainId()) === 4, 10_000, "batch 4 after the hang");
    expect(await mismatches()).toBe(1);
    expect(await metric(daemon, "dacd_ready")).toBe(1);

    // A reorg above the confirmation depth: the replaced update, never confirmed, is never acted on.
    const shallow = await rpc(node.url, "evm_snapshot");
    await exchange.commit(5, await rootsOf(daemon, 5, true));
    const polls = proxy.count("eth_blockNumber");
    await waitFor(
      () => proxy.count("eth_blockNumber") > polls + 5,
      10_000,
      "polls over the unconfirmed update",
    );
    await rpc(node.url, "evm_revert", [shallow]);
    expect(await mismatches()).toBe(1);
    expect(await onchainId()).toBe(4);

    // A reorg below it (with base_chain_confirmations too small): the watch rereads and corrects.
    const deep = await rpc(node.url, "evm_snapshot");
    await exchange.commit(5, await rootsOf(daemon, 5, true));
    await mine(CONFIRMATIONS);
    await waitFor(
      async () => (await daemon.store.onchain.batch(5)) !== undefined,
      10_000,
      "the replaced update's mismatch",
    );
    expect(await mismatches()).toBe(2);
    expect(await daemon.store.onchain.batch(5)).toMatchObject({ matches: false });
    await rpc(node.url, "evm_revert", [deep]);
    await mine(1);
    await exchange.commit(5, await rootsOf(daemon, 5));
    await mine(CONFIRMATIONS + 1);
    await waitFor(
      async () => (await daemon.store.onchain.batch(5))?.matches === true,
      10_000,
      "batch 5 reread",
    );
    expect(await mismatches()).toBe(2);
    expect(await onchainId()).toBe(5);

    // The freeze, after the exchange committed batch 3 again: recorded with the contract's last
    // batch, which is not the member's newest, and the escape commands default to it.
    await exchange.commit(3, await rootsOf(daemon, 3));
    // Held against the contract's isFrozen(), read with the compiled exchange's ABI: no freeze is
    // recorded while it says false, and the one recorded is the batch its getLastBatchId() names.
    const isFrozen = (): Promise<unknown> =>
      createPublicClient({ transport: http(node.url) }).readContract({
        address: exchange.address,
        abi: DEVNET_EXCHANGE.abi as Abi,
        functionName: "isFrozen",
      });
    expect(await isFrozen()).toBe(false);
    expect(await daemon.store.onchain.frozenBatchId()).toBeUndefined();
    expect(await metric(daemon, "dacd_onchain_frozen")).toBe(0);
    await exchange.freeze();
    await mine(CONFIRMATIONS);
    await waitFor(async () => (await metric(daemon, "dacd_onchain_frozen")) === 1, 10_000, "the freeze");
    expect(await isFrozen()).toBe(true);
    expect(await daemon.store.onchain.frozenBatchId()).toBe(3);
    expect(
      await createPublicClient({ transport: http(node.url) }).readContract({
        address: exchange.address,
        abi: DEVNET_EXCHANGE.abi as Abi,
        functionName: "getLastBatchId",
      }),
    ).toBe(3n);
    expect(await onchainId()).toBe(3);
    const chainVaultRoot = rootHex(
      await createPublicClient({ transport: http(node.url) }).readContract({
        address: exchange.address,
        abi: EXCHANGE_ABI,
        functionName: "getValidiumVaultRoot",
      }),
    );
    const cfg = ["--config", setup.configPath];
    const running = await dacdAsync(["proof", ...cfg, "vault", "0"]);
    expect(running.code, running.err).toBe(0);
    expect(JSON.parse(running.out)).toMatchObject({ batch_id: 3, root: chainVaultRoot });
    expect(running.err).toMatch(/^dacd: proof at batch 3, the batch the exchange froze at /m);
    const latest = (await (await fetch(`${daemon.escapeApi!.url}/v1/batches/latest`)).json()) as {
      batch_id: number;
    };
    expect(latest.batch_id).toBe(3);

    // Restart: the watch continues from its stored block, never from genesis.
    const stored = (await daemon.store.onchain.cursor())!;
    await daemon.stop();
    const before = proxy.logRanges.length;
    await mine(3);
    daemon = await startQuietDaemon(loadConfig(setup.configPath, {}));
    await waitFor(
      async () => (await metric(daemon, "dacd_onchain_confirmed_block")) >= stored.next_block + 2,
      10_000,
      "the watch after the restart",
    );
    const after = proxy.logRanges.slice(before);
    expect(after.length).toBeGreaterThan(0);
    expect(Math.min(...after.map((r) => r.from))).toBe(stored.next_block);
    expect(await metric(daemon, "dacd_onchain_frozen")).toBe(1);
    expect(await metric(daemon, "dacd_onchain_batch_id")).toBe(3);

    // Stopped: the store alone answers, with the same defaults.
    await daemon.stop();
    const db = ["--db", setup.config.dataDir];
    const stopped = await dacdAsync(["proof", ...db, "vault", "0"]);
    expect(stopped.code, stopped.err).toBe(0);
    expect(JSON.parse(stopped.out)).toMatchObject({ batch_id: 3, root: chainVaultRoot });
    const status = JSON.parse((await dacdAsync(["status", "--json", ...db])).out) as Record<string, unknown>;
    expect(status.onchain).toMatchObject({
      contract: exchange.address.toLowerCase(),
      batch_id: 3,
      sequence_number: 7,
      frozen: true,
      frozen_batch_id: 3,
    });
    const shown = JSON.parse((await dacdAsync(["show", "batch", "2", ...db])).out) as Record<string, unknown>;
    expect(shown.onchain).toMatchObject({ batch_id: 2, sequence_number: 3, matches: false });
    expect((shown.onchain as { roots: Record<string, string> }).roots.vault).not.toBe(
      (shown.roots as Record<string, string>).vault,
    );
    const unseen = JSON.parse((await dacdAsync(["show", "batch", "0", ...db])).out) as Record<
      string,
      unknown
    >;
    expect(unseen.onchain).toMatchObject({ batch_id: 0, matches: true });
  });

  it("compares a batch stored after its root update was read", async () => {
    const later = await DevnetExchange.deploy(node.url, "spot", 31);
    const { gw, expected, setup } = await spotChainMember(
      cleanups,
      undefined,
      [
        `base_chain_rpc_url: "${proxy.url}"`,
        `starkex_contract_address: "${later.address}"`,
        "base_chain_confirmations: 0",
        "base_chain_poll_interval_s: 0.05",
      ].join("\n"),
    );
    gw.available = 1;
    const ranges = proxy.logRanges.length;
    const daemon = await startQuietDaemon(setup.config);
    cleanups.push(() => daemon.stop());
    const roots = (id: number, wrong = false) => {
      const r = expected.batches[id]!.roots as Record<string, string>;
      return {
        vault: BigInt(`0x${r.vault}`) ^ (wrong ? 1n : 0n),
        rollupVault: BigInt(`0x${r.rollup_vault}`),
        order: BigInt(`0x${r.order}`),
      };
    };
    await later.commit(1, roots(1));
    await later.commit(2, roots(2, true));
    await waitFor(async () => (await daemon.store.onchain.batch(2)) !== undefined, 10_000, "updates read");
    // A first start reads from the contract's deployment on, not from genesis.
    expect(proxy.logRanges[ranges]!.from).toBe(Number(later.deployedAt));
    expect(later.deployedAt).toBeGreaterThan(10n);
    expect(await daemon.store.onchain.batch(1)).not.toHaveProperty("matches");
    expect(await daemon.store.onchain.batch(2)).not.toHaveProperty("matches");
    gw.available = 6;
    await waitFor(async () => (await daemon.store.onchain.batch(2))?.matches === false, 20_000, "compared");
    expect(await daemon.store.onchain.batch(1)).toMatchObject({ matches: true });
    expect(await metric(daemon, "dacd_onchain_root_mismatch_total")).toBe(1);
  });

  it("a batch stored, then a restart before the comparison: compared after the restart", async () => {
    const later = await DevnetExchange.deploy(node.url, "spot", 31);
    const { gw, expected, setup } = await spotChainMember(
      cleanups,
      undefined,
      [
        `base_chain_rpc_url: "${proxy.url}"`,
        `starkex_contract_address: "${later.address}"`,
        "base_chain_confirmations: 0",
        // One poll at the start, then none before the restart.
        "base_chain_poll_interval_s: 3600",
      ].join("\n"),
    );
    const roots = (id: number, wrong = false) => {
      const r = expected.batches[id]!.roots as Record<string, string>;
      return {
        vault: BigInt(`0x${r.vault}`) ^ (wrong ? 1n : 0n),
        rollupVault: BigInt(`0x${r.rollup_vault}`),
        order: BigInt(`0x${r.order}`),
      };
    };
    await later.commit(1, roots(1));
    await later.commit(2, roots(2, true));
    gw.available = 1;
    let daemon = await startQuietDaemon(setup.config);
    cleanups.push(() => daemon.stop());
    await waitFor(async () => (await daemon.store.onchain.batch(2)) !== undefined, 10_000, "updates read");
    gw.available = 6;
    await waitFor(async () => (await daemon.store.getBatch(2)) !== undefined, 20_000, "batch 2 stored");
    // Stored, its root update read, the comparison due at the next poll: stop before it.
    expect(await daemon.store.onchain.batch(1)).not.toHaveProperty("matches");
    expect(await daemon.store.onchain.batch(2)).not.toHaveProperty("matches");
    await daemon.stop();

    daemon = await startQuietDaemon(setup.config);
    await waitFor(async () => (await daemon.store.onchain.batch(2))?.matches === false, 20_000, "compared");
    expect(await daemon.store.onchain.batch(1)).toMatchObject({ matches: true });
    expect(await metric(daemon, "dacd_onchain_root_mismatch_total")).toBe(1);
  });

  it("after a confirmed freeze no new batch is signed, unless sign_after_freeze", async () => {
    const frozenExchange = await DevnetExchange.deploy(node.url, "spot", 31);
    const { gw, expected, setup } = await spotChainMember(
      cleanups,
      undefined,
      [
        `base_chain_rpc_url: "${proxy.url}"`,
        `starkex_contract_address: "${frozenExchange.address}"`,
        "base_chain_confirmations: 0",
        "base_chain_poll_interval_s: 0.05",
      ].join("\n"),
    );
    gw.available = 2;
    let daemon = await startQuietDaemon(setup.config);
    cleanups.push(() => daemon.stop());
    await waitFor(
      async () => (await daemon.store.getCursor())?.last_accepted_batch_id === 1,
      20_000,
      "signed",
    );
    for (const id of [0, 1]) {
      const r = expected.batches[id]!.roots as Record<string, string>;
      await frozenExchange.commit(id, {
        vault: BigInt(`0x${r.vault}`),
        rollupVault: BigInt(`0x${r.rollup_vault}`),
        order: BigInt(`0x${r.order}`),
      });
    }
    await frozenExchange.freeze();
    await waitFor(async () => (await daemon.store.onchain.frozenBatchId()) === 1, 10_000, "the freeze");
    gw.available = 6;
    await waitFor(async () => daemon.member.state.failing?.code === "FROZEN", 20_000, "batch 2 refused");
    expect(daemon.member.state.failing?.reason).toMatch(
      /batch 2 not signed: the exchange is frozen at batch 1/,
    );
    expect(await daemon.store.getBatch(2)).toBeUndefined();
    await daemon.stop();

    daemon = await startQuietDaemon(loadConfig(setup.configPath, { DACD_SIGN_AFTER_FREEZE: "true" }));
    await waitFor(
      async () => (await daemon.store.getCursor())?.last_accepted_batch_id === 5,
      30_000,
      "signed on",
    );
  });

  it("a wrong contract address: nothing is recorded, the member signs on and stays ready", async () => {
    const { setup } = await spotChainMember(
      cleanups,
      undefined,
      [
        `base_chain_rpc_url: "${proxy.url}"`,
        `starkex_contract_address: "0x${"42".repeat(20)}"`,
        "base_chain_confirmations: 0",
        "base_chain_poll_interval_s: 0.05",
      ].join("\n"),
    );
    const daemon = await startQuietDaemon(setup.config);
    cleanups.push(() => daemon.stop());
    await waitFor(
      async () => (await daemon.store.getCursor())?.last_accepted_batch_id === 5,
      30_000,
      "signed",
    );
    const calls = proxy.count("eth_getCode");
    await waitFor(() => proxy.count("eth_getCode") > calls + 3, 10_000, "the watch retrying");
    expect(await daemon.store.onchain.cursor()).toBeUndefined();
    expect(await metric(daemon, "dacd_onchain_batch_id")).toBe(-1);
    expect(await metric(daemon, "dacd_ready")).toBe(1);
  });

  it("a stop does not wait for a hanging endpoint", async () => {
    const { setup } = await spotChainMember(
      cleanups,
      undefined,
      [
        `base_chain_rpc_url: "${proxy.url}"`,
        `starkex_contract_address: "${exchange.address}"`,
        "base_chain_poll_interval_s: 0.05",
      ].join("\n"),
    );
    proxy.mode = "hang";
    try {
      const calls = proxy.methods.length;
      const daemon = await startQuietDaemon(
        loadConfig(setup.configPath, { DACD_HTTP_REQUEST_TIMEOUT_S: "60" }),
      );
      await waitFor(() => proxy.methods.length > calls, 10_000, "a call held by the endpoint");
      const started = Date.now();
      await daemon.stop();
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      proxy.mode = "ok";
    }
  });
});
