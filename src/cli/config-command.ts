import type { Command } from "commander";
import type { Config } from "../config/config.js";
import { DacdError } from "../errors.js";
import { CONFIG_HELP, configPathOf, loadConfigFor } from "./config-path.js";

interface CheckOptions {
  config?: string;
  json?: boolean;
  key?: boolean;
  allowInsecureKeyFile?: boolean;
}

/**
 * `dacd config check`: what `dacd run` would refuse for configuration reasons, found without
 * starting anything — the file and DACD_* variables, run's start-up checks that need no gateway
 * (service/startup-checks.ts: schedules, certificates, data_dir, the store it names), and (unless
 * --no-key) that the key file and its password load (or, with signer: pkcs11, that the token opens
 * with the PIN and holds a secp256k1 key under the label: its address is printed). Prints the
 * effective configuration (file, defaults and
 * environment merged) with credentials in URLs redacted; exit 0, or 78 with one line.
 */
export function registerConfigCommand(program: Command): void {
  const config = program.command("config").description("configuration tools");
  config
    .command("check")
    .description(
      "validate the configuration and print the effective settings (secrets redacted); exit 0 or 78",
    )
    .option("--config <file>", CONFIG_HELP)
    .option("--json", "print the effective configuration as JSON instead of YAML")
    .option("--no-key", "do not check that the key file (and its password file) loads")
    .option("--allow-insecure-key-file", "accept a key file readable by group or others, as `dacd run` would")
    .action(async (opts: CheckOptions) => {
      const cfg = loadConfigFor(opts.config);
      // The service's modules are loaded only when the check runs, not for every dacd command.
      const [
        { stringify },
        { escapeJobs },
        { discardMemberKey, loadMemberKey },
        { checkExistingStore, runConfigChecks },
        { describePlan },
        { keptTrees, makeProfile },
        { memoryPlanFor },
      ] = await Promise.all([
        import("yaml"),
        import("../service/maintenance-jobs.js"),
        import("../service/member-signer.js"),
        import("../service/startup-checks.js"),
        import("../config/memory-plan.js"),
        import("../model/profile.js"),
        import("../service/memory-setup.js"),
      ]);
      // Every start-up check of `dacd run` that needs no gateway, from the same list.
      await runConfigChecks(cfg, {
        createDataDir: false,
        jobs: escapeJobs(() => {
          throw new DacdError("CONFIG", "no engine in config check");
        }),
      });
      const warnings = [...cfg.warnings];
      let tokenKey: string | undefined;
      if (opts.key !== false) {
        // A token is opened, logged in to and searched as `dacd run` would: its key's address is shown.
        const member = await loadMemberKey(cfg, {
          allowInsecureKeyFile: opts.allowInsecureKeyFile,
          warn: (m) => warnings.push(m),
        });
        if (member.custody === "pkcs11")
          tokenKey =
            `member address ${member.signer.memberKey} ` +
            `(PKCS#11 token ${JSON.stringify(cfg.pkcs11TokenLabel)}, key ${JSON.stringify(cfg.pkcs11KeyLabel)})`;
        await discardMemberKey(member);
      }
      const storeNote = await checkExistingStore(cfg);
      if (storeNote) warnings.push(storeNote);
      for (const w of warnings) process.stderr.write(`dacd: warning: ${w}\n`);
      const effective = effectiveConfig(cfg);
      // What `dacd run` would size its caches to, here and now (the cgroup of this shell may not be the unit's).
      const profile = makeProfile(cfg.profile, cfg.heights);
      const memory = await memoryPlanFor(
        cfg,
        keptTrees(profile, profile.rollup ? cfg.validateRollup : undefined).length,
      );
      if (tokenKey && opts.json) process.stderr.write(`dacd: ${tokenKey}\n`);
      process.stdout.write(
        opts.json
          ? JSON.stringify({ ...effective, memory_plan: memory }, null, 2) + "\n"
          : `# effective configuration of ${configPathOf(opts.config)}\n` +
              (tokenKey ? `# ${tokenKey}\n` : "") +
              `# ${describePlan(memory)}\n` +
              stringify(effective),
      );
    });
}

/** Config → the file's snake_case keys, without bookkeeping, with URL credentials redacted. */
export function effectiveConfig(cfg: Config): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(cfg)) {
    if (k === "configPath" || k === "warnings" || v === undefined) continue;
    out[snakeCase(k)] = redactValue(v);
  }
  return out;
}

function redactValue(v: unknown): unknown {
  if (typeof v === "string") return redactUrl(v);
  if (v && typeof v === "object" && !Array.isArray(v)) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) if (x !== undefined) out[snakeCase(k)] = redactValue(x);
    return out;
  }
  return v;
}

/** A URL's user name, password and query are the only secrets a configuration holds (key material is in files). */
export function redactUrl(s: string): string {
  if (!/^https?:\/\//i.test(s)) return s;
  try {
    const u = new URL(s);
    if (!u.username && !u.password && !u.search) return s;
    if (u.username || u.password) {
      u.username = "redacted";
      u.password = "";
    }
    if (u.search) u.search = "?redacted";
    return u.toString();
  } catch {
    return s;
  }
}

const snakeCase = (k: string): string => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
