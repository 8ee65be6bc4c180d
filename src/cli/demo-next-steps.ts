import { createServer } from "node:net";

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

/**
 * What a newcomer can try while `dacd demo` runs: the status command, which answers from the
 * running member over its control socket, and the operations endpoints the member serves.
 */
export function demoNextSteps(opts: {
  configPath: string;
  metricsPort: number;
  /** With a base chain: the devnet's availability URL, and the main tree to ask a proof of. */
  freeze?: { url: string; tree: string } | undefined;
}): string {
  const base = `http://127.0.0.1:${opts.metricsPort}`;
  const config = shellWord(opts.configPath);
  return [
    // npx finds the checkout's own dacd, which is not on the PATH after `npm ci`.
    "try next, in another terminal in this directory:",
    `  npx dacd status --config ${config}`,
    `  curl ${base}/metrics`,
    `  curl ${base}/readyz`,
    ...(opts.freeze
      ? [
          "rehearse a freeze and an exit:",
          `  npx dacd devnet freeze --availability-url ${shellWord(opts.freeze.url)}`,
          `  npx dacd status --config ${config}`,
          `  npx dacd proof ${opts.freeze.tree} 0 --config ${config}`,
        ]
      : []),
    "stop the demo with Ctrl-C",
    "",
  ].join("\n");
}
