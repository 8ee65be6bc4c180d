import { chmod, lstat, mkdir, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { DacdError } from "../errors.js";

/**
 * Where the control socket lives. It answers `/status`, `/check` and `/dump` to whoever can connect,
 * so only the daemon's user may: the socket is 0600 and its directory 0700, whatever the umask. In
 * a private data_dir (no group or other access, owned by the daemon's user) that is data_dir itself;
 * in a shared one it is a private subdirectory, `data_dir/control/`. Clients look in both places.
 */
export const CONTROL_SOCKET = "dacd.sock";
export const CONTROL_DIR = "control";

/** The socket's possible paths, the private subdirectory's first. */
export function controlSocketPaths(dataDir: string): string[] {
  return [join(dataDir, CONTROL_DIR, CONTROL_SOCKET), join(dataDir, CONTROL_SOCKET)];
}

/**
 * The name the server binds the socket under before it is 0600 and renamed to `path`, so that it
 * is never found at its path with the mode the umask gave it.
 */
export function boundSocketPath(path: string): string {
  return `${path}~`;
}

/**
 * Picks and prepares the socket's directory, removes sockets a killed daemon left in either place,
 * under either name (the caller holds the store's lock, so no live daemon owns them), and returns
 * the path to listen on.
 */
export async function prepareControlSocket(dataDir: string): Promise<string> {
  for (const p of controlSocketPaths(dataDir))
    for (const name of [p, boundSocketPath(p)]) await rm(name, { force: true });
  const uid = process.getuid?.();
  const top = await stat(dataDir);
  if ((top.mode & 0o077) === 0 && (uid === undefined || top.uid === uid))
    return join(dataDir, CONTROL_SOCKET);
  const dir = join(dataDir, CONTROL_DIR);
  await mkdir(dir, { mode: 0o700 }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== "EEXIST") throw err;
  });
  // lstat: a symbolic link planted here must not lead the socket elsewhere.
  const st = await lstat(dir);
  if (!st.isDirectory() || (uid !== undefined && st.uid !== uid))
    throw new DacdError(
      "CONFIG",
      `${dir} is not a directory of this user; remove it (dacd keeps its control socket there because data_dir is open to other users)`,
    );
  await chmod(dir, 0o700);
  return join(dir, CONTROL_SOCKET);
}
