import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The tests' temporary directories: made by tempDir, removed together by removeTempDirs. */
const dirs: string[] = [];

/** A fresh directory under the system's temporary directory, named `prefix` and a random tail. */
export async function tempDir(prefix = "dacd-test-"): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

/** Removes every directory tempDir made so far (call it in afterEach or afterAll). */
export async function removeTempDirs(): Promise<void> {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
}
