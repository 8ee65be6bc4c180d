/**
 * The base chain's JSON-RPC client: one attempt per call within a time-out (the watch's next poll
 * is the retry), and failures sorted into the reasons the metrics count.
 */
import { BaseError, createPublicClient, http, TimeoutError, type PublicClient } from "viem";

/**
 * Why an RPC call failed: it took longer than the time-out, its answer was not what the method
 * returns (a null block number, an object for a list), or anything else.
 */
export const RPC_FAILURES = ["timeout", "error", "malformed"] as const;
export type RpcFailure = (typeof RPC_FAILURES)[number];

/** `signal` aborts every call in flight (a stop does not wait for a hanging endpoint). */
export function rpcClient(url: string, timeoutMs: number, signal?: AbortSignal): PublicClient {
  return createPublicClient({
    transport: http(url, { timeout: timeoutMs, retryCount: 0, fetchOptions: { signal } }),
    // Nothing is batched or cached: each read names its block.
    batch: undefined,
    cacheTime: 0,
  });
}

/** An answer that is not what the method returns: the endpoint is broken or lies; retried like an error. */
export class MalformedAnswer extends Error {}

export function rpcFailure(err: unknown): RpcFailure {
  if (err instanceof MalformedAnswer) return "malformed";
  if (err instanceof TimeoutError) return "timeout";
  if (err instanceof BaseError && err.walk((e) => e instanceof TimeoutError) instanceof TimeoutError)
    return "timeout";
  return "error";
}

/** One line for the log: viem's short message, without its multi-line details. */
export function rpcMessage(err: unknown): string {
  if (err instanceof BaseError) return err.shortMessage;
  return err instanceof Error ? err.message : String(err);
}
