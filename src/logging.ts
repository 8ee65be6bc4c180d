import { fstatSync } from "node:fs";
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

export type LogFormat = "json" | "pretty";

export interface LoggerOptions {
  level?: string;
  /** Human-readable output (pino-pretty) instead of JSON lines; same as format "pretty". */
  pretty?: boolean;
  format?: LogFormat;
  /** Where JSON lines go; default stdout (journald captures it under systemd). */
  destination?: pino.DestinationStream;
  /**
   * Prefix each JSON line with its syslog priority (`<3>` for error…), which journald reads from a
   * service's stdout (SyslogLevelPrefix=, on by default): `journalctl -p err` then shows dacd's
   * errors. Default: when stdout is the journal (journalStdout(journalStream)).
   */
  syslogPrefix?: boolean;
  /** $JOURNAL_STREAM as systemd set it (the entry point passes it), for syslogPrefix's default. */
  journalStream?: string;
}

/** Syslog priority of each pino level (sd-daemon(3)): fatal is crit, trace is debug. */
const PRIORITY: Readonly<Record<string, number>> = {
  fatal: 2,
  error: 3,
  warn: 4,
  info: 6,
  debug: 7,
  trace: 7,
};

/**
 * True when stdout is connected to the journal: systemd sets JOURNAL_STREAM to the device and
 * inode of that stream (systemd.exec(5)), so a redirected stdout (a file, a pipe to another
 * program) is told apart from the journal even under systemd.
 */
export function journalStdout(stream: string | undefined, fd = 1): boolean {
  if (!stream) return false;
  const m = /^(\d+):(\d+)$/.exec(stream);
  if (!m) return false;
  try {
    const st = fstatSync(fd, { bigint: true });
    return st.dev === BigInt(m[1]!) && st.ino === BigInt(m[2]!);
  } catch {
    return false;
  }
}

/** `<N>` before a JSON line whose first field is the level name (see formatters.level below). */
export function withSyslogPrefix(line: string): string {
  const m = /^\{"level":"([a-z]+)"/.exec(line);
  const priority = (m && PRIORITY[m[1]!]) ?? 6;
  return `<${priority}>${line}`;
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const options: pino.LoggerOptions = {
    level: opts.level ?? "info",
    base: { service: "dacd" },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: {
      // Level names ("error"), not pino's numbers (50): readable, and what journald's prefix needs.
      level: (label) => ({ level: label }),
      log: (obj) => redactDeep(obj) as Record<string, unknown>,
    },
  };
  if (opts.pretty || opts.format === "pretty") {
    return pino({
      ...options,
      formatters: { log: options.formatters!.log },
      transport: {
        target: "pino-pretty",
        options: { colorize: process.stdout.isTTY, ignore: "pid,hostname,service", singleLine: true },
      },
    });
  }
  if (opts.syslogPrefix ?? (opts.destination === undefined && journalStdout(opts.journalStream))) {
    options.hooks = { streamWrite: withSyslogPrefix };
  }
  return opts.destination ? pino(options, opts.destination) : pino(options);
}
