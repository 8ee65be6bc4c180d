import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { cgroupMemoryLimit } from "../../src/config/memory-limit.js";

/** Fake cgroup trees in a temporary directory, passed as the mount point. */
describe("the cgroup memory limit", () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), "dacd-cgroup-"));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const put = async (path: string, text: string): Promise<void> => {
    await mkdir(join(root, path, ".."), { recursive: true });
    await writeFile(join(root, path), text);
  };

  it("v2: the lower of memory.high and memory.max of the service's cgroup", async () => {
    await put("system.slice/dacd.service/memory.high", "2147483648\n");
    await put("system.slice/dacd.service/memory.max", "3221225472\n");
    await put("system.slice/memory.max", "max\n");
    const limit = cgroupMemoryLimit({ root, selfCgroup: "0::/system.slice/dacd.service\n" });
    expect(limit).toEqual({ bytes: 2 ** 31, source: join(root, "system.slice/dacd.service/memory.high") });
  });

  it("v2: memory.high at max leaves memory.max; a slice's lower limit binds its services", async () => {
    await put("system.slice/dacd.service/memory.high", "max\n");
    await put("system.slice/dacd.service/memory.max", "3221225472\n");
    expect(cgroupMemoryLimit({ root, selfCgroup: "0::/system.slice/dacd.service\n" })?.bytes).toBe(
      3 * 2 ** 30,
    );
    await put("system.slice/memory.max", "1073741824\n");
    expect(cgroupMemoryLimit({ root, selfCgroup: "0::/system.slice/dacd.service\n" })).toEqual({
      bytes: 2 ** 30,
      source: join(root, "system.slice/memory.max"),
    });
  });

  it("v2: no limit anywhere (max, or no files) is none", async () => {
    await put("user.slice/memory.max", "max\n");
    await put("user.slice/memory.high", "max\n");
    expect(cgroupMemoryLimit({ root, selfCgroup: "0::/user.slice\n" })).toBeUndefined();
    expect(cgroupMemoryLimit({ root, selfCgroup: "0::/absent\n" })).toBeUndefined();
    expect(cgroupMemoryLimit({ root, selfCgroup: undefined })).toBeUndefined();
  });

  it("v2 in a cgroup namespace: the path is not under the mount, whose own files count", async () => {
    await put("memory.max", "536870912\n");
    expect(cgroupMemoryLimit({ root, selfCgroup: "0::/../../elsewhere\n" })?.bytes).toBe(512 * 2 ** 20);
  });

  it("v1: memory.limit_in_bytes of the memory controller's cgroup; its huge 'unlimited' is none", async () => {
    const self = "12:pids:/\n4:memory:/docker/abc\n3:cpu,cpuacct:/\n0::/\n";
    await put("memory/docker/abc/memory.limit_in_bytes", "9223372036854771712\n");
    await put("memory/memory.limit_in_bytes", "9223372036854771712\n");
    expect(cgroupMemoryLimit({ root, selfCgroup: self })).toBeUndefined();
    await put("memory/docker/abc/memory.limit_in_bytes", "4294967296\n");
    expect(cgroupMemoryLimit({ root, selfCgroup: self })).toEqual({
      bytes: 4 * 2 ** 30,
      source: join(root, "memory/docker/abc/memory.limit_in_bytes"),
    });
  });

  it("reads this machine's cgroup without failing", () => {
    const limit = cgroupMemoryLimit();
    if (limit) expect(limit.bytes).toBeGreaterThan(0);
  });
});
