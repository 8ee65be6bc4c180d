import { mkdir, readFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toChecksumAddress } from "../../src/config/address.js";
import { verifyOnchainProof } from "../../src/escape/onchain/check.js";
import { kitPath } from "../../src/escape/kit/layout.js";
import { createEngine } from "../../src/verifier/hash/select.js";
import { dacdAsync } from "../helpers/dacd-cli.js";
import {
  CHROMIUM,
  launchChromium,
  PHONE,
  signingMember as startSigningMember,
} from "../helpers/escape-page.js";
import { freePort } from "../helpers/free-port.js";
import { nginxAvailable, startNginx } from "../helpers/nginx.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";
import { toolAvailable } from "../helpers/tool-required.js";
import { loadChain, type ChainName } from "../helpers/vectors.js";

/**
 * The escape page in headless Chromium (Debian's chromium, driven by playwright-core; no browser
 * is downloaded): served by a signing member's escape API, it fetches a vault's proof and shows
 * exactly the call data `dacd proof --format starkex` prints, with the configured contracts and
 * the root check; from an escape kit made beside the running member (through its control socket)
 * and served by nginx, the same. A screenshot on a phone-sized screen is kept in test-artifacts/.
 * Also: a perpetual member's kit beside the daemon, every position's proof verified.
 */

const haveChromium = toolAvailable(
  "Debian's chromium at /usr/bin/chromium (apt-get install chromium)",
  existsSync(CHROMIUM),
);
const haveNginx = nginxAvailable();
const ARTIFACTS = join(import.meta.dirname, "..", "..", "test-artifacts");
const EXCHANGE = toChecksumAddress("0x" + "5fdcca53617f4d2b9134b29090c87d01058e27e9");
const VERIFIER = toChecksumAddress("0x" + "b8ef4a31b1d1e2bd2b1a3d0ac3d0f6f7bd9c6e4a");

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await removeTempDirs();
});

async function signingMember(chain: ChainName, extra: string) {
  const { expected } = loadChain(chain);
  return { ...(await startSigningMember(chain, extra, cleanups)), expected };
}

/** The calldata the page shows, after looking up `id` on the page at `url`. */
async function pageCalls(
  browser: import("playwright-core").BrowserContext,
  url: string,
  id: string,
  mode: string,
  screenshot?: string,
): Promise<{ calls: Record<string, string>; csp: string | undefined; rootCheck: string; text: string }> {
  const page = await browser.newPage();
  const problems: string[] = [];
  page.on("pageerror", (e) => problems.push(e.message));
  // A 404 is expected where the page probes for a kit's manifest beside it (and its favicon).
  page.on("console", (m) => {
    if (m.type() === "error" && !/status of 404/.test(m.text())) problems.push(m.text());
  });
  try {
    const res = await page.goto(url);
    expect(res?.status()).toBe(200);
    await page.waitForSelector(`body[data-ready="${mode}"]`, { timeout: 20_000 });
    await page.fill("#leaf-id", id);
    await page.click("button[type=submit]");
    await page.waitForSelector("#result:not([hidden])", { timeout: 20_000 });
    const calls: Record<string, string> = {};
    for (const area of await page.$$("textarea[data-call]"))
      calls[(await area.getAttribute("data-call"))!] = await area.inputValue();
    const rootCheck = await page.textContent("#root-check");
    const text = await page.textContent("main");
    if (screenshot) await page.screenshot({ path: screenshot, fullPage: true });
    expect(problems).toEqual([]);
    return {
      calls,
      csp: res?.headers()["content-security-policy"],
      rootCheck: rootCheck ?? "",
      text: text ?? "",
    };
  } finally {
    await page.close();
  }
}

