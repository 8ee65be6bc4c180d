import { PAGE_FILE_NAMES } from "../escape/page/assets.js";

/**
 * The escape API's routes, each with the OpenAPI paths it serves (openapi.ts documents each of
 * them; a unit test checks both ways). A request path is matched against the OpenAPI path with
 * each `{parameter}` one path segment, unless the route takes a wider pattern.
 */

export const API_ROUTES = [
  "batches_latest",
  "leaf",
  "proof",
  "escape",
  "exit",
  "keys",
  "escape_info",
  "page",
  "dump",
  "openapi",
  "unknown",
] as const;
export type ApiRoute = (typeof API_ROUTES)[number];

export interface RouteSpec {
  readonly route: Exclude<ApiRoute, "unknown">;
  /** OpenAPI path templates. */
  readonly paths: readonly string[];
  /** What the route answers, when wider than its paths. */
  readonly match?: RegExp;
}

export const ROUTE_TABLE: readonly RouteSpec[] = [
  { route: "page", paths: ["/", ...PAGE_FILE_NAMES.map((name) => `/${name}`)] },
  { route: "escape_info", paths: ["/v1/escape/info"] },
  { route: "batches_latest", paths: ["/v1/batches/latest"] },
  { route: "openapi", paths: ["/v1/openapi.json"] },
  { route: "leaf", paths: ["/v1/leaf/{tree}/{id}"] },
  { route: "proof", paths: ["/v1/proof/{tree}/{id}"] },
  { route: "keys", paths: ["/v1/escape/keys/{starkKey}"] },
  { route: "exit", paths: ["/v1/escape/vault/{id}/exit", "/v1/escape/position/{id}/exit"] },
  {
    route: "escape",
    paths: ["/v1/escape/vault/{id}", "/v1/escape/position/{id}"],
    // Any tree, so that one with no on-chain escape is told so (404 naming the tree).
    match: /^\/v1\/escape\/[^/]+\/[^/]+$/,
  },
  { route: "dump", paths: ["/v1/dump/{tree}"] },
];

const templateRegex = (template: string): string =>
  template.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}/]+\}/g, "[^/]+");

const MATCHERS: readonly { route: RouteSpec["route"]; re: RegExp }[] = ROUTE_TABLE.map((r) => ({
  route: r.route,
  re: r.match ?? new RegExp(`^(?:${r.paths.map(templateRegex).join("|")})$`),
}));

/** The route of a request path (the target without its query). */
export function routeOf(path: string): ApiRoute {
  for (const m of MATCHERS) if (m.re.test(path)) return m.route;
  return "unknown";
}
