/**
 * The escape API's answer to a request Node's HTTP parser refused before any handler saw it. Node
 * answers an over-long request head with 431 whether the request target or the headers made it
 * too long; the request target's share is told apart here so that it gets 414, as documented.
 * (Request targets up to the parser's bound are answered 414 by the handler itself.)
 */
import type { Socket } from "node:net";

interface ParseError extends Error {
  code?: string;
  /** The chunk being parsed when the parser gave up, and how far into it the parser got. */
  rawPacket?: Buffer;
  bytesParsed?: number;
}

const REASONS: Record<number, string> = {
  400: "Bad Request",
  408: "Request Timeout",
  414: "URI Too Long",
  431: "Request Header Fields Too Large",
};

export function answerClientError(err: ParseError, socket: Socket): void {
  // Only before any answer went out on the connection: bytes written after part of an answer
  // would corrupt it for the client.
  if (err.code !== "ECONNRESET" && socket.writable && socket.bytesWritten === 0) {
    const status =
      err.code === "HPE_HEADER_OVERFLOW"
        ? overflowInRequestLine(err)
          ? 414
          : 431
        : err.code === "ERR_HTTP_REQUEST_TIMEOUT"
          ? 408
          : 400;
    const body = JSON.stringify({ error: REASONS[status]!.toLowerCase(), status }) + "\n";
    socket.write(
      `HTTP/1.1 ${status} ${REASONS[status]}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/**
 * True when the parser ran out of room while still reading the request line: the chunk it was
 * parsing starts with a method and a target, and holds no line end up to where parsing stopped.
 */
function overflowInRequestLine(err: ParseError): boolean {
  const packet = err.rawPacket;
  if (!packet) return false;
  const parsed = packet.subarray(0, Math.min(packet.length, err.bytesParsed ?? packet.length));
  if (parsed.includes(0x0a)) return false;
  return /^[A-Z]+ [^ ]/.test(parsed.subarray(0, 64).toString("latin1"));
}