describe.skipIf(!haveChromium)("the escape page in headless Chromium", () => {
  let browser: import("playwright-core").BrowserContext;
  let m: Awaited<ReturnType<typeof signingMember>>;
  let api: string;

  beforeAll(async () => {
    const port = await freePort();
    m = await signingMember(
      "spot-chain",
      [
        `escape_api_port: ${port}`,
        "escape_api_rate_limit: 1000",
        "escape_contracts:",
        `  exchange: "${EXCHANGE}"`,
        `  verifier: "${VERIFIER}"`,
      ].join("\n"),
    );
    api = `http://127.0.0.1:${port}`;
    browser = await launchChromium(PHONE);
    cleanups.push(() => browser.close());
    await mkdir(ARTIFACTS, { recursive: true });
  }, 180_000);

  it("from the member's escape API: the call data the CLI prints, the contracts, the root check", async () => {
    const csv = await (await fetch(`${api}/v1/dump/vault`)).text();
    const id = csv.split("\n")[1]!.split(",")[0]!;
    const cli = await dacdAsync(["proof", "vault", id, "--format", "starkex", "--config", m.configPath]);
    expect(cli.code).toBe(0);
    const proof = JSON.parse(cli.out) as {
      calldata: { verify_escape: string; escape: string };
      vault_root: string;
    };
    const shown = await pageCalls(browser, `${api}/`, id, "api", join(ARTIFACTS, "escape-page-api.png"));
    expect(shown.csp).toBe("default-src 'self'");
    expect(shown.calls.verify_escape).toBe(proof.calldata.verify_escape);
    expect(shown.calls.escape).toBe(proof.calldata.escape);
    // withdraw's function depends on the asset's kind (getAssetInfo): no call data without the chain.
    expect(shown.calls.withdraw).toBeUndefined();
    expect(shown.calls.request).toMatch(/^0x[0-9a-f]{8}[0-9a-f]{128}$/);
    expect(shown.rootCheck).toContain(proof.vault_root);
    expect(shown.rootCheck).toContain("They match");
    expect(shown.text).toContain(EXCHANGE);
    expect(shown.text).toContain(VERIFIER);
  }, 120_000);

  it.skipIf(!haveNginx)(
    "from an escape kit made beside the running member, served by nginx",
    async () => {
      const work = await tempDir("dacd-escape-page-");
      const kit = join(work, "kit");
      const made = await dacdAsync(["escape-kit", "--format", "1", "--config", m.configPath, "--out", kit]);
      expect(made.err).toBe("");
      expect(made.code).toBe(0);
      const manifest = JSON.parse(await readFile(join(kit, "manifest.json"), "utf8")) as {
        escape_contracts: unknown;
        files: number;
      };
      expect(manifest.escape_contracts).toEqual({ exchange: EXCHANGE, verifier: VERIFIER });
      const csv = await (await fetch(`${api}/v1/dump/vault`)).text();
      const ids = csv
        .split("\n")
        .slice(1)
        .filter(Boolean)
        .map((l) => l.split(",")[0]!);
      expect(manifest.files).toBe(ids.length);
      const cli = await dacdAsync([
        "proof",
        "vault",
        ids[0]!,
        "--format",
        "starkex",
        "--config",
        m.configPath,
      ]);
      expect(await readFile(join(kit, kitPath("vault", ids[0]!)), "utf8")).toBe(cli.out);
      const server = await startNginx(kit, join(work, "nginx"));
      cleanups.push(server.stop);
      const proof = JSON.parse(cli.out) as { calldata: { verify_escape: string; escape: string } };
      const shown = await pageCalls(
        browser,
        `${server.url}/`,
        ids[0]!,
        "kit",
        join(ARTIFACTS, "escape-page-kit.png"),
      );
      expect(shown.calls.verify_escape).toBe(proof.calldata.verify_escape);
      expect(shown.calls.escape).toBe(proof.calldata.escape);
      expect(shown.rootCheck).toContain("They match");
    },
    180_000,
  );
});

describe("the escape kit of a perpetual member, beside the running daemon", () => {
  it("writes every non-empty position's proof, each verified and equal to dacd proof --format starkex", async () => {
    const p = await signingMember("perpetual-chain", "");
    const work = await tempDir("dacd-escape-kit-perp-");
    const kit = join(work, "kit");
    const made = await dacdAsync(["escape-kit", "--format", "1", "--config", p.configPath, "--out", kit]);
    expect(made.err).toBe("");
    expect(made.code).toBe(0);
    const manifest = JSON.parse(await readFile(join(kit, "manifest.json"), "utf8")) as {
      files: number;
      tree: string;
      root: string;
      shards: Record<string, { files: number }>;
    };
    expect(manifest.tree).toBe("position");
    const dump = await dacdAsync(["dump", "--config", p.configPath, "--out", join(work, "dump")]);
    expect(dump.code).toBe(0);
    const ids = (await readFile(join(work, "dump", "positions.jsonl"), "utf8"))
      .split("\n")
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { position_id: string }).position_id);
    expect(manifest.files).toBe(ids.length);
    const engine = createEngine("wasm");
    try {
      for (const id of ids) {
        const proof = JSON.parse(await readFile(join(kit, kitPath("position", id)), "utf8")) as unknown;
        expect({ id, ...(await verifyOnchainProof(engine, proof, manifest.root)) }).toMatchObject({
          valid: true,
        });
      }
    } finally {
      await engine.close?.();
    }
    for (const id of ids.slice(0, 2)) {
      const cli = await dacdAsync(["proof", "position", id, "--format", "starkex", "--config", p.configPath]);
      expect(await readFile(join(kit, kitPath("position", id)), "utf8")).toBe(cli.out);
    }
  }, 240_000);
});
