import type { ServerResponse } from "node:http";
import { isDacdError } from "../errors.js";
import { encodeFrame, Frame, FRAMES_CONTENT_TYPE } from "./frames.js";

/** Where a streamed control answer writes its frames. */
export interface FrameOut {
  /** Sends one frame; resolves once the socket can take more (backpressure). */
  send(type: number, payload: Uint8Array | object): Promise<void>;
  /** Aborted when the client goes away: the answer should stop reading the store. */
  readonly signal: AbortSignal;
}

/** A streamed answer: frames as it goes, then its result (sent as the last frame). */
export type ControlStream = (query: URLSearchParams, out: FrameOut) => Promise<unknown>;

/** Runs a streamed answer on one response: 200 and frames, ending with a result or an error frame. */
export function serveStream(handler: ControlStream, query: URLSearchParams, res: ServerResponse): void {
  const abort = new AbortController();
  res.on("close", () => abort.abort(new Error("the client closed the connection")));
  res.writeHead(200, { "content-type": FRAMES_CONTENT_TYPE });
  const out: FrameOut = {
    signal: abort.signal,
    async send(type, payload) {
      if (abort.signal.aborted) throw abort.signal.reason as Error;
      if (res.write(encodeFrame(type, payload))) return;
      await new Promise<void>((resolve, reject) => {
        const done = (): void => {
          res.off("drain", done);
          abort.signal.removeEventListener("abort", done);
          if (abort.signal.aborted) reject(abort.signal.reason as Error);
          else resolve();
        };
        res.on("drain", done);
        abort.signal.addEventListener("abort", done);
      });
    },
  };
  handler(query, out).then(
    (result) => res.end(encodeFrame(Frame.result, result ?? {})),
    (err: unknown) => {
      if (abort.signal.aborted) return;
      res.end(
        encodeFrame(Frame.error, {
          error: err instanceof Error ? err.message : String(err),
          code: isDacdError(err) ? err.code : undefined,
        }),
      );
    },
  );
}
