import { readFileSync } from "node:fs";
import { DacdError } from "../../errors.js";
import { PAGE_CSS } from "./css.js";
import { PAGE_HTML } from "./html.js";

/**
 * The escape page's files, by the name they are served under: the escape API serves them at `/`,
 * the escape kit writes them beside its manifest. Same-origin files only, no outside assets, so
 * that `PAGE_CSP` holds. The script is the browser app in ./app bundled by `npm run build`
 * (scripts/build-page.mjs) into dist/page/escape.js, read once when first asked for.
 */

export const PAGE_CSP = "default-src 'self'";

/** Where the bundle is: beside the compiled module in a package, or dist/ when run from src/. */
const BUNDLE_PLACES = ["../../../page/escape.js", "../../../dist/page/escape.js"];

let bundle: string | undefined;

function pageScript(): string {
  if (bundle !== undefined) return bundle;
  for (const rel of BUNDLE_PLACES) {
    try {
      bundle = readFileSync(new URL(rel, import.meta.url), "utf8");
      return bundle;
    } catch {
      // Not at this place.
    }
  }
  throw new DacdError(
    "CONFIG",
    "the escape page's script (dist/page/escape.js) is missing: run `npm run build`",
  );
}

export interface PageFile {
  readonly type: string;
  readonly body: string;
}

const TYPES = {
  "index.html": "text/html; charset=utf-8",
  "escape.js": "text/javascript; charset=utf-8",
  "escape.css": "text/css; charset=utf-8",
} as const;

/** The page's file names (served at `/{name}`). */
export const PAGE_FILE_NAMES = Object.keys(TYPES) as readonly (keyof typeof TYPES)[];

export function pageFileType(name: string): string {
  return TYPES[name as keyof typeof TYPES];
}

/** One file of the page; the script is read from the build's bundle. */
export function pageFile(name: string): PageFile {
  const type = pageFileType(name);
  if (name === "index.html") return { type, body: PAGE_HTML };
  if (name === "escape.css") return { type, body: PAGE_CSS };
  return { type, body: pageScript() };
}
