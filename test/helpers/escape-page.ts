import { rm } from "node:fs/promises";
import type { BrowserContext } from "playwright-core";
import type { Daemon } from "../../src/app.js";
import { memberSetup, startQuietDaemon, waitFor } from "./daemon.js";
import { tempDir } from "./temp-dir.js";
import { VectorGateway } from "./vector-gateway.js";
import { loadChain, type ChainName } from "./vectors.js";

/** Debian's chromium, which playwright-core drives (no browser is downloaded). */
export const CHROMIUM = "/usr/bin/chromium";

export const PHONE = { width: 390, height: 844 } as const;
export const DESKTOP = { width: 1280, height: 800 } as const;

/** A fresh headless Chromium profile with this screen. */
export async function launchChromium(viewport: { width: number; height: number }): Promise<BrowserContext> {
  const { chromium } = await import("playwright-core");
  return chromium.launchPersistentContext(await tempDir("dacd-chromium-"), {
    executablePath: CHROMIUM,
    headless: true,
    viewport,
    deviceScaleFactor: viewport.width < 500 ? 2 : 1,
    acceptDownloads: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

/** A member that has signed every batch of a vector chain, its daemon running; `cleanups` stops it. */
export async function signingMember(
  chain: ChainName,
  extra: string,
  cleanups: (() => Promise<void>)[],
): Promise<{ daemon: Daemon; configPath: string; dir: string }> {
  const { responses, expected } = loadChain(chain);
  const gw = await new VectorGateway(
    responses,
    expected,
    expected.profile === "perpetual" ? "P" : "G",
  ).start();
  cleanups.push(() => gw.close());
  gw.available = expected.batches.length;
  const setup = await memberSetup({
    profile: expected.profile,
    privateKey: expected.private_key,
    gatewayUrl: gw.url,
    feeder: true,
    extra,
  });
  cleanups.push(() => rm(setup.dir, { recursive: true, force: true }));
  const daemon = await startQuietDaemon(setup.config);
  cleanups.push(() => daemon.stop());
  await waitFor(
    () => daemon.member.state.nextBatchId === expected.batches.length,
    120_000,
    "every batch signed",
  );
  return { daemon, configPath: setup.configPath, dir: setup.dir };
}
