/**
 * The few error kinds the run loop and the CLI act on. Decisions (retry, refuse, exit) are made by
 * `code`, never by parsing a message; the message is for the operator and names batch and field.
 */
export type ErrorCode =
  | "BAD_INPUT" // the gateway sent something malformed or out of range
  | "ROOT_MISMATCH" // a recomputed root differs from the stated one
  | "UNKNOWN_PREV_BATCH" // the update builds on a batch this member never verified
  | "CONFLICTING_CLAIM" // the batch id is already signed with another claim
  | "GATEWAY" // transport failure or unexpected answer from a gateway
  | "CONFIG" // invalid configuration or key material
  | "USAGE" // a command-line argument or flag is invalid
  | "STORE" // the local store is unusable or inconsistent
  | "SIGNER" // the member key's token (HSM) failed a call: the batch is left unsigned and retried
  | "FROZEN"; // the exchange's freeze is confirmed on the base chain: no new batch is signed (retried)

export class DacdError extends Error {
  readonly code: ErrorCode;
  readonly batchId: number | undefined;
  readonly field: string | undefined;
  /** GATEWAY: the HTTP status the gateway answered with, when it answered with one that failed. */
  readonly httpStatus: number | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    opts: { batchId?: number; field?: string; cause?: unknown; httpStatus?: number } = {},
  ) {
    const where = [
      opts.batchId !== undefined ? `batch ${opts.batchId}` : undefined,
      opts.field !== undefined ? `field ${opts.field}` : undefined,
    ]
      .filter(Boolean)
      .join(", ");
    super(
      where ? `${where}: ${message}` : message,
      opts.cause !== undefined ? { cause: opts.cause } : undefined,
    );
    this.name = "DacdError";
    this.code = code;
    this.batchId = opts.batchId;
    this.field = opts.field;
    this.httpStatus = opts.httpStatus;
  }
}

/** A DacdError as plain data, to cross a thread boundary (a structured clone keeps no class or field). */
export interface DacdErrorData {
  readonly code: ErrorCode;
  /** The whole message, batch and field included. */
  readonly message: string;
  readonly batchId?: number;
  readonly field?: string;
}

export function dacdErrorData(e: DacdError): DacdErrorData {
  return { code: e.code, message: e.message, batchId: e.batchId, field: e.field };
}

/** The DacdError `data` was made from: same code, message, batch and field. */
export function reviveDacdError(data: DacdErrorData): DacdError {
  const e = new DacdError(data.code, data.message);
  return Object.assign(e, { batchId: data.batchId, field: data.field });
}

export function badInput(batchId: number | undefined, field: string, message: string): DacdError {
  return new DacdError("BAD_INPUT", message, { batchId, field });
}

/**
 * The codes that mean the batch itself is unacceptable, as opposed to a transport, store or
 * configuration problem: the member refuses it (never signs) and counts it by this reason.
 */
export const REFUSAL_CODES = [
  "BAD_INPUT",
  "ROOT_MISMATCH",
  "UNKNOWN_PREV_BATCH",
] as const satisfies readonly ErrorCode[];

export function isRefusal(code: ErrorCode): boolean {
  return (REFUSAL_CODES as readonly ErrorCode[]).includes(code);
}

export function isDacdError(e: unknown, code?: ErrorCode): e is DacdError {
  return e instanceof DacdError && (code === undefined || e.code === code);
}
