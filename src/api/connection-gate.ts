/**
 * Admission of the escape API's connections, as they are accepted: a cap on open connections in
 * all, on open connections per client address and on new connections a second per address.
 * Without the per-address caps, one address that keeps reconnecting half-open connections holds
 * every slot of the global cap and nobody else is answered.
 */
import type { Server } from "node:http";
import type { Socket } from "node:net";
import { clientKey } from "./client-address.js";
import { RateLimiter } from "./rate-limit.js";

export interface ConnectionLimits {
  /** Open connections in all. */
  readonly maxOpen: number;
  /** Open connections of one client address (an IPv6 client: its /64). */
  readonly perAddress: number;
  /** New connections a second of one client address, on average (bursts of twice as many). */
  readonly ratePerAddress: number;
}

export type RefusedConnection = "max_open" | "per_address" | "rate";

export interface ConnectionGate {
  /** Connections refused so far, by reason. */
  readonly refused: Readonly<Record<RefusedConnection, number>>;
  /** Connections admitted and still open. */
  readonly open: number;
}

/**
 * Closes every connection of `server` beyond the limits before the HTTP server sets it up (no
 * parser, no slot). Node's own `maxConnections` would count the refused ones until their close
 * completes, so the gate counts the admitted ones itself and Node's cap is only a backstop.
 */
export function gateConnections(
  server: Server,
  limits: ConnectionLimits,
  onRefused?: (reason: RefusedConnection) => void,
): ConnectionGate {
  const perAddress = new Map<string, number>();
  const rate = new RateLimiter(limits.ratePerAddress);
  const refused: Record<RefusedConnection, number> = { max_open: 0, per_address: 0, rate: 0 };
  let open = 0;
  server.maxConnections = 2 * limits.maxOpen;
  server.prependListener("connection", (socket: Socket) => {
    const key = clientKey(socket.remoteAddress);
    const held = perAddress.get(key) ?? 0;
    // The rate is charged only for connections that could otherwise be admitted: refused
    // reconnections of an address at its cap do not delay its next admission.
    const reason: RefusedConnection | undefined =
      open >= limits.maxOpen
        ? "max_open"
        : held >= limits.perAddress
          ? "per_address"
          : rate.take(key) > 0
            ? "rate"
            : undefined;
    if (reason) {
      refused[reason]++;
      onRefused?.(reason);
      socket.destroy();
      return;
    }
    open++;
    perAddress.set(key, held + 1);
    socket.once("close", () => {
      open--;
      const left = (perAddress.get(key) ?? 1) - 1;
      if (left > 0) perAddress.set(key, left);
      else perAddress.delete(key);
    });
  });
  return {
    refused,
    get open() {
      return open;
    },
  };
}
