import { mkdir, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import {
  createPublicClient,
  encodeFunctionData,
  http,
  parseAbi,
  type Abi,
  type Address,
  type Hex,
} from "viem";
import { afterAll, describe, expect, it } from "vitest";
import type { Daemon } from "../../src/app.js";
import { DEVNET_EXCHANGE } from "../../src/devnet/exchange/artifact.js";
import { type Devnet } from "../../src/devnet/main.js";
import { makeOnchainProof } from "../../src/escape/onchain/from-proof.js";
import type { PerpetualEscape } from "../../src/escape/onchain/perpetual.js";
import type { SpotEscape } from "../../src/escape/onchain/spot.js";
import { waitFor } from "../helpers/daemon.js";
import { submitToDevnet } from "../helpers/devnet-submit.js";
import { exitDevnet } from "../helpers/exit-devnet.js";
import { CHROMIUM, DESKTOP, launchChromium, PHONE } from "../helpers/escape-page.js";
import { freePort } from "../helpers/free-port.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";
import { toolAvailable } from "../helpers/tool-required.js";
import { dacdAsync } from "../helpers/dacd-cli.js";

/**
 * A user walks out of the devnet's frozen exchange from the escape page in headless Chromium, with
 * a wallet injected into the page (an EIP-6963 provider forwarding to the devnet's Hardhat node,
 * whose second account is the user's and unlocked): the page reads where the user stands through
 * the wallet, and each step is sent with eth_sendTransaction from its button: the forced request,
 * the freeze once the grace period has passed on the node's clock (evm_increaseTime from the test),
 * verifyEscape, escape and withdraw. The user's token balance grows by exactly quantum × the
 * quantized amount; a second escape shows ESCAPE_ALREADY_USED in words. Screenshots of every step
 * at a desktop's and a phone's size in test-artifacts/.
 */

/** The second account of Hardhat's public test mnemonic (funded and unlocked on the node): the user. */
const USER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" as Address;
const GRACE_S = 3600;
const ARTIFACTS = join(import.meta.dirname, "..", "..", "test-artifacts");
const ERC20_ABI = parseAbi(["function balanceOf(address) view returns (uint256)"]);
const EXCHANGE_ABI = DEVNET_EXCHANGE.abi as Abi;
const SIG = `0x${"00".repeat(96)}` as Hex;

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await removeTempDirs();
});

interface Setup {
  devnet: Devnet;
  daemon: Daemon;
  api: string;
  rpc: string;
  exchange: Address;
  verifier: Address;
  token: Address;
  configPath: string;
}

async function start(variant: "G" | "P"): Promise<Setup> {
  const port = await freePort();
  const { devnet, daemon, base, configPath } = await exitDevnet(
    variant,
    GRACE_S,
    [`escape_api_port: ${port}`, "escape_api_rate_limit: 1000"],
    cleanups,
  );
  return {
    devnet,
    daemon,
    api: `http://127.0.0.1:${port}`,
    rpc: base.rpcUrl,
    exchange: base.exchange.address,
    verifier: base.exchange.verifier!,
    token: base.exchange.token!,
    configPath,
  };
}

