import { PAGE_CSS } from "./css.js";
import { PAGE_HTML } from "./html.js";
import { PAGE_JS } from "./js.js";

/**
 * The escape page's files, by the name they are served under: the escape API serves them at `/`,
 * the escape kit writes them beside its manifest. Same-origin files only, no outside assets, so
 * that `PAGE_CSP` holds.
 */

export const PAGE_CSP = "default-src 'self'";

export const PAGE_FILES: Readonly<Record<string, { readonly type: string; readonly body: string }>> = {
  "index.html": { type: "text/html; charset=utf-8", body: PAGE_HTML },
  "escape.js": { type: "text/javascript; charset=utf-8", body: PAGE_JS },
  "escape.css": { type: "text/css; charset=utf-8", body: PAGE_CSS },
};
