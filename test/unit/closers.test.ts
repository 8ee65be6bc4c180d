import { describe, expect, it } from "vitest";
import { Closers } from "../../src/util/closers.js";

describe("Closers", () => {
  it("runs the clean-ups newest first, waiting for each", async () => {
    const order: string[] = [];
    const closers = new Closers();
    closers.defer(() => order.push("store"));
    closers.defer(async () => {
      await new Promise((r) => setTimeout(r, 10));
      order.push("server");
    });
    closers.defer(() => order.push("loop"));
    await closers.close();
    expect(order).toEqual(["loop", "server", "store"]);
  });

  it("runs every clean-up when one fails, then throws the first failure", async () => {
    const order: string[] = [];
    const closers = new Closers();
    closers.defer(() => order.push("last"));
    closers.defer(() => {
      throw new Error("second");
    });
    closers.defer(async () => {
      order.push("first");
      throw new Error("first");
    });
    await expect(closers.close()).rejects.toThrow("first");
    expect(order).toEqual(["first", "last"]);
  });

  it("runs once however often it is closed", async () => {
    let runs = 0;
    const closers = new Closers();
    closers.defer(() => runs++);
    const [a, b] = [closers.close(), closers.close()];
    expect(a).toBe(b);
    await a;
    await closers.close();
    expect(runs).toBe(1);
  });
});
