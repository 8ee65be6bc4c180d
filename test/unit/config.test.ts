import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { DEFAULT_HEIGHTS, makeProfile } from "../../src/model/profile.js";
import { DacdError } from "../../src/errors.js";

const dir = mkdtempSync(join(tmpdir(), "dacd-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
function write(text: string): string {
  const file = join(dir, `c${n++}.yaml`);
  writeFileSync(file, text);
  return file;
}

const BASE = `profile: spot
availability_gateway_url: https://gw.example.com
private_key_path: /etc/dacd/member.key
data_dir: /var/lib/dacd
`;

function configError(fn: () => unknown): DacdError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(DacdError);
    expect((e as DacdError).code).toBe("CONFIG");
    return e as DacdError;
  }
  throw new Error("expected a CONFIG error");
}

describe("example configs", () => {
  for (const name of ["perpetual", "spot", "spot-v4.0"] as const) {
    it(`config/${name}.yaml loads`, () => {
      const cfg = loadConfig(resolve("config", `${name}.yaml`), {});
      expect(cfg.profile).toBe(name);
      expect(cfg.heights).toEqual(DEFAULT_HEIGHTS[name]);
      expect(cfg.warnings).toEqual([]);
    });
  }

  it("resolves a relative certificates_path next to the configuration file", () => {
    expect(loadConfig(write(`${BASE}certificates_path: certs\n`), {}).certificatesPath).toBe(
      join(dir, "certs"),
    );
  });
});

describe("heights reach the trees", () => {
  // Every height a configuration may set, for each profile, must end up in the tree it names: a key
  // the configuration accepts but the trees do not read would be silently ignored.
  const profiles = {
    perpetual: { position: 40, order: 50 },
    spot: { vault: 29, order: 200, rollup_vault: 40 },
    "spot-v4.0": { vault: 30, order: 60 },
  } as const;
  for (const [name, heights] of Object.entries(profiles)) {
    it(`${name}: every configured height is the tree's height`, () => {
      const yaml = Object.entries(heights)
        .map(([k, v]) => `  ${k}: ${v}`)
        .join("\n");
      const cfg = loadConfig(
        write(`${BASE.replace("profile: spot", `profile: ${name}`)}heights:\n${yaml}\n`),
        {},
      );
      const profile = makeProfile(cfg.profile, cfg.heights);
      const trees = [profile.main, profile.order, ...(profile.rollup ? [profile.rollup] : [])];
      expect(Object.fromEntries(trees.map((t) => [t.name, t.height]))).toEqual(heights);
    });
  }

  it("DACD_HEIGHTS_ROLLUP_VAULT reaches the rollup vault tree", () => {
    const cfg = loadConfig(write(BASE), { DACD_HEIGHTS_ROLLUP_VAULT: "40" });
    expect(makeProfile(cfg.profile, cfg.heights).rollup?.height).toBe(40);
  });
});

