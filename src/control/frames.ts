import type { Readable } from "node:stream";

/**
 * The framing of a streamed answer on the control socket (a dump, a check with progress): frames
 * of one type byte, a 4-byte big-endian length and the payload. A dump's file contents are binary
 * data frames of bounded size, so neither side ever holds a whole file; the last frame is a result
 * or an error.
 */
export const FRAMES_CONTENT_TYPE = "application/x-dacd-frames";

export const Frame = {
  /** A dump file starts: JSON {name}. */
  file: 0x66, // f
  /** Bytes of the current file. */
  data: 0x64, // d
  /** The current file is complete: JSON {leaves, bytes, sha256}. */
  end: 0x65, // e
  /** What the data frames that follow are about (an escape kit's batch and tree): JSON. */
  head: 0x68, // h
  /** Progress: JSON. */
  progress: 0x70, // p
  /** The answer (a manifest, a check report): JSON; the last frame. */
  result: 0x72, // r
  /** The answer failed: JSON {error, code}; the last frame. */
  error: 0x78, // x
} as const;

/** The largest frame a reader accepts: data frames are cut well below it. */
export const MAX_FRAME = 4 << 20;

export function encodeFrame(type: number, payload: Uint8Array | object): Buffer {
  const body = payload instanceof Uint8Array ? payload : Buffer.from(JSON.stringify(payload), "utf8");
  const head = Buffer.alloc(5);
  head[0] = type;
  head.writeUInt32BE(body.length, 1);
  return Buffer.concat([head, body]);
}

export interface DecodedFrame {
  readonly type: number;
  readonly payload: Buffer;
}

/**
 * The frames of a stream, in order. Reading is paced by the consumer (the stream is not read
 * further until the loop body has handled a frame), so a slow disk on the client side slows the
 * daemon's walk rather than filling memory.
 */
export async function* readFrames(stream: Readable): AsyncGenerator<DecodedFrame> {
  let buf: Buffer = Buffer.alloc(0);
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
    while (buf.length >= 5) {
      const length = buf.readUInt32BE(1);
      if (length > MAX_FRAME) throw new Error(`a frame of ${length} bytes is larger than ${MAX_FRAME}`);
      if (buf.length < 5 + length) break;
      yield { type: buf[0]!, payload: buf.subarray(5, 5 + length) };
      buf = buf.subarray(5 + length);
    }
  }
  if (buf.length > 0) throw new Error("the stream ended inside a frame");
}

export const frameJson = <T>(f: DecodedFrame): T => JSON.parse(f.payload.toString("utf8")) as T;