async function rpc(url: string, method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

/**
 * The wallet in the page: an EIP-1193 provider announced by EIP-6963, on chain 1 until the page
 * asks to switch; its requests go to the node through a playwright binding (not the page's
 * network, which CSP keeps to the page's origin, as a browser extension's would).
 */
async function withWallet(browser: BrowserContext, node: string): Promise<void> {
  let chainId = "0x1";
  await browser.exposeBinding("__walletRpc", async (_source, text: string) => {
    const { method, params } = JSON.parse(text) as { method: string; params: unknown[] };
    try {
      if (method === "eth_requestAccounts" || method === "eth_accounts")
        return JSON.stringify({ result: [USER] });
      if (method === "eth_chainId") return JSON.stringify({ result: chainId });
      if (method === "wallet_switchEthereumChain") {
        const want = (params[0] as { chainId: string }).chainId;
        if (Number(want) !== 31337) throw Object.assign(new Error("unknown chain"), { code: 4902 });
        chainId = want;
        return JSON.stringify({ result: null });
      }
      const res = await fetch(node, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      });
      return await res.text();
    } catch (e) {
      return JSON.stringify({
        error: { code: (e as { code?: number }).code ?? -32603, message: (e as Error).message },
      });
    }
  });
  await browser.addInitScript(() => {
    const w = window as unknown as { __walletRpc(text: string): Promise<string> };
    const provider = {
      async request({ method, params }: { method: string; params?: unknown[] }) {
        const out = JSON.parse(await w.__walletRpc(JSON.stringify({ method, params: params ?? [] }))) as {
          result?: unknown;
          error?: { code: number; message: string; data?: unknown };
        };
        if (out.error) throw Object.assign(new Error(out.error.message), out.error);
        return out.result;
      },
      on() {},
    };
    const announce = () =>
      window.dispatchEvent(
        new CustomEvent("eip6963:announceProvider", {
          detail: Object.freeze({
            info: {
              uuid: "5a0c1d2e-0000-4000-8000-000000000001",
              name: "Test Wallet",
              icon: "data:,",
              rdns: "dev.dacd.test",
            },
            provider,
          }),
        }),
      );
    window.addEventListener("eip6963:requestProvider", announce);
  });
}

async function openJourney(browser: BrowserContext, s: Setup, id: string): Promise<Page> {
  const page = await browser.newPage();
  page.on("pageerror", (e) => {
    throw e;
  });
  await page.goto(`${s.api}/`);
  await page.waitForSelector('body[data-ready="api"]', { timeout: 20_000 });
  // The escape API reads the chain's id from its base chain node: the user does not type it.
  expect(await page.inputValue("#chain-id")).toBe("31337");
  await page.click('#wallet button[data-wallet="dev.dacd.test"]');
  // The wallet is on chain 1: the page offers the switch.
  await page.click("#switch-chain");
  await page.waitForSelector("body[data-wallet=connected]");
  await page.fill("#leaf-id", id);
  await page.click("#lookup button[type=submit]");
  return page;
}

async function stepStatus(page: Page, step: string, status: string): Promise<void> {
  await page.waitForSelector(`li[data-step="${step}"][data-status="${status}"]`, { timeout: 30_000 });
}

const gasTable: { object: string; step: string; gas: number }[] = [];
afterAll(() => {
  console.log("gas of each step sent from the escape page (from the page's receipts):");
  console.table(gasTable);
});

/** Sends a step from its button and waits for the page to say how it went. */
async function sendStep(page: Page, step: string): Promise<string> {
  await page.click(`button[data-send="${step}"]`);
  const out = await page.waitForSelector(`[data-tx="${step}"].ok, [data-tx="${step}"].bad`, {
    timeout: 60_000,
  });
  const text = (await out.textContent()) ?? "";
  const gas = /gas used (\d+)/.exec(text);
  const object = ((await page.textContent("#leaf-title")) ?? "").split(" ")[0]!;
  if (gas) gasTable.push({ object, step, gas: Number(gas[1]) });
  return text;
}

/**
 * The transaction a step's "Done: 0x…" names, as the chain holds it: its target and call data, to
 * hold against a call encoded here from the exchange's ABI (not by the page's plan).
 */
async function sentTx(rpcUrl: string, text: string): Promise<{ to: string | undefined; input: Hex }> {
  const hash = /^Done: (0x[0-9a-f]{64})/.exec(text)?.[1];
  expect(hash, text).toBeDefined();
  const tx = await createPublicClient({ transport: http(rpcUrl) }).getTransaction({ hash: hash as Hex });
  return { to: tx.to?.toLowerCase(), input: tx.input };
}

