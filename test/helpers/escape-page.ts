import type { BrowserContext } from "playwright-core";
import { tempDir } from "./temp-dir.js";

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

export { signingMember } from "./signing-member.js";
