/** The transaction gateway of variant P and variant G (gateway-interface §4). */
import { Fields, TxError } from "../txs/fields.js";
import type { TxPool } from "../txpool.js";
import type { StateMachine } from "../state/machine.js";
import { HttpError, intParam, json, parseJsonBody, Router, text, type Request } from "./http.js";

export interface AlternativeEndpointConfig {
  readonly url: string;
  readonly bearer_token: string | null;
  readonly client_certificate: string | null;
  readonly client_key: string | null;
  readonly server_certificate: string | null;
  readonly failure_description_url: string | null;
}

export interface GatewayContext<T> {
  readonly variant: "P" | "G";
  readonly pool: TxPool<T>;
  readonly machine: StateMachine<T>;
  readonly contractAddress: string;
  readonly allowDynamicConfig: boolean;
  /** Variant P: transaction types refused by the filter (mutable through the admin API). */
  readonly blockedTxTypes: Set<string>;
  onAdded(): void;
  alternativeConfig: AlternativeEndpointConfig | null;
}

export const ALT_CONFIG_ACCEPTED = "Alternative strategy config is set";
export const ALT_CONFIG_REFUSED =
  "Alternative strategy config is not set: dynamic configuration of the alternative endpoint is not enabled";

const MAX_TX_ID = Number.MAX_SAFE_INTEGER;

export function gatewayRouter<T>(ctx: GatewayContext<T>): Router {
  const r = new Router();
  const address = (): ReturnType<typeof text> => text(JSON.stringify(ctx.contractAddress), "text/plain");
  const setAlt = (req: Request): ReturnType<typeof json> => {
    const config = parseAlternativeConfig(parseJsonBody(req));
    if (!ctx.allowDynamicConfig) return json(ALT_CONFIG_REFUSED);
    ctx.alternativeConfig = config;
    return json(ALT_CONFIG_ACCEPTED);
  };

  if (ctx.variant === "P") {
    r.on("POST", "/add_transaction", (req) => {
      const txId = addTransaction(ctx, req);
      return json({ code: "TRANSACTION_RECEIVED", tx_id: txId });
    });
    r.on("GET", "/get_first_unused_tx_id", () => text(String(ctx.pool.firstUnused()), "text/plain"));
    r.on("GET", "/get_core_contract_address", address);
    r.on("GET", "/get_starkex_contract_address", address);
    r.on("POST", "/v2/gateway/set_alternative_endpoint_config", setAlt);
  } else {
    r.on("POST", "/gateway/v2/add_transaction", (req) => {
      addTransaction(ctx, req);
      return json({ code: "TRANSACTION_PENDING" });
    });
    r.on("GET", "/gateway/v2/get_transaction", (req) => {
      const txId = intParam(req, "tx_id");
      const tx = ctx.pool.get(txId);
      if (!tx) throw new HttpError(404, "TRANSACTION_NOT_FOUND", `tx_id: no transaction ${txId}`);
      return json(tx.raw);
    });
    r.on("GET", "/gateway/v2/testing/get_core_dex_address", address);
    r.on("GET", "/gateway/v2/testing/get_starkex_dex_address", address);
    r.on("POST", "/gateway/v2/set_alternative_endpoint_config", setAlt);
  }
  return r;
}

/** Validates and stores one transaction; throws (4xx) leaving the state unchanged. */
function addTransaction<T>(ctx: GatewayContext<T>, req: Request): number {
  const body: Fields = Fields.of(parseJsonBody(req), "");
  body.only(["tx_id", "tx"]);
  const txId = body.int("tx_id", 0, MAX_TX_ID);
  const rawTx = body.get("tx");
  const tx: Fields = Fields.of(rawTx, "tx");
  if (!tx.has("type")) tx.fail("type", "missing (the transaction must name its type)");
  const type = tx.raw.type;
  if (ctx.variant === "P" && typeof type === "string" && ctx.blockedTxTypes.has(type)) {
    throw new TxError(
      "tx.type",
      `transactions of type ${type} are blocked by the transaction filter`,
      403,
      "TRANSACTION_BLOCKED",
    );
  }
  const parsed = ctx.machine.parse(rawTx);
  const added = ctx.pool.add(txId, rawTx, parsed);
  if (added === "duplicate") {
    throw new TxError("tx_id", `${txId} is already used by another transaction`, 409, "DUPLICATE_TX_ID");
  }
  if (added === "added") ctx.onAdded();
  return txId;
}

const URL_FIELDS = ["url", "failure_description_url"] as const;
const ALT_FIELDS = [
  "url",
  "bearer_token",
  "client_certificate",
  "client_key",
  "server_certificate",
  "failure_description_url",
];

/** Every field must appear (unset ones as null); `url` is a required http(s) URL. */
export function parseAlternativeConfig(raw: unknown): AlternativeEndpointConfig {
  const f: Fields = Fields.of(raw, "");
  f.only(ALT_FIELDS);
  const out: Record<string, string | null> = {};
  for (const k of ALT_FIELDS) {
    if (!Object.prototype.hasOwnProperty.call(f.raw, k)) f.fail(k, "missing (send null when unset)");
    const v = f.raw[k];
    if (v === null) {
      if (k === "url") f.fail(k, "must not be null");
      out[k] = null;
      continue;
    }
    if (typeof v !== "string" || v.length === 0) f.fail(k, "expected a non-empty string or null");
    if ((URL_FIELDS as readonly string[]).includes(k)) {
      let u: URL | undefined;
      try {
        u = new URL(v);
      } catch {
        u = undefined;
      }
      if (!u || (u.protocol !== "http:" && u.protocol !== "https:")) f.fail(k, "expected an http(s) URL");
    }
    if (
      (k === "client_certificate" || k === "server_certificate") &&
      !v.includes("-----BEGIN CERTIFICATE-----")
    ) {
      f.fail(k, "expected a PEM certificate");
    }
    if (k === "client_key" && !/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(v))
      f.fail(k, "expected a PEM private key");
    out[k] = v;
  }
  if ((out.client_certificate === null) !== (out.client_key === null)) {
    f.fail(
      out.client_key === null ? "client_key" : "client_certificate",
      "client_certificate and client_key go together",
    );
  }
  return out as unknown as AlternativeEndpointConfig;
}