async function shoot(pages: Page[], name: string): Promise<void> {
  for (const p of pages) {
    const size = p.viewportSize()!.width < 500 ? "phone" : "desktop";
    await p.screenshot({ path: join(ARTIFACTS, `exit-${name}-${size}.png`), fullPage: true });
  }
}

/** One part of the page, small enough for the documentation. */
async function part(page: Page, selector: string, name: string): Promise<void> {
  await page.locator(selector).screenshot({ path: join(ARTIFACTS, `${name}.png`) });
}

async function recheck(pages: Page[]): Promise<void> {
  for (const p of pages) await p.click("#recheck");
}

const haveChromium = toolAvailable(
  "Debian's chromium at /usr/bin/chromium (apt-get install chromium)",
  existsSync(CHROMIUM),
);

describe.skipIf(!haveChromium)("leaving the devnet's frozen exchange from the escape page", () => {
  it("spot: request, the grace period, freeze, verifyEscape, escape, withdraw; a second escape's reason", async () => {
    const started = Date.now();
    await mkdir(ARTIFACTS, { recursive: true });
    const s = await start("G");
    const starkKey = 0x5a11cen;
    const vault = "5";
    const asset = 0xa000n;
    // Variant G's gateway takes transactions at /gateway/v2/add_transaction, ids from 0.
    const deposit = async (txId: number, amount: string, total: string): Promise<number> => {
      const res = await fetch(`${s.devnet.urls.gateway}/gateway/v2/add_transaction`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          tx_id: txId,
          tx: {
            type: "DepositRequest",
            amount,
            core_key: `0x${starkKey.toString(16)}`,
            token_id: `0x${asset.toString(16)}`,
            vault_id: Number(vault),
          },
        }),
      });
      expect(res.status, await res.text()).toBe(200);
      let settled = -1;
      await waitFor(
        async () => {
          const onchain = s.daemon.chainWatch?.state?.last?.batch_id ?? -1;
          if (onchain < 0 || (await s.daemon.store.getBatch(onchain)) === undefined) return false;
          const e = (await makeOnchainProof(
            s.daemon.store,
            s.daemon.engine,
            "vault",
            vault,
            onchain,
          )) as SpotEscape;
          settled = onchain;
          return e.quantized_amount === total;
        },
        60_000,
        `the deposit of ${amount} on-chain (the vault holding ${total})`,
      );
      return settled;
    };
    const early = await deposit(0, "1200", "1200");
    await deposit(1, "2200", "3400");
    const reader = createPublicClient({ transport: http(s.rpc) });
    // Registration needs the stark key's signature, which the page cannot make: done beforehand.
    await rpc(s.rpc, "eth_sendTransaction", [
      {
        from: USER,
        to: s.exchange,
        data: encodeFunctionData({
          abi: EXCHANGE_ABI,
          functionName: "registerEthAddress",
          args: [USER, starkKey, SIG],
        }),
      },
    ]);

    const desktop = await launchChromium(DESKTOP);
    cleanups.push(() => desktop.close());
    const phone = await launchChromium(PHONE);
    cleanups.push(() => phone.close());
    await withWallet(desktop, s.rpc);
    await withWallet(phone, s.rpc);
    const page = await openJourney(desktop, s, vault);
    const mirror = await openJourney(phone, s, vault);
    const pages = [page, mirror];

    await stepStatus(page, "request", "next");
    await stepStatus(mirror, "request", "next");
    expect(await page.$('li[data-step="register"]')).toBeNull();
    expect(await page.textContent("#leaf")).toMatch(/3\.4 TOKEN|3400/);
    await shoot(pages, "1-request");
    expect(await sendStep(page, "request")).toMatch(/^Done: 0x[0-9a-f]{64}/);
    await recheck([mirror]);
    await stepStatus(page, "freeze", "waiting");
    await stepStatus(mirror, "freeze", "waiting");
    expect(await page.textContent('li[data-step="freeze"]')).toMatch(/Possible from/);
    await shoot(pages, "2-waiting");
    await part(page, 'li[data-step="freeze"]', "docs-waiting");

    await rpc(s.rpc, "evm_increaseTime", [GRACE_S]);
    await rpc(s.rpc, "evm_mine", []);
    await recheck(pages);
    await stepStatus(page, "freeze", "next");
    expect(await sendStep(page, "freeze")).toMatch(/^Done: /);
    await waitFor(
      async () => (await s.daemon.store.onchain.frozenBatchId()) !== undefined,
      20_000,
      "the freeze",
    );
    await recheck(pages);
    await stepStatus(page, "verify_escape", "next");
    await stepStatus(mirror, "verify_escape", "next");
    await shoot(pages, "3-frozen");

    // The proof of the batch before the freeze, opened as a file: labelled, its escape would fail.
    const old = await dacdAsync([
      "proof",
      "vault",
      vault,
      "--batch",
      String(early),
      "--format",
      "starkex",
      "--config",
      s.configPath,
    ]);
    expect(old.code, old.err).toBe(0);
    const oldFile = join(await tempDir("dacd-old-proof-"), "vault-5-old.json");
    await writeFile(oldFile, old.out);
    await page.setInputFiles("#proof-file", oldFile);
    await page.waitForSelector("#batch-warning:not([hidden])");
    expect(await page.textContent("#batch-warning")).toMatch(/not the state the exchange froze at/);
    await shoot([page], "3b-old-batch");
    await recheck([page]);
    await page.waitForSelector("#batch-warning[hidden]", { state: "attached" });
    await stepStatus(page, "verify_escape", "next");

    expect(await sendStep(page, "verify_escape")).toMatch(/^Done: /);
    await recheck([page]);
    await stepStatus(page, "escape", "next");
    expect(await sendStep(page, "escape")).toMatch(/^Done: /);
    await recheck(pages);
    await stepStatus(page, "withdraw", "next");
    await stepStatus(mirror, "withdraw", "next");
    await shoot(pages, "4-escaped");

    // A second escape: the check before sending gives StarkEx's reason, in words.
    expect(await sendStep(page, "escape")).toMatch(
      /ESCAPE_ALREADY_USED: this vault or position has already escaped/,
    );
    await shoot([page], "5-second-escape");
    await part(page, 'li[data-step="escape"]', "docs-second-escape");

    const balance = () =>
      reader.readContract({ address: s.token, abi: ERC20_ABI, functionName: "balanceOf", args: [USER] });
    const quantum = (await reader.readContract({
      address: s.exchange,
      abi: EXCHANGE_ABI,
      functionName: "getQuantum",
      args: [asset],
    })) as bigint;
    const before = await balance();
    const withdrawn = await sendStep(page, "withdraw");
    expect(withdrawn).toMatch(/^Done: /);
    expect(await sentTx(s.rpc, withdrawn)).toEqual({
      to: s.exchange.toLowerCase(),
      input: encodeFunctionData({ abi: EXCHANGE_ABI, functionName: "withdraw", args: [starkKey, asset] }),
    });
    expect((await balance()) - before).toBe(quantum * 3400n);
    await recheck(pages);
    await stepStatus(page, "withdraw", "done");
    await stepStatus(mirror, "withdraw", "done");
    expect(await page.textContent("#where")).toMatch(/Every step is done/);
    await shoot(pages, "6-withdrawn");
    await part(page, 'li[data-step="withdraw"]', "docs-withdrawn");

    // Found again by the Ethereum address: the exchange's registration, read through the wallet.
    await page.fill("#leaf-id", USER);
    await page.click("#lookup button[type=submit]");
    await page.waitForFunction(() => document.querySelector("#status")?.textContent === "");
    await stepStatus(page, "withdraw", "done");
    expect(await page.textContent("#leaf-title")).toBe("Vault 5");
    console.log(`the spot journey in Chromium took ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }, 300_000);

  it("perpetual: a position's owner walks out from the page with the collateral token", async () => {
    const started = Date.now();
    const s = await start("P");
    const starkKey = 0x7777n;
    const position = "7";
    const amount = 777000n;
    await submitToDevnet(s.devnet.urls.gateway, {
      type: "DEPOSIT",
      amount: amount.toString(),
      position_id: position,
      public_key: `0x${starkKey.toString(16)}`,
    });
    await waitFor(
      async () => {
        const onchain = s.daemon.chainWatch?.state?.last?.batch_id ?? -1;
        if (onchain < 0 || (await s.daemon.store.getBatch(onchain)) === undefined) return false;
        const e = (await makeOnchainProof(
          s.daemon.store,
          s.daemon.engine,
          "position",
          position,
          onchain,
        )) as PerpetualEscape;
        return e.collateral_balance === amount.toString();
      },
      60_000,
      "the deposit on-chain",
    );
    await rpc(s.rpc, "eth_sendTransaction", [
      {
        from: USER,
        to: s.exchange,
        data: encodeFunctionData({
          abi: EXCHANGE_ABI,
          functionName: "registerEthAddress",
          args: [USER, starkKey, SIG],
        }),
      },
    ]);
    const desktop = await launchChromium(DESKTOP);
    cleanups.push(() => desktop.close());
    await withWallet(desktop, s.rpc);
    const page = await openJourney(desktop, s, position);
    await stepStatus(page, "request", "next");
    await shoot([page], "perpetual-1-request");
    expect(await sendStep(page, "request")).toMatch(/^Done: /);
    await stepStatus(page, "freeze", "waiting");
    await rpc(s.rpc, "evm_increaseTime", [GRACE_S]);
    await rpc(s.rpc, "evm_mine", []);
    await recheck([page]);
    await stepStatus(page, "freeze", "next");
    expect(await sendStep(page, "freeze")).toMatch(/^Done: /);
    await waitFor(
      async () => (await s.daemon.store.onchain.cursor())?.frozen?.shared_state !== undefined,
      20_000,
      "the frozen shared state",
    );
    await recheck([page]);
    await stepStatus(page, "verify_escape", "next");
    await shoot([page], "perpetual-2-frozen");
    expect(await sendStep(page, "verify_escape")).toMatch(/^Done: /);
    await recheck([page]);
    await stepStatus(page, "escape", "next");
    expect(await sendStep(page, "escape")).toMatch(/^Done: /);
    await recheck([page]);
    await stepStatus(page, "withdraw", "next");
    expect(await sendStep(page, "escape")).toMatch(/ESCAPE_ALREADY_USED/);
    const reader = createPublicClient({ transport: http(s.rpc) });
    const balance = () =>
      reader.readContract({ address: s.token, abi: ERC20_ABI, functionName: "balanceOf", args: [USER] });
    const assetType = (await reader.readContract({
      address: s.exchange,
      abi: EXCHANGE_ABI,
      functionName: "getSystemAssetType",
    })) as bigint;
    const quantum = (await reader.readContract({
      address: s.exchange,
      abi: EXCHANGE_ABI,
      functionName: "getQuantum",
      args: [assetType],
    })) as bigint;
    const before = await balance();
    const withdrawn = await sendStep(page, "withdraw");
    expect(withdrawn).toMatch(/^Done: /);
    expect(await sentTx(s.rpc, withdrawn)).toEqual({
      to: s.exchange.toLowerCase(),
      input: encodeFunctionData({ abi: EXCHANGE_ABI, functionName: "withdraw", args: [starkKey, assetType] }),
    });
    expect((await balance()) - before).toBe(quantum * amount);
    await recheck([page]);
    await shoot([page], "perpetual-3-withdrawn");
    console.log(`the perpetual journey in Chromium took ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }, 300_000);
});
