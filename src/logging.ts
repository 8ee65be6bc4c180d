import pino, { type Logger } from "pino";

export type { Logger } from "pino";

/** Field names whose values are secrets; matched case-insensitively at any depth. */
const SECRET_KEY = /(private_?key|secret|password|passphrase|bearer|client_key|credential|mnemonic|seed)/i;

/** Replaces secret-looking fields at every depth (pino's own `redact` only reaches fixed paths). */
export function redactDeep(value: unknown, depth = 0): unknown {
  if (depth > 8 || value === null || typeof value !== "object") return value;
  if (value instanceof Error) return value;
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value))
    out[k] = SECRET_KEY.test(k) ? "[redacted]" : redactDeep(v, depth + 1);
  return out;
}

export interface LoggerOptions {
  level?: string;
  /** Human-readable output (pino-pretty) instead of JSON lines. */
  pretty?: boolean;
  /** Where JSON lines go; default stdout (journald captures it under systemd). */
  destination?: pino.DestinationStream;
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const options: pino.LoggerOptions = {
    level: opts.level ?? "info",
    base: { service: "dacd" },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { log: (obj) => redactDeep(obj) as Record<string, unknown> },
  };
  if (opts.pretty) {
    return pino({
      ...options,
      transport: {
        target: "pino-pretty",
        options: { colorize: process.stdout.isTTY, ignore: "pid,hostname,service", singleLine: true },
      },
    });
  }
  return opts.destination ? pino(options, opts.destination) : pino(options);
}
