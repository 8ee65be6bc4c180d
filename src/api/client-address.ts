import { isIPv6 } from "node:net";

/**
 * The key the escape API's per-client limits count under: an IPv4 address as it is (an
 * IPv4-mapped IPv6 address as its IPv4 form), an IPv6 address by its /64, because one host is
 * commonly given a whole /64 and could otherwise take a fresh address for every connection.
 */
export function clientKey(address: string | undefined): string {
  if (!address) return "";
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!isIPv6(address)) return address;
  return `${ipv6Groups(address).slice(0, 4).join(":")}::/64`;
}

/** The eight 16-bit groups of an IPv6 address, `::` expanded (a zone id dropped). */
function ipv6Groups(address: string): string[] {
  const bare = address.split("%")[0]!.toLowerCase();
  const [head, tail] = bare.includes("::") ? bare.split("::") : [bare, undefined];
  const split = (s: string | undefined): string[] => (s ? s.split(":") : []);
  const front = split(head);
  const back = split(tail);
  // An embedded IPv4 tail (`::1.2.3.4`) stands for two groups; only the first four groups matter.
  const backLength = back.length + (back.at(-1)?.includes(".") ? 1 : 0);
  const zeros = tail === undefined ? [] : Array<string>(Math.max(0, 8 - front.length - backLength)).fill("0");
  return [...front, ...zeros, ...back].map((g) =>
    g.includes(".") ? g : (parseInt(g, 16) || 0).toString(16),
  );
}