describe("loadConfig", () => {
  it("applies defaults", () => {
    const cfg = loadConfig(write(BASE), {});
    expect(cfg).toMatchObject({
      profile: "spot",
      availabilityGatewayUrl: "https://gw.example.com",
      privateKeyPath: "/etc/dacd/member.key",
      dataDir: "/var/lib/dacd",
      pollingIntervalS: 5,
      validateOrders: true,
      httpRequestTimeoutS: 30,
      heights: { vault: 31, order: 251, rollup_vault: 31 },
      metricsHost: "127.0.0.1",
      maxReadyLag: 5,
      maxStallS: 120,
      logLevel: "info",
      schedule: {},
      backupKeep: 3,
      prefetchBatches: 2,
    });
    expect(cfg.validateRollup).toBeUndefined();
    expect(cfg.metricsPort).toBeUndefined();
    expect(cfg.feederGatewayUrl).toBeUndefined();
    expect("pruneKeepBatches" in cfg).toBe(false);
    expect(cfg).toMatchObject({ baseChainConfirmations: 12, baseChainPollIntervalS: 12 });
    expect("baseChainRpcUrl" in cfg).toBe(false);
    expect("starkexContractAddress" in cfg).toBe(false);
    // Planned from the memory budget unless set (memory-plan.ts).
    for (const key of ["memoryBudgetMib", "nodeCacheLevels", "storeMaxOpenFiles", "storeMappedTables"])
      expect(key in cfg).toBe(false);
  });

  it("follows the base chain with both its RPC URL and the contract, under the gateway URLs' rules", () => {
    const address = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
    const both = `${BASE}base_chain_rpc_url: https://eth.example.com/v3/abc\nstarkex_contract_address: ${address}\n`;
    expect(
      loadConfig(write(`${both}base_chain_confirmations: 0\nbase_chain_poll_interval_s: 0.5\n`), {}),
    ).toMatchObject({
      baseChainRpcUrl: "https://eth.example.com/v3/abc",
      starkexContractAddress: address,
      baseChainConfirmations: 0,
      baseChainPollIntervalS: 0.5,
    });
    expect(
      loadConfig(write(BASE), {
        DACD_BASE_CHAIN_RPC_URL: "http://127.0.0.1:8545",
        DACD_STARKEX_CONTRACT_ADDRESS: address,
      }),
    ).toMatchObject({ baseChainRpcUrl: "http://127.0.0.1:8545" });
    const creds = both.replace("https://eth", "https://user:secret@eth");
    const credsError = configError(() => loadConfig(write(creds), {})).message;
    expect(credsError).toMatch(/base_chain_rpc_url \(line \d+\) must not carry credentials/);
    expect(credsError).not.toContain("is not: set both");
    expect(credsError).not.toContain("secret");
    expect(configError(() => loadConfig(write(both.replace("/v3/abc", "/?key=1")), {})).message).toContain(
      "must not carry a query",
    );
    expect(
      configError(() => loadConfig(write(both.replace("https://eth", "ws://eth")), {})).message,
    ).toContain("base_chain_rpc_url");
    expect(configError(() => loadConfig(write(both.replace(address, "0x1234")), {})).message).toContain(
      "starkex_contract_address must be 0x and 40 hex digits",
    );
    expect(
      configError(() => loadConfig(write(`${BASE}base_chain_rpc_url: https://eth.example.com\n`), {}))
        .message,
    ).toContain("starkex_contract_address is not");
    expect(
      configError(() => loadConfig(write(`${BASE}starkex_contract_address: ${address}\n`), {})).message,
    ).toContain("base_chain_rpc_url is not");
    expect(
      configError(() => loadConfig(write(`${both}base_chain_confirmations: -1\n`), {})).message,
    ).toContain("base_chain_confirmations");
  });

  it("reads every key", () => {
    const cfg = loadConfig(
      write(`profile: perpetual
availability_gateway_url: https://gw.example.com/prefix
feeder_gateway_url: http://feeder:8080
private_key_path: keys/member.key
private_key_password_path: keys/pw
data_dir: ./data
polling_interval_s: 0.5
validate_orders: false
validate_rollup: false
certificates_path: certs
http_request_timeout_s: 10
heights: { position: 32, order: 40 }
metrics_port: 9464
metrics_host: 0.0.0.0
max_ready_lag: 0
max_stall_s: 30
log_level: debug
node_cache_levels: 20
memory_budget_mib: 3000
store_max_open_files: 300
store_mapped_tables: 100
prefetch_batches: 0
schedule:
  check: "*/5 * * * *"
  backup: 0 3 * * *
backup_dir: /backups
backup_keep: 7
prune_keep_batches: 1000
`),
      {},
    );
    expect(cfg).toMatchObject({
      profile: "perpetual",
      feederGatewayUrl: "http://feeder:8080",
      privateKeyPath: join(dir, "keys/member.key"),
      privateKeyPasswordPath: join(dir, "keys/pw"),
      dataDir: join(dir, "data"),
      certificatesPath: join(dir, "certs"),
      pollingIntervalS: 0.5,
      validateOrders: false,
      validateRollup: false,
      httpRequestTimeoutS: 10,
      heights: { position: 32, order: 40 },
      metricsPort: 9464,
      metricsHost: "0.0.0.0",
      maxReadyLag: 0,
      maxStallS: 30,
      logLevel: "debug",
      memoryBudgetMib: 3000,
      nodeCacheLevels: 20,
      storeMaxOpenFiles: 300,
      storeMappedTables: 100,
      prefetchBatches: 0,
      schedule: { check: "*/5 * * * *", backup: "0 3 * * *" },
      backupDir: "/backups",
      backupKeep: 7,
      pruneKeepBatches: 1000,
    });
  });

  it("rejects an unknown key, naming it", () => {
    const e = configError(() => loadConfig(write(`${BASE}polling_interval: 3\n`), {}));
    expect(e.message).toContain("polling_interval");
    expect(e.message).toContain("not a known key");
    expect(e.message).toContain("line 5");
  });

  it("rejects an unknown nested key", () => {
    const e = configError(() => loadConfig(write(`${BASE}heights:\n  vaults: 31\n`), {}));
    expect(e.message).toContain("heights.vaults");
  });

  it("rejects wrong types, naming the key", () => {
    expect(configError(() => loadConfig(write(`${BASE}polling_interval_s: fast\n`), {})).message).toMatch(
      /polling_interval_s.*must be a number/,
    );
    expect(configError(() => loadConfig(write(`${BASE}polling_interval_s: "5"\n`), {})).message).toMatch(
      /polling_interval_s.*unquoted/,
    );
    expect(configError(() => loadConfig(write(`${BASE}validate_orders: "yes"\n`), {})).message).toContain(
      "validate_orders",
    );
    expect(configError(() => loadConfig(write(`${BASE}metrics_port: 1.5\n`), {})).message).toMatch(
      /metrics_port.*integer/,
    );
    expect(configError(() => loadConfig(write(`${BASE}heights: 3\n`), {})).message).toMatch(
      /heights.*mapping/,
    );
    expect(configError(() => loadConfig(write(`${BASE}heights:\n  order: 252\n`), {})).message).toMatch(
      /heights\.order.*between 1 and 251/,
    );
    expect(configError(() => loadConfig(write(`${BASE}store_max_open_files: 8\n`), {})).message).toContain(
      "store_max_open_files",
    );
    expect(configError(() => loadConfig(write(`${BASE}store_mapped_tables: -1\n`), {})).message).toContain(
      "store_mapped_tables",
    );
    expect(configError(() => loadConfig(write(`${BASE}prefetch_batches: 17\n`), {})).message).toContain(
      "prefetch_batches",
    );
    expect(configError(() => loadConfig(write(`${BASE}log_level: loud\n`), {})).message).toContain(
      "log_level",
    );
    expect(
      configError(() => loadConfig(write(`${BASE}schedule:\n  backup: every day\n`), {})).message,
    ).toContain("schedule.backup");
    expect(configError(() => loadConfig(write(`${BASE}backup_dir: [a, b]\n`), {})).message).toMatch(
      /backup_dir.*must be a string/,
    );
  });

  it("reports every problem at once", () => {
    const e = configError(() => loadConfig(write(`${BASE}foo: 1\nbackup_keep: 0\n`), {}));
    expect(e.message).toContain("foo");
    expect(e.message).toContain("backup_keep");
  });

  it("rejects missing required keys and bad URLs", () => {
    expect(configError(() => loadConfig(write("profile: spot\n"), {})).message).toMatch(
      /availability_gateway_url is missing[\s\S]*data_dir is missing[\s\S]*private_key_path is missing/,
    );
    const bad = BASE.replace("https://gw.example.com", "ftp://gw.example.com");
    expect(configError(() => loadConfig(write(bad), {})).message).toContain("availability_gateway_url");
  });

  it("signer: file needs private_key_path; pkcs11 needs the token keys, not the key file, and no Starknet", () => {
    expect(loadConfig(write(BASE), {}).signer).toBe("file");
    const token = BASE.replace("private_key_path: /etc/dacd/member.key\n", "signer: pkcs11\n");
    expect(configError(() => loadConfig(write(token), {})).message).toMatch(
      /pkcs11_module is missing \(signer: pkcs11\)[\s\S]*pkcs11_token_label[\s\S]*pkcs11_key_label/,
    );
    const full = `${token}pkcs11_module: /usr/lib/softhsm/libsofthsm2.so\npkcs11_token_label: dac\npkcs11_key_label: member\npkcs11_pin_path: pin\n`;
    const cfg = loadConfig(write(full), {});
    expect(cfg).toMatchObject({
      signer: "pkcs11",
      pkcs11TokenLabel: "dac",
      pkcs11KeyLabel: "member",
      pkcs11TimeoutS: 10,
    });
    expect(cfg.privateKeyPath).toBeUndefined();
    expect(cfg.pkcs11PinPath).toMatch(/\/pin$/);
    expect(configError(() => loadConfig(write(`${full}chain: starknet\n`), {})).message).toMatch(
      /invalid config .*: signer: pkcs11 does not apply to chain: starknet \(no HSM offers the STARK curve; use signer: file\)$/,
    );
    expect(loadConfig(write(`${full}private_key_path: k\n`), {}).warnings).toContain(
      "private_key_path is not read with signer: pkcs11",
    );
    expect(loadConfig(write(`${BASE}pkcs11_key_label: x\n`), {}).warnings).toContain(
      "pkcs11_key_label is not read with signer: file",
    );
  });

  it("rejects cross-key inconsistencies", () => {
    const v40 = BASE.replace("profile: spot", "profile: spot-v4.0");
    expect(configError(() => loadConfig(write(`${v40}validate_rollup: true\n`), {})).message).toContain(
      "validate_rollup",
    );
    expect(
      configError(() => loadConfig(write(`${v40}heights:\n  rollup_vault: 31\n`), {})).message,
    ).toContain("heights.rollup_vault");
    const http = BASE.replace("https://", "http://");
    expect(configError(() => loadConfig(write(`${http}certificates_path: certs\n`), {})).message).toContain(
      "certificates_path",
    );
  });

  it("rejects invalid YAML, duplicate keys, empty and non-mapping files", () => {
    expect(configError(() => loadConfig(write(`${BASE}data_dir: /x\n`), {})).message).toMatch(
      /not valid YAML/,
    );
    expect(configError(() => loadConfig(write("profile: [\n"), {})).message).toMatch(/not valid YAML/);
    expect(configError(() => loadConfig(write(""), {})).message).toMatch(/empty/);
    expect(configError(() => loadConfig(write("- a\n- b\n"), {})).message).toMatch(/mapping/);
    expect(configError(() => loadConfig(join(dir, "missing.yaml"), {})).message).toMatch(/cannot read/);
  });

  it("keeps unquoted 0x…, numeric and boolean-looking values of string keys as written", () => {
    const cfg = loadConfig(
      write(`profile: spot
availability_gateway_url: https://gw.example.com
private_key_path: 0x1f
data_dir: 0o17
backup_dir: 1e3
metrics_host: 0x7f000001
`),
      {},
    );
    expect(cfg.privateKeyPath).toBe(join(dir, "0x1f"));
    expect(cfg.dataDir).toBe(join(dir, "0o17"));
    expect(cfg.backupDir).toBe(join(dir, "1e3"));
    expect(cfg.metricsHost).toBe("0x7f000001");
  });

  it("treats null values as absent", () => {
    const cfg = loadConfig(write(`${BASE}feeder_gateway_url:\nvalidate_rollup: ~\nbackup_keep:\n`), {});
    expect(cfg.feederGatewayUrl).toBeUndefined();
    expect(cfg.validateRollup).toBeUndefined();
    expect(cfg.backupKeep).toBe(3);
    expect(
      configError(() => loadConfig(write(`${BASE}`.replace("/var/lib/dacd", "~")), {})).message,
    ).toContain("data_dir is missing");
  });
});

