import { describe, expect, it } from "vitest";
import { clientKey } from "../../src/api/client-address.js";

describe("clientKey: what the escape API's per-client limits count under", () => {
  it("keeps an IPv4 address, and the IPv4 form of an IPv4-mapped one", () => {
    expect(clientKey("127.0.0.2")).toBe("127.0.0.2");
    expect(clientKey("::ffff:10.1.2.3")).toBe("10.1.2.3");
    expect(clientKey(undefined)).toBe("");
  });

  it("counts an IPv6 address by its /64, however it is written", () => {
    const key = "2001:db8:0:1::/64";
    expect(clientKey("2001:db8:0:1::1")).toBe(key);
    expect(clientKey("2001:0db8:0000:0001:ffff:ffff:ffff:ffff")).toBe(key);
    expect(clientKey("2001:DB8::1:0:0:0:9")).toBe(key);
    expect(clientKey("2001:db8:0:2::1")).not.toBe(key);
    expect(clientKey("::1")).toBe("0:0:0:0::/64");
    expect(clientKey("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    expect(clientKey("::ffff:0:1.2.3.4")).toBe("0:0:0:0::/64");
  });
});
