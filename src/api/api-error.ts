import { isDacdError } from "../errors.js";

/** An answer other than 200: status, message, and the parameter at fault. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly parameter?: string,
    readonly retryAfterS?: number,
  ) {
    super(message);
  }
}

/** What a failed request is answered: bad input is a 404 naming it, anything unforeseen a 500. */
export function asApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (isDacdError(err, "BAD_INPUT")) return new ApiError(404, err.message);
  return new ApiError(500, `internal error: ${err instanceof Error ? err.message : String(err)}`);
}
