import { existsSync, realpathSync } from "node:fs";
import { createServer } from "node:net";
import { delimiter, join, resolve } from "node:path";
import { packageRoot } from "../build-info.js";
import { runtimeSettings } from "../config/runtime-settings.js";

/** A TCP port on 127.0.0.1 that was free a moment ago, for the demo member's metrics listener. */
export async function freeLocalPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve, reject) => {
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", resolve);
  });
  const { port } = srv.address() as { port: number };
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

/** `s` as one shell word: bare when it is only safe characters, else single-quoted. */
function shellWord(s: string): string {
  return /^[\w./@%+=:,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** `p`'s real path, or undefined when it does not exist. */
function real(p: string): string | undefined {
  try {
    return realpathSync(p);
  } catch {
    return undefined;
  }
}

/**
 * How to run this very dacd from a shell in `cwd`: `dacd` when the PATH's dacd is this package's
 * launcher (`npm install -g` puts it there); `npx dacd` in this package's checkout, or in a project
 * that installed it (npm exec runs the project's own or installed bin); else the launcher by its
 * path. Never a bare `npx dacd` elsewhere: npm would ask the public registry for a package named dacd.
 */
export function dacdCommand(
  opts: { path?: string; cwd?: string; root?: string; argv1?: string } = {},
): string {
  const root = opts.root ?? packageRoot()?.dir;
  if (root === undefined) return "dacd";
  const launcher = real(join(root, "bin", "dacd.js"));
  const ours = (p: string): boolean => launcher !== undefined && real(p) === launcher;
  const path = opts.path ?? runtimeSettings().environment.PATH ?? "";
  for (const dir of path.split(delimiter)) if (dir !== "" && ours(join(dir, "dacd"))) return "dacd";
  const cwd = opts.cwd ?? process.cwd();
  if (real(cwd) === real(root) || ours(join(cwd, "node_modules", ".bin", "dacd"))) return "npx dacd";
  const invoked = opts.argv1 ?? process.argv[1];
  if (invoked !== undefined && existsSync(invoked) && ours(invoked)) return shellWord(resolve(invoked));
  return `node ${shellWord(launcher ?? join(root, "bin", "dacd.js"))}`;
}

/**
 * What a newcomer can try while `dacd demo` runs: the status command, which answers from the
 * running member over its control socket, and the operations endpoints the member serves.
 */
export function demoNextSteps(opts: {
  configPath: string;
  metricsPort: number;
  /** With a base chain: the devnet's availability URL, and the main tree to ask a proof of. */
  freeze?: { url: string; tree: string } | undefined;
  /** How to run dacd here (default: dacdCommand()). */
  command?: string;
}): string {
  const base = `http://127.0.0.1:${opts.metricsPort}`;
  const config = shellWord(opts.configPath);
  const dacd = opts.command ?? dacdCommand();
  return [
    "try next, in another terminal in this directory:",
    `  ${dacd} status --config ${config}`,
    `  curl ${base}/metrics`,
    `  curl ${base}/readyz`,
    ...(opts.freeze
      ? [
          "rehearse a freeze and an exit:",
          `  ${dacd} devnet freeze --availability-url ${shellWord(opts.freeze.url)}`,
          `  ${dacd} status --config ${config}`,
          `  ${dacd} proof ${opts.freeze.tree} 0 --config ${config}`,
        ]
      : []),
    "stop the demo with Ctrl-C",
    "",
  ].join("\n");
}
