import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { freePort } from "./free-port.js";
import { waitFor } from "./daemon.js";
import { toolAvailable } from "./tool-required.js";

/** Debian's nginx, where installed (apt-get install nginx; .ci/run installs it). */
export const NGINX = ["/usr/sbin/nginx", "/usr/bin/nginx"].find((p) => existsSync(p));

/** Whether nginx is here, for a test's skipIf(!…); under DACD_REQUIRE_TOOLS=1 its absence fails the file. */
export function nginxAvailable(): boolean {
  return toolAvailable("nginx (apt-get install nginx)", NGINX !== undefined);
}

/**
 * A real nginx serving `root` on 127.0.0.1 from a configuration and prefix of its own under
 * `work`: in the foreground, one process (no master, so no switch to another user that could not
 * read a test's private temporary directory). `stop` ends it.
 */
export async function startNginx(
  root: string,
  work: string,
): Promise<{ url: string; stop: () => Promise<void> }> {
  if (!NGINX) throw new Error("nginx is not installed");
  const port = await freePort();
  await mkdir(join(work, "logs"), { recursive: true });
  await mkdir(join(work, "tmp"), { recursive: true });
  const conf = join(work, "nginx.conf");
  await writeFile(
    conf,
    `daemon off;
master_process off;
worker_processes 1;
pid ${work}/nginx.pid;
error_log ${work}/logs/error.log warn;
events { worker_connections 64; }
http {
  include /etc/nginx/mime.types;
  access_log off;
  client_body_temp_path ${work}/tmp/body;
  proxy_temp_path ${work}/tmp/proxy;
  fastcgi_temp_path ${work}/tmp/fastcgi;
  uwsgi_temp_path ${work}/tmp/uwsgi;
  scgi_temp_path ${work}/tmp/scgi;
  server {
    listen 127.0.0.1:${port};
    root ${root};
    add_header Content-Security-Policy "default-src 'self'" always;
    location = /manifest.json { add_header Cache-Control "no-cache" always; }
    location / { try_files $uri $uri/ =404; add_header Cache-Control "public, max-age=86400" always; }
  }
}
`,
  );
  const check = spawnSync(NGINX, ["-t", "-p", work, "-c", conf, "-e", join(work, "logs", "error.log")], {
    encoding: "utf8",
  });
  if (check.status !== 0) throw new Error(`nginx -t: ${check.stderr}`);
  const child: ChildProcess = spawn(NGINX, ["-p", work, "-c", conf, "-e", join(work, "logs", "error.log")], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let exited = false;
  child.once("exit", () => (exited = true));
  const url = `http://127.0.0.1:${port}`;
  await waitFor(
    async () => {
      if (exited) throw new Error("nginx exited at start");
      return fetch(url + "/").then(
        () => true,
        () => false,
      );
    },
    10_000,
    "nginx listening",
  );
  return {
    url,
    stop: async () => {
      if (exited) return;
      const gone = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await gone;
    },
  };
}
