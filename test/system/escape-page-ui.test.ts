import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toChecksumAddress } from "../../src/config/address.js";
import { exitPlan, type ExitProof } from "../../src/escape/exit/plan.js";
import { kitPath } from "../../src/escape/kit/layout.js";
import { dacdAsync } from "../helpers/dacd-cli.js";
import { CHROMIUM, DESKTOP, launchChromium, PHONE, signingMember } from "../helpers/escape-page.js";
import { freePort } from "../helpers/free-port.js";
import { nginxAvailable, startNginx } from "../helpers/nginx.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";
import { toolAvailable } from "../helpers/tool-required.js";

/**
 * The escape page as a user meets it, in headless Chromium at a desktop's and a phone's size: a
 * vault found by its id and by its stark key, its steps in order with the call data of the exit
 * plan; an empty vault with no transaction; a perpetual position laid out in readable columns; no
 * sideways scrolling on a phone; a kit opened from disk (file://) with the user's proof file; the
 * Safe batch download. Screenshots of each in test-artifacts/.
 */

const ARTIFACTS = join(import.meta.dirname, "..", "..", "test-artifacts");
const EXCHANGE = toChecksumAddress("0x" + "5fdcca53617f4d2b9134b29090c87d01058e27e9") as `0x${string}`;
const VERIFIER = toChecksumAddress("0x" + "b8ef4a31b1d1e2bd2b1a3d0ac3d0f6f7bd9c6e4a") as `0x${string}`;
/** Without a wallet the page cannot tell whether the key is registered: register comes first. */
const STEPS = ["register", "request", "freeze", "verify_escape", "escape", "withdraw"];

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await removeTempDirs();
});

/** A page with its errors collected (a 404 is expected where the page probes for a kit's manifest). */
async function openPage(browser: BrowserContext, url: string): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage();
  const problems: string[] = [];
  page.on("pageerror", (e) => problems.push(e.message));
  page.on("console", (m) => {
    if (
      m.type() === "error" &&
      !/status of 404|ERR_FILE_NOT_FOUND|Failed to fetch|Failed to load/.test(m.text())
    )
      problems.push(m.text());
  });
  await page.goto(url);
  return { page, problems };
}

async function find(page: Page, what: string): Promise<void> {
  await page.fill("#leaf-id", what);
  await page.click("#lookup button[type=submit]");
}

async function shown(page: Page): Promise<{ steps: string[]; calls: Record<string, string> }> {
  await page.waitForSelector("#result:not([hidden])", { timeout: 20_000 });
  const steps = await page.$$eval("#steps li[data-step]", (els) =>
    els.map((e) => e.getAttribute("data-step")!),
  );
  const calls: Record<string, string> = {};
  for (const area of await page.$$("textarea[data-call]"))
    calls[(await area.getAttribute("data-call"))!] = await area.inputValue();
  return { steps, calls };
}

/** How far the page is wider than the screen (0: no sideways scrolling). */
const overflow = (page: Page) =>
  page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);

const haveChromium = toolAvailable(
  "Debian's chromium at /usr/bin/chromium (apt-get install chromium)",
  existsSync(CHROMIUM),
);

