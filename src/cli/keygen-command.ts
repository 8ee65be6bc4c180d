import type { Command } from "commander";
import { DacdError } from "../errors.js";
import { CONFIG_HELP, loadConfigFor } from "./config-path.js";
import { keygenCommand } from "./keygen.js";
import { keygenPkcs11 } from "./keygen-pkcs11.js";

interface KeygenFlags {
  out?: string;
  passwordFile?: string;
  kdf: "scrypt" | "pbkdf2";
  pkcs11?: boolean;
  config?: string;
}

export function registerKeygenCommand(program: Command): void {
  program
    .command("keygen")
    .description(
      "generate a new member key as an Ethereum V3 keystore (mode 0600), or inside the configured PKCS#11 token (--pkcs11), and print its address",
    )
    .option("--out <file>", "keystore file to create (never overwritten)")
    .option("--password-file <file>", "file holding the keystore password")
    .option("--kdf <kdf>", "scrypt | pbkdf2", "scrypt")
    .option("--pkcs11", "generate the key pair inside the token named by the configuration (pkcs11_* keys)")
    .option("--config <file>", `with --pkcs11: ${CONFIG_HELP}`)
    .action(async (opts: KeygenFlags) => {
      if (opts.pkcs11) {
        if (opts.out !== undefined || opts.passwordFile !== undefined)
          throw new DacdError("USAGE", "keygen --pkcs11 takes --config, not --out or --password-file");
        await keygenPkcs11(loadConfigFor(opts.config), (line) => process.stdout.write(line + "\n"));
        return;
      }
      if (opts.out === undefined || opts.passwordFile === undefined)
        throw new DacdError("USAGE", "keygen needs --out and --password-file (or --pkcs11 --config FILE)");
      await keygenCommand({ out: opts.out, passwordFile: opts.passwordFile, kdf: opts.kdf });
    });
}
