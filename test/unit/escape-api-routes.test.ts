import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEscapeApi, type EscapeApi } from "../../src/api/escape-api.js";
import { OPENAPI } from "../../src/api/openapi.js";
import { API_ROUTES, ROUTE_TABLE, routeOf } from "../../src/api/routes.js";
import { PAGE_FILE_NAMES, pageFile } from "../../src/escape/page/assets.js";
import { createEngine } from "../../src/verifier/hash/select.js";
import type { HashEngine } from "../../src/verifier/hash/engine.js";
import { LevelStore } from "../../src/storage/level-store.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";

/**
 * Every route the escape API serves is in its OpenAPI document and every documented path is
 * served: from the router's table, and over HTTP from a real API on an empty store, where a path
 * the router does not know is the only 404 saying "no such path".
 */

const documented = Object.keys(OPENAPI.paths);
/** A request path for an OpenAPI path, its parameters filled in. */
const fill = (template: string): string => template.replace("{tree}", "vault").replace("{id}", "12");

let store: LevelStore;
let engine: HashEngine;
let api: EscapeApi;

beforeAll(async () => {
  store = await LevelStore.open(join(await tempDir("dacd-api-routes-"), "db"));
  engine = createEngine("wasm");
  api = await startEscapeApi({
    host: "127.0.0.1",
    port: 0,
    store,
    engine,
    rateLimit: 1000,
    maxConcurrency: 4,
  });
});

afterAll(async () => {
  await api?.close();
  await store?.close();
  await engine?.close?.();
  await removeTempDirs();
});

describe("the escape API's routes and openapi.json", () => {
  it("documents every path of every route, and routes every documented path to the route listing it", () => {
    const served = ROUTE_TABLE.flatMap((r) => r.paths);
    expect(served.filter((p) => !documented.includes(p))).toEqual([]);
    expect(documented.filter((p) => !served.includes(p))).toEqual([]);
    for (const r of ROUTE_TABLE)
      for (const p of r.paths) expect({ p, route: routeOf(fill(p)) }).toEqual({ p, route: r.route });
    // Any tree under /v1/escape/, so that one with no on-chain escape is told so by name.
    expect(routeOf("/v1/escape/order/1")).toBe("escape");
    // Every route but "unknown" has its paths in the table.
    expect(API_ROUTES.filter((r) => r !== "unknown" && !ROUTE_TABLE.some((t) => t.route === r))).toEqual([]);
  });

  it("includes the page (/ and each of its files) and /v1/escape/info", () => {
    expect(documented).toEqual(
      expect.arrayContaining(["/", "/v1/escape/info", ...PAGE_FILE_NAMES.map((n) => `/${n}`)]),
    );
    expect(PAGE_FILE_NAMES).toEqual(expect.arrayContaining(["index.html", "escape.js", "escape.css"]));
  });

  it("is the committed docs/escape-api.openapi.json", async () => {
    const committed = JSON.parse(
      await readFile(join(import.meta.dirname, "..", "..", "docs", "escape-api.openapi.json"), "utf8"),
    ) as unknown;
    expect(committed).toEqual(JSON.parse(JSON.stringify(OPENAPI)));
  });

  it("over HTTP: each documented path is answered by its route; others are 'no such path'", async () => {
    for (const p of documented) {
      const res = await fetch(api.url + fill(p));
      const body = await res.text();
      // An empty store has no signed batch: the data routes answer 404 for that, not for the path.
      expect({ p, unknownPath: /no such path/.test(body) }).toEqual({ p, unknownPath: false });
      expect({ p, status: res.status }).toEqual({
        p,
        status: /^\/v1\/(leaf|proof|escape|dump|batches)/.test(p) ? 404 : 200,
      });
    }
    for (const p of ["/v1/escape", "/v1/escape/vault", "/index.htm", "/v1/openapi", "/v1/leaf/vault/1/2"]) {
      const res = await fetch(api.url + p);
      expect({ p, status: res.status, unknown: /no such path/.test(await res.text()) }).toEqual({
        p,
        status: 404,
        unknown: true,
      });
    }
  });
});

describe("the escape API's answers to input it echoes", () => {
  it("error JSON, which echoes the request, says nosniff (no browser takes it for HTML)", async () => {
    for (const path of [
      "/<script>alert(1)</script>",
      "/v1/batches/latest?<b>=1",
      "/v1/batches/latest?batch=<i>",
    ]) {
      const res = await fetch(`${api.url}${path}`);
      expect(res.status, path).toBeGreaterThanOrEqual(400);
      expect(res.headers.get("content-type"), path).toBe("application/json");
      expect(res.headers.get("x-content-type-options"), path).toBe("nosniff");
    }
    const ok = await fetch(`${api.url}/v1/openapi.json`);
    expect(ok.headers.get("x-content-type-options")).toBe("nosniff");
  });

  it("the page with a query string (a shared link, a tracker's tail) is the page, not a JSON 400", async () => {
    for (const path of ["/?anything", "/?vault=12&x=1", `/${PAGE_FILE_NAMES[0]}?v=2`]) {
      const res = await fetch(`${api.url}${path}`);
      expect(res.status, path).toBe(200);
      expect(res.headers.get("content-type"), path).not.toBe("application/json");
    }
    expect(await (await fetch(`${api.url}/?anything`)).text()).toBe(pageFile("index.html").body);
  });
});
