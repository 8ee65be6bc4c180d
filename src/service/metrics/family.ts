import { Gauge, type Registry } from "prom-client";

/** The prefix of every metric dacd exports. */
export const PREFIX = "dacd_";

/** The registries a metric is registered in: dacd's own, never prom-client's global one. */
export type Registers = Registry[];

/**
 * A gauge without labels whose value is read at each scrape; `read` answering undefined leaves the
 * last value as it was.
 */
export function scrapedGauge(
  registers: Registers,
  name: string,
  help: string,
  read: () => number | undefined | Promise<number | undefined>,
): Gauge {
  return new Gauge({
    name: `${PREFIX}${name}`,
    help,
    registers,
    async collect() {
      const value = await read();
      if (value !== undefined) this.set(value);
    },
  });
}
