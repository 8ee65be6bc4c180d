import type { Registry } from "prom-client";

/** The prefix of every metric dacd exports. */
export const PREFIX = "dacd_";

/** The registries a metric is registered in: dacd's own, never prom-client's global one. */
export type Registers = Registry[];