describe.skipIf(!haveChromium)("the escape page in headless Chromium, desktop and phone", () => {
  let desktop: BrowserContext;
  let phone: BrowserContext;
  let spotApi: string;
  let perpApi: string;
  let spotConfig: string;

  beforeAll(async () => {
    const contracts = ["escape_contracts:", `  exchange: "${EXCHANGE}"`, `  verifier: "${VERIFIER}"`];
    const spotPort = await freePort();
    const spot = await signingMember(
      "spot-chain",
      [`escape_api_port: ${spotPort}`, "escape_api_rate_limit: 1000", ...contracts].join("\n"),
      cleanups,
    );
    spotConfig = spot.configPath;
    spotApi = `http://127.0.0.1:${spotPort}`;
    const perpPort = await freePort();
    await signingMember(
      "perpetual-chain",
      [`escape_api_port: ${perpPort}`, "escape_api_rate_limit: 1000"].join("\n"),
      cleanups,
    );
    perpApi = `http://127.0.0.1:${perpPort}`;
    desktop = await launchChromium(DESKTOP);
    cleanups.push(() => desktop.close());
    phone = await launchChromium(PHONE);
    cleanups.push(() => phone.close());
    await mkdir(ARTIFACTS, { recursive: true });
  }, 240_000);

  async function firstVault(): Promise<{ id: string; key: string; proof: ExitProof }> {
    const csv = await (await fetch(`${spotApi}/v1/dump/vault`)).text();
    const [id, key] = csv.split("\n")[1]!.split(",");
    const cli = await dacdAsync(["proof", "vault", id!, "--format", "starkex", "--config", spotConfig]);
    expect(cli.code).toBe(0);
    return { id: id!, key: key!, proof: JSON.parse(cli.out) as ExitProof };
  }

  it("a vault by its id: the steps in order with the exit plan's call data, on a desktop and a phone", async () => {
    const { id, proof } = await firstVault();
    const plan = exitPlan(proof, { exchange: EXCHANGE, verifier: VERIFIER });
    const want = Object.fromEntries(plan.steps.filter((s) => s.data).map((s) => [s.step, s.data]));
    for (const [browser, name] of [
      [desktop, "desktop"],
      [phone, "phone"],
    ] as const) {
      const { page, problems } = await openPage(browser, `${spotApi}/`);
      await page.waitForSelector('body[data-ready="api"]', { timeout: 20_000 });
      await find(page, id);
      const got = await shown(page);
      expect(got.steps).toEqual(STEPS);
      expect(got.calls).toEqual(want);
      // No wallet in this browser: the page says so and offers the call data for any wallet.
      expect(await page.textContent("#wallet")).toContain("No wallet found");
      expect(await page.textContent("main")).not.toMatch(/ask the operator/i);
      expect(await overflow(page)).toBe(0);
      await page.screenshot({ path: join(ARTIFACTS, `escape-page-spot-${name}.png`), fullPage: true });
      expect(problems).toEqual([]);
      await page.close();
    }
  }, 120_000);

  it("a vault by its stark key; the Safe batch download carries the steps with call data", async () => {
    const { id, key, proof } = await firstVault();
    const { page, problems } = await openPage(desktop, `${spotApi}/`);
    await page.waitForSelector('body[data-ready="api"]', { timeout: 20_000 });
    await find(page, key);
    // One vault of this key goes straight to it; several are offered as a choice.
    const which = await Promise.race([
      page.waitForSelector("#result:not([hidden])").then(() => "result"),
      page.waitForSelector("#matches button").then(() => "matches"),
    ]);
    if (which === "matches") await page.click(`#matches button:text("vault ${id}")`);
    await shown(page);
    expect(await page.textContent("#leaf-title")).toBe(`Vault ${id}`);
    const [download] = await Promise.all([page.waitForEvent("download"), page.click("#download-safe")]);
    expect(download.suggestedFilename()).toBe(`vault-${id}-safe-batch.json`);
    const batch = JSON.parse(await readFile((await download.path())!, "utf8")) as {
      transactions: { to: string; data: string; value: string }[];
    };
    const plan = exitPlan(proof, { exchange: EXCHANGE, verifier: VERIFIER });
    expect(batch.transactions).toEqual(
      plan.steps
        .filter((s) => s.data)
        .map((s) => ({
          to: s.to,
          value: "0",
          data: s.data,
          contractMethod: null,
          contractInputsValues: null,
        })),
    );
    expect(problems).toEqual([]);
    await page.close();
  }, 120_000);

  it("an empty vault says so and offers no transaction", async () => {
    const { page, problems } = await openPage(phone, `${spotApi}/`);
    await page.waitForSelector('body[data-ready="api"]', { timeout: 20_000 });
    await find(page, "999999");
    const got = await shown(page);
    expect(got.steps).toEqual([]);
    expect(got.calls).toEqual({});
    expect(await page.isVisible("#steps-none")).toBe(true);
    expect(await page.textContent("#steps-none")).toMatch(/nothing to withdraw/);
    expect(await page.isVisible("#download-safe")).toBe(false);
    await page.screenshot({ path: join(ARTIFACTS, "escape-page-empty-phone.png"), fullPage: true });
    expect(problems).toEqual([]);
    await page.close();
  }, 60_000);

  it("a perpetual position: readable columns at 1280 px, no sideways scrolling on a phone", async () => {
    const dump = await (await fetch(`${perpApi}/v1/dump/position`)).text();
    const id = (JSON.parse(dump.split("\n")[0]!) as { position_id: string }).position_id;
    for (const [browser, name] of [
      [desktop, "desktop"],
      [phone, "phone"],
    ] as const) {
      const { page, problems } = await openPage(browser, `${perpApi}/`);
      await page.waitForSelector('body[data-ready="api"]', { timeout: 20_000 });
      await find(page, id);
      const got = await shown(page);
      expect(got.steps).toEqual(STEPS);
      // No escape_contracts on this member: the page asks the user, never "ask the operator".
      expect(await page.isVisible("#exchange")).toBe(true);
      expect(await page.textContent("main")).not.toMatch(/ask the operator/i);
      const widths = await page.$$eval("#leaf dd", (els) => els.map((e) => e.getBoundingClientRect().width));
      const least = name === "desktop" ? 500 : 300;
      expect(Math.min(...widths)).toBeGreaterThan(least);
      await page.screenshot({ path: join(ARTIFACTS, `escape-page-perpetual-${name}.png`), fullPage: true });
      // The position's facts fit in the first screens (before: a 3,530 px page of 17 px columns).
      const stepsTop = await page.$eval("#steps", (e) => e.getBoundingClientRect().top + window.scrollY);
      if (name === "desktop") expect(stepsTop).toBeLessThan(1800);
      expect(await overflow(page)).toBe(0);
      expect(problems).toEqual([]);
      await page.close();
    }
  }, 120_000);

  it("a kit (format 1) opened from disk (file://): the user opens their proof file and the manifest", async () => {
    const work = await tempDir("dacd-escape-page-file-");
    const kit = join(work, "kit");
    const made = await dacdAsync(["escape-kit", "--format", "1", "--config", spotConfig, "--out", kit]);
    expect(made.code).toBe(0);
    const { id, proof } = await firstVault();
    const { page, problems } = await openPage(phone, pathToFileURL(join(kit, "index.html")).href);
    await page.waitForSelector('body[data-ready="none"]', { timeout: 20_000 });
    const source = await page.textContent("#source");
    expect(source).toContain("opened from your disk");
    expect(source).not.toContain("Failed to fetch");
    await page.setInputFiles("#proof-file", [join(kit, kitPath("vault", id)), join(kit, "manifest.json")]);
    const got = await shown(page);
    expect(got.steps).toEqual(STEPS);
    const plan = exitPlan(proof, { exchange: EXCHANGE, verifier: VERIFIER });
    expect(got.calls).toEqual(
      Object.fromEntries(plan.steps.filter((s) => s.data).map((s) => [s.step, s.data])),
    );
    expect(await page.inputValue("#exchange")).toBe(EXCHANGE);
    expect(await overflow(page)).toBe(0);
    await page.screenshot({ path: join(ARTIFACTS, "escape-page-file-phone.png"), fullPage: true });
    expect(problems).toEqual([]);
    await page.close();
  }, 120_000);

  it("a kit (format 2) opened from disk: the user opens its folder, finds the vault by key, the reader checks it", async () => {
    const work = await tempDir("dacd-escape-page-kit2-");
    const kit = join(work, "kit");
    const made = await dacdAsync(["escape-kit", "--config", spotConfig, "--out", kit, "--chain-id", "31337"]);
    expect(made.code, made.err).toBe(0);
    const { id, key, proof } = await firstVault();
    const { page, problems } = await openPage(desktop, pathToFileURL(join(kit, "index.html")).href);
    await page.waitForSelector('body[data-ready="none"]', { timeout: 20_000 });
    await page.setInputFiles("#kit-folder", kit);
    await page.waitForSelector('body[data-ready="folder"]', { timeout: 20_000 });
    expect(await page.inputValue("#exchange")).toBe(EXCHANGE);
    expect(await page.inputValue("#chain-id")).toBe("31337");
    await find(page, key);
    const which = await Promise.race([
      page.waitForSelector("#result:not([hidden])").then(() => "result"),
      page.waitForSelector("#matches button").then(() => "matches"),
    ]);
    if (which === "matches") await page.click(`#matches button:text("vault ${id}")`);
    const got = await shown(page);
    expect(await page.textContent("#leaf-title")).toBe(`Vault ${id}`);
    const plan = exitPlan(proof, { exchange: EXCHANGE, verifier: VERIFIER, chainId: 31337 });
    expect(got.calls).toEqual(
      Object.fromEntries(plan.steps.filter((s) => s.data).map((s) => [s.step, s.data])),
    );
    await page.screenshot({ path: join(ARTIFACTS, "escape-page-kit2-folder-desktop.png"), fullPage: true });
    // An id the kit does not hold: said so, no transaction.
    await find(page, "999999");
    await page.waitForSelector("#status.error");
    expect(await page.textContent("#status")).toMatch(/no vault 999999 in this kit/);
    expect(await page.isVisible("#result")).toBe(false);
    expect(problems).toEqual([]);
    await page.close();
  }, 120_000);

  it("a tampered format-2 kit opened from disk: the page refuses the altered shard and index, and shows no transaction", async () => {
    const work = await tempDir("dacd-escape-page-kit2-bad-");
    const kit = join(work, "kit");
    const made = await dacdAsync(["escape-kit", "--config", spotConfig, "--out", kit]);
    expect(made.code, made.err).toBe(0);
    const { id, key } = await firstVault();
    // One byte changed in every shard and every index file, as a CDN or a mirror could serve them.
    for (const dir of ["shards", "keys"])
      for (const name of await readdir(join(kit, dir))) {
        const file = join(kit, dir, name);
        const bytes = await readFile(file);
        const at = bytes.length >> 1;
        bytes[at] = bytes[at]! ^ 0x01;
        await writeFile(file, bytes);
      }
    const { page, problems } = await openPage(desktop, pathToFileURL(join(kit, "index.html")).href);
    await page.waitForSelector('body[data-ready="none"]', { timeout: 20_000 });
    await page.setInputFiles("#kit-folder", kit);
    await page.waitForSelector('body[data-ready="folder"]', { timeout: 20_000 });
    await find(page, id);
    await page.waitForSelector("#status.error");
    expect(await page.textContent("#status")).toMatch(/^The kit refused it: .*shards\/\d+\.bin/);
    expect(await page.isVisible("#result")).toBe(false);
    await find(page, key);
    await page.waitForFunction(() => /keys\//.test(document.querySelector("#status")?.textContent ?? ""));
    expect(await page.getAttribute("#status", "class")).toBe("error");
    expect(await page.isVisible("#result")).toBe(false);
    expect(problems).toEqual([]);
    await page.close();
  }, 120_000);

  it.skipIf(!nginxAvailable())(
    "a kit (format 2) served by nginx: found by stark key, read and checked in the page, on a 4× slowed CPU",
    async () => {
      const work = await tempDir("dacd-escape-page-kit2-http-");
      const kit = join(work, "kit");
      const made = await dacdAsync(["escape-kit", "--config", spotConfig, "--out", kit]);
      expect(made.code, made.err).toBe(0);
      const server = await startNginx(kit, join(work, "nginx"));
      cleanups.push(server.stop);
      const { id, key, proof } = await firstVault();
      const { page, problems } = await openPage(phone, `${server.url}/`);
      await page.waitForSelector('body[data-ready="kit"]', { timeout: 20_000 });
      // A phone's slower CPU, as Chromium's DevTools emulate it: the manifest, the key's index and
      // one shard fetched, the shard's SHA-256 checked and the root recomputed in the page.
      const cdp = await phone.newCDPSession(page);
      await cdp.send("Emulation.setCPUThrottlingRate", { rate: 4 });
      const started = performance.now();
      await find(page, key);
      const which = await Promise.race([
        page.waitForSelector("#result:not([hidden])").then(() => "result"),
        page.waitForSelector("#matches button").then(() => "matches"),
      ]);
      if (which === "matches") await page.click(`#matches button:text("vault ${id}")`);
      const got = await shown(page);
      const ms = performance.now() - started;
      console.log(
        `kit (format 2) over nginx, 4x CPU throttle: stark key to call data in ${ms.toFixed(0)} ms`,
      );
      await cdp.send("Emulation.setCPUThrottlingRate", { rate: 1 });
      const plan = exitPlan(proof, { exchange: EXCHANGE, verifier: VERIFIER });
      expect(got.calls).toEqual(
        Object.fromEntries(plan.steps.filter((s) => s.data).map((s) => [s.step, s.data])),
      );
      expect(await overflow(page)).toBe(0);
      await page.screenshot({ path: join(ARTIFACTS, "escape-page-kit2-http-phone.png"), fullPage: true });
      expect(problems).toEqual([]);
      await page.close();
    },
    120_000,
  );
});
