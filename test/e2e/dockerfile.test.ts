import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";

/**
 * The container image, checked without building it (no base image can be pulled where the tests
 * run): the build stage copies every source file the package ships (package.json `files`, less
 * what the build makes), the runtime stage is a slim Node 20 running `dacd run` as a non-root
 * user with volumes for the store, the claims journal and the key, and a health check on /readyz;
 * the compose example mounts what the image declares.
 */

const ROOT = join(import.meta.dirname, "..", "..");
const dockerfile = readFileSync(join(ROOT, "Dockerfile"), "utf8");
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  files: string[];
  bin: Record<string, string>;
};

/** The Dockerfile's instructions, continuation lines joined, comments dropped, per stage. */
function stages(): string[][] {
  const lines = dockerfile
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"));
  const out: string[][] = [];
  for (const l of lines) {
    if (/^FROM /i.test(l)) out.push([]);
    out.at(-1)!.push(l);
  }
  return out;
}

/** A package.json `files` pattern as a test on a path (`*` within a segment, `**` across, `dir/`). */
function matcher(pattern: string): (path: string) => boolean {
  if (pattern.endsWith("/")) return (p) => p.startsWith(pattern);
  const re = new RegExp(
    "^" +
      pattern
        .split(/(\*\*\/|\*\*|\*)/)
        .map((part) =>
          part === "**/"
            ? "(?:.*/)?"
            : part === "**"
              ? ".*"
              : part === "*"
                ? "[^/]*"
                : part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"),
        )
        .join("") +
      "$",
  );
  return (p) => re.test(p) || p.startsWith(pattern + "/");
}

/** The files npm would pack from this checkout's sources: `files` patterns over the tracked files. */
function shippedSources(): string[] {
  const tracked = execFileSync("git", ["ls-files"], { cwd: ROOT, encoding: "utf8" })
    .split("\n")
    .filter(Boolean);
  const include = pkg.files.filter((f) => !f.startsWith("!")).map(matcher);
  const exclude = pkg.files.filter((f) => f.startsWith("!")).map((f) => matcher(f.slice(1)));
  return tracked.filter((f) => include.some((m) => m(f)) && !exclude.some((m) => m(f)));
}

describe("Dockerfile", () => {
  const [build, runtime] = stages();

  it("has a build stage and a slim Node 20 runtime stage", () => {
    expect(stages()).toHaveLength(2);
    expect(build![0]).toMatch(/^FROM node:20\S* AS build$/);
    expect(runtime![0]).toBe("FROM node:20-slim");
  });

  it("the build stage copies every source file the package ships, and .dockerignore keeps none out", () => {
    const copied = build!
      .filter((l) => /^COPY (?!--from)/.test(l))
      .flatMap((l) =>
        l
          .replace(/^COPY /, "")
          .split(/\s+/)
          .slice(0, -1),
      );
    const covered = (f: string): boolean => copied.some((c) => (c.endsWith("/") ? f.startsWith(c) : f === c));
    const sources = shippedSources();
    expect(sources.length).toBeGreaterThan(50);
    expect(sources.filter((f) => !covered(f))).toEqual([]);
    // What dist/ is compiled from, and the lock file npm ci installs from.
    for (const f of ["src/", "tsconfig.json", "tsconfig.build.json", "package-lock.json"])
      expect(copied, f).toContain(f);
    const ignored = readFileSync(join(ROOT, ".dockerignore"), "utf8").split("\n").filter(Boolean);
    expect(sources.filter((f) => ignored.some((i) => f === i || f.startsWith(i + "/")))).toEqual([]);
    expect(build!.some((l) => /npm ci .*&& npm pack/.test(l))).toBe(true);
  });

  it("runs `dacd run` as a non-root user, with volumes for the store, the journal and the key, and a health check on /readyz", () => {
    expect(pkg.bin.dacd).toBe("bin/dacd.js");
    expect(runtime!.find((l) => l.startsWith("ENTRYPOINT "))).toMatch(/"\/usr\/local\/bin\/dacd", "run"\]$/);
    expect(runtime!.some((l) => /npm install -g .*--prefix \/usr\/local .*\/tmp\/dacd\.tgz/.test(l))).toBe(
      true,
    );
    const user = runtime!.filter((l) => l.startsWith("USER "));
    expect(user).toEqual(["USER dacd"]);
    expect(runtime).toContain('VOLUME ["/var/lib/dacd", "/var/lib/dacd-claims", "/etc/dacd"]');
    const env = runtime!.filter((l) => l.startsWith("ENV ")).join(" ");
    expect(env).toMatch(/DACD_DATA_DIR=\/var\/lib\/dacd\s/);
    expect(env).toMatch(/DACD_CLAIMS_JOURNAL_PATH=\/var\/lib\/dacd-claims\/claims\.journal\s/);
    const health = runtime!.find((l) => l.startsWith("HEALTHCHECK "));
    expect(health).toMatch(/\/readyz/);
  });

  it("the compose example's member mounts the image's volumes and reaches the devnet", () => {
    const compose = parse(readFileSync(join(ROOT, "docker", "compose.devnet.yaml"), "utf8")) as {
      services: Record<string, { network_mode?: string; volumes?: string[]; entrypoint?: string[] }>;
    };
    const member = compose.services.member!;
    expect(member.network_mode).toBe("service:devnet");
    const targets = (member.volumes ?? []).map((v) => v.split(":")[1]);
    expect(targets).toEqual(
      expect.arrayContaining(["/etc/dacd/dacd.yaml", "/var/lib/dacd", "/var/lib/dacd-claims"]),
    );
    const config = parse(readFileSync(join(ROOT, "docker", "devnet-member.yaml"), "utf8")) as Record<
      string,
      string
    >;
    const ports = compose.services.devnet!.entrypoint!.join(" ");
    expect(ports).toMatch(/--availability-port 8003/);
    expect(config.availability_gateway_url).toBe("http://127.0.0.1:8003");
  });
});
