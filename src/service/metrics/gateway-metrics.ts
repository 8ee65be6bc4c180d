/** The gateway calls of the run loop: outcomes, durations, retries. */
import { Counter, Histogram } from "prom-client";
import type { RequestOutcome } from "../../poller/gateway/http.js";
import { PREFIX, type Registers } from "./family.js";

/** Final outcomes of a gateway call (poller/gateway/http.ts OutcomeKind). */
export const GATEWAY_OUTCOMES = ["ok", "http_status", "transport", "bad_response", "aborted"] as const;

/** The gateway endpoints the run loop calls (the feeder's only with feeder_gateway_url). */
export const DAEMON_ENDPOINTS = ["get_batch_data", "approve_new_roots", "get_last_batch_id"] as const;

export function gatewayMetrics(registers: Registers) {
  const m = {
    requests: new Counter({
      name: `${PREFIX}gateway_requests_total`,
      help: "Gateway calls (all attempts of one call together) by endpoint and final outcome",
      labelNames: ["endpoint", "outcome"],
      registers,
    }),
    requestSeconds: new Histogram({
      name: `${PREFIX}gateway_request_seconds`,
      help: "Duration of gateway calls including retries, by endpoint",
      labelNames: ["endpoint"],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers,
    }),
    retries: new Counter({
      name: `${PREFIX}gateway_retries_total`,
      help: "Retried gateway attempts, by endpoint",
      labelNames: ["endpoint"],
      registers,
    }),
  };
  // Every series starts at 0, so that increase() and rate() see the first failure (a series
  // born at 1 has no earlier sample to increase from).
  for (const endpoint of DAEMON_ENDPOINTS) {
    m.retries.inc({ endpoint }, 0);
    for (const outcome of GATEWAY_OUTCOMES) m.requests.inc({ endpoint, outcome }, 0);
  }
  return m;
}

export type GatewayMetrics = ReturnType<typeof gatewayMetrics>;

/** One finished gateway call. */
export function observeGatewayCall(m: GatewayMetrics, endpoint: string, outcome: RequestOutcome): void {
  m.requests.inc({ endpoint, outcome: outcome.kind });
  m.requestSeconds.observe({ endpoint }, outcome.durationMs / 1000);
}