describe("environment overrides", () => {
  it("DACD_<KEY> overrides the file, parsed with the key's type", () => {
    const cfg = loadConfig(write(`${BASE}validate_rollup: true\npolling_interval_s: 9\n`), {
      DACD_POLLING_INTERVAL_S: "2",
      DACD_VALIDATE_ROLLUP: "false",
      DACD_VALIDATE_ORDERS: "FALSE",
      DACD_METRICS_PORT: "9000",
      DACD_HEIGHTS_ORDER: "200",
      DACD_SCHEDULE_PRUNE: "0 4 * * *",
      DACD_DATA_DIR: "rel/data",
      DACD_LOG_LEVEL: "warn",
      DACD_PROFILE: "spot",
    });
    expect(cfg.pollingIntervalS).toBe(2);
    expect(cfg.validateRollup).toBe(false);
    expect(cfg.validateOrders).toBe(false);
    expect(cfg.metricsPort).toBe(9000);
    expect(cfg.heights).toEqual({ vault: 31, order: 200, rollup_vault: 31 });
    expect(cfg.schedule).toEqual({ prune: "0 4 * * *" });
    expect(cfg.dataDir).toBe(resolve(process.cwd(), "rel/data"));
    expect(cfg.logLevel).toBe("warn");
  });

  it("names the variable when its value is wrong", () => {
    expect(configError(() => loadConfig(write(BASE), { DACD_POLLING_INTERVAL_S: "soon" })).message).toContain(
      "DACD_POLLING_INTERVAL_S",
    );
    expect(configError(() => loadConfig(write(BASE), { DACD_VALIDATE_ROLLUP: "maybe" })).message).toContain(
      "DACD_VALIDATE_ROLLUP",
    );
    expect(
      configError(() => loadConfig(write(BASE), { AVAILABILITY_GW_ENDPOINT: "nope" })).message,
    ).toContain("AVAILABILITY_GW_ENDPOINT");
    expect(configError(() => loadConfig(write(BASE), { DACD_HEIGHTS: "3" })).message).toContain(
      "DACD_HEIGHTS",
    );
  });

  it("honours the reference names, below DACD_*", () => {
    const file = write("profile: spot\ndata_dir: /d\nprivate_key_path: /from-file\n");
    const cfg = loadConfig(file, {
      PRIVATE_KEY_PATH: "/ref/key",
      AVAILABILITY_GW_ENDPOINT: "https://ref.example.com",
      CERTIFICATES_PATH: "/ref/certs",
    });
    expect(cfg.privateKeyPath).toBe("/ref/key");
    expect(cfg.availabilityGatewayUrl).toBe("https://ref.example.com");
    expect(cfg.certificatesPath).toBe("/ref/certs");

    const both = loadConfig(file, {
      PRIVATE_KEY_PATH: "/ref/key",
      DACD_PRIVATE_KEY_PATH: "/dacd/key",
      AVAILABILITY_GW_ENDPOINT: "https://ref.example.com",
      DACD_AVAILABILITY_GATEWAY_URL: "https://dacd.example.com",
    });
    expect(both.privateKeyPath).toBe("/dacd/key");
    expect(both.availabilityGatewayUrl).toBe("https://dacd.example.com");
    expect(both.warnings.some((w) => w.includes("PRIVATE_KEY_PATH is ignored"))).toBe(true);
  });

  it("ignores empty variables and refuses unknown DACD_ ones", () => {
    const cfg = loadConfig(write(BASE), { DACD_POLLING_INTERVAL_S: "", PATH: "/bin" });
    expect(cfg.pollingIntervalS).toBe(5);
    expect(cfg.warnings).toEqual([]);
    const err = configError(() => loadConfig(write(BASE), { DACD_POLING: "1", PATH: "/bin" }));
    expect(err.message).toMatch(/environment variable DACD_POLING is not a configuration key$/);
  });

  it("does not warn about the DACD_ switches read outside the configuration", () => {
    const cfg = loadConfig(write(BASE), { DACD_TREE_WALK: "js", DACD_HASH_KERNEL: "portable" });
    expect(cfg.warnings).toEqual([]);
  });
});
