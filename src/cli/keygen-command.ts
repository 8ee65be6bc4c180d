import { Option, type Command } from "commander";
import { DacdError } from "../errors.js";
import { CONFIG_HELP, loadConfigFor } from "./config-path.js";

interface KeygenFlags {
  out?: string;
  passwordFile?: string;
  raw?: boolean;
  kdf: "scrypt" | "pbkdf2";
  pkcs11?: boolean;
  config?: string;
}

export function registerKeygenCommand(program: Command): void {
  program
    .command("keygen")
    .description(
      "generate a new member key (mode 0600, never overwriting) and print its address: a V3 keystore " +
        "whose password is asked twice at the terminal or read from --password-file, with --raw a hex key file, " +
        "or with --pkcs11 a key pair inside the configured PKCS#11 token",
    )
    .option("--out <file>", "key file to create (never overwritten)")
    .option("--password-file <file>", "file holding the keystore password (for scripts; else asked)")
    .addOption(
      new Option("--raw", "write the key as hex, unencrypted (no password)").conflicts("passwordFile"),
    )
    .addOption(
      new Option("--kdf <kdf>", "the keystore's key derivation")
        .choices(["scrypt", "pbkdf2"])
        .default("scrypt"),
    )
    .option("--pkcs11", "generate the key pair inside the token named by the configuration (pkcs11_* keys)")
    .option("--config <file>", `with --pkcs11: ${CONFIG_HELP}`)
    .action(async (opts: KeygenFlags) => {
      if (opts.pkcs11) {
        if (opts.out !== undefined || opts.passwordFile !== undefined || opts.raw)
          throw new DacdError("USAGE", "keygen --pkcs11 takes --config, not --out, --password-file or --raw");
        // The token's library and the key's curve are loaded only by the kind of keygen that uses them.
        const { keygenPkcs11 } = await import("./keygen-pkcs11.js");
        await keygenPkcs11(loadConfigFor(opts.config), (line) => process.stdout.write(line + "\n"));
        return;
      }
      if (opts.out === undefined)
        throw new DacdError("USAGE", "keygen needs --out FILE (or --pkcs11 --config FILE)");
      const { keygenCommand } = await import("./keygen.js");
      await keygenCommand({ out: opts.out, passwordFile: opts.passwordFile, raw: opts.raw, kdf: opts.kdf });
    });
}
