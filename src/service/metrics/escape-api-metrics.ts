/** The escape API's requests and refused connections. */
import { Counter, Histogram } from "prom-client";
import { PREFIX, type Registers } from "./family.js";

export function escapeApiMetrics(registers: Registers) {
  return {
    requests: new Counter({
      name: `${PREFIX}escape_api_requests_total`,
      help: "Escape API requests by route (batches_latest, leaf, proof, escape, escape_info, page, dump, openapi, unknown) and HTTP status",
      labelNames: ["route", "status"],
      registers,
    }),
    requestSeconds: new Histogram({
      name: `${PREFIX}escape_api_request_seconds`,
      help: "Escape API request durations by route (a dump: until its last byte is sent)",
      labelNames: ["route"],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60, 300],
      registers,
    }),
    connectionsRefused: new Counter({
      name: `${PREFIX}escape_api_connections_refused_total`,
      help: "Escape API connections closed as they were accepted, by the limit they hit (max_open, per_address, rate)",
      labelNames: ["reason"],
      registers,
    }),
  };
}

export type EscapeApiMetrics = ReturnType<typeof escapeApiMetrics>;
