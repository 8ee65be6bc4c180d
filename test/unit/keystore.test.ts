import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { isDacdError } from "../../src/errors.js";
import { keygenCommand } from "../../src/cli/keygen.js";
import { ethAddressFromPrivateKey } from "../../src/signer/eth-signer.js";
import { decryptKeystore, encryptKeystore } from "../../src/signer/keystore.js";

// The published Web3 Secret Storage Definition test vectors (Ethereum wiki), password "testpassword".
const WIKI_PBKDF2 = {
  crypto: {
    cipher: "aes-128-ctr",
    cipherparams: { iv: "6087dab2f9fdbbfaddc31a909735c1e6" },
    ciphertext: "5318b4d5bcd28de64ee5559e671353e16f075ecae9f99c7a79a38af5f869aa46",
    kdf: "pbkdf2",
    kdfparams: {
      c: 262144,
      dklen: 32,
      prf: "hmac-sha256",
      salt: "ae3cd4e7013836a3df6bd7241b12db061dbe2c6785853cce422d148a624ce0bd",
    },
    mac: "517ead924a9d0dc3124507e3393d175ce3ff7c1e96529c6c555ce9e51205e9b2",
  },
  id: "3198bc9c-6672-5ab3-d995-4942343ae5b6",
  version: 3,
};

const WIKI_SCRYPT = {
  crypto: {
    cipher: "aes-128-ctr",
    cipherparams: { iv: "83dbcc02d8ccb40e466191a123791e0e" },
    ciphertext: "d172bf743a674da9cdad04534d56926ef8358534d458fffccd4e6ad2fbde479c",
    kdf: "scrypt",
    kdfparams: {
      dklen: 32,
      n: 262144,
      r: 1,
      p: 8,
      salt: "ab0c7876052600dd703518d6fc3fe8984592145b591fc8fb5c6d43190334ba19",
    },
    mac: "2103ac29920d71da29f15d75b4a16dbe95cfd7ff8faea1056c33131d846e3097",
  },
  id: "3198bc9c-6672-5ab3-d995-4942343ae5b6",
  version: 3,
};

const WIKI_KEY = "7a28b5ba57c53603b0b07b56bba752f7784bf506fa95edc395f5cf6c7514fe9d";
const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");
const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

async function configError(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    expect(isDacdError(e, "CONFIG"), String(e)).toBe(true);
    return (e as Error).message;
  }
  throw new Error("expected a CONFIG error");
}

describe("decryptKeystore: published vectors", () => {
  it("decrypts the pbkdf2 vector", async () => {
    expect(hex(await decryptKeystore(WIKI_PBKDF2, "testpassword"))).toBe(WIKI_KEY);
  });

  it("decrypts the scrypt vector", async () => {
    expect(hex(await decryptKeystore(WIKI_SCRYPT, "testpassword"))).toBe(WIKI_KEY);
  });

  it("accepts JSON text and the legacy `Crypto` capitalisation", async () => {
    const { crypto, ...rest } = clone(WIKI_PBKDF2);
    expect(hex(await decryptKeystore(JSON.stringify({ ...rest, Crypto: crypto }), "testpassword"))).toBe(
      WIKI_KEY,
    );
  });

  it("fails cleanly on a wrong password", async () => {
    const msg = await configError(decryptKeystore(WIKI_PBKDF2, "testpassword!"));
    expect(msg).toBe("MAC mismatch: wrong password or corrupted keystore");
  });

  it("fails on a corrupted ciphertext", async () => {
    const ks = clone(WIKI_PBKDF2);
    ks.crypto.ciphertext = "6" + ks.crypto.ciphertext.slice(1);
    expect(await configError(decryptKeystore(ks, "testpassword"))).toMatch(/MAC mismatch/);
  });
});

describe("decryptKeystore: malformed and hostile files", () => {
  const base = (): typeof WIKI_SCRYPT => {
    const ks = clone(WIKI_SCRYPT);
    ks.crypto.kdfparams.n = 16;
    return ks;
  };

  it("names unsupported kdf, prf and cipher", async () => {
    const a = clone(WIKI_PBKDF2) as { crypto: Record<string, unknown> };
    a.crypto.kdf = "argon2id";
    expect(await configError(decryptKeystore(a, "x"))).toMatch(/crypto\.kdf.*unsupported kdf "argon2id"/);
    const b = clone(WIKI_PBKDF2);
    b.crypto.kdfparams.prf = "hmac-sha512";
    expect(await configError(decryptKeystore(b, "x"))).toMatch(/kdfparams\.prf.*unsupported prf/);
    const c = clone(WIKI_PBKDF2);
    c.crypto.cipher = "aes-128-cbc";
    expect(await configError(decryptKeystore(c, "x"))).toMatch(/crypto\.cipher.*unsupported cipher/);
  });

  it("names malformed fields", async () => {
    const cases: [(ks: Record<string, unknown> & { crypto: Record<string, unknown> }) => void, RegExp][] = [
      [(ks) => delete ks.crypto.mac, /crypto\.mac: missing/],
      [(ks) => (ks.crypto.mac = "zz"), /crypto\.mac: must be an even-length hex/],
      [(ks) => (ks.crypto.cipherparams = { iv: "00" }), /cipherparams\.iv: must be 16 bytes/],
      [(ks) => (ks.crypto.ciphertext = 5), /crypto\.ciphertext: must be a string/],
      [
        (ks) => ((ks.crypto.kdfparams as Record<string, unknown>).n = 3),
        /kdfparams\.n: must be a power of two/,
      ],
      [(ks) => ((ks.crypto.kdfparams as Record<string, unknown>).dklen = 16), /kdfparams\.dklen/],
      [(ks) => (ks.version = 1), /version/],
      [(ks) => delete (ks as Record<string, unknown>).crypto, /field crypto: missing/],
    ];
    for (const [mutate, re] of cases) {
      const ks = base() as unknown as Record<string, unknown> & { crypto: Record<string, unknown> };
      mutate(ks);
      expect(await configError(decryptKeystore(ks, "x"))).toMatch(re);
    }
    expect(await configError(decryptKeystore("{not json", "x"))).toMatch(/not valid JSON/);
    expect(await configError(decryptKeystore([1, 2], "x"))).toMatch(/JSON object/);
  });

  it("refuses scrypt parameters that would exhaust memory or time", async () => {
    const huge = base();
    huge.crypto.kdfparams.n = 2 ** 30;
    expect(await configError(decryptKeystore(huge, "x"))).toMatch(/kdfparams\.n/);
    const mem = base();
    mem.crypto.kdfparams.n = 2 ** 20;
    mem.crypto.kdfparams.r = 16; // 2 GiB
    expect(await configError(decryptKeystore(mem, "x"))).toMatch(/memory/);
    const work = base();
    work.crypto.kdfparams.n = 2 ** 20;
    work.crypto.kdfparams.r = 8;
    work.crypto.kdfparams.p = 16;
    expect(await configError(decryptKeystore(work, "x"))).toMatch(/n·r·p/);
    const pb = clone(WIKI_PBKDF2);
    pb.crypto.kdfparams.c = 2 ** 40;
    expect(await configError(decryptKeystore(pb, "x"))).toMatch(/kdfparams\.c/);
  });
});

describe("encryptKeystore", () => {
  const key = Buffer.from(WIKI_KEY, "hex");

  for (const kdf of ["scrypt", "pbkdf2"] as const) {
    it(`round-trips with ${kdf} and produces a standard V3 document`, async () => {
      const ks = (await encryptKeystore(key, "pässword", { kdf, fastForTests: true })) as unknown as {
        version: number;
        id: string;
        address: string;
        crypto: { kdf: string; kdfparams: Record<string, unknown>; cipher: string; mac: string };
      };
      expect(ks.version).toBe(3);
      expect(ks.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(ks.address).toBe("008aeeda4d805471df9b2a5b0f38a0c3bcba786b");
      expect(ks.crypto.cipher).toBe("aes-128-ctr");
      expect(ks.crypto.kdf).toBe(kdf);
      expect(ks.crypto.kdfparams.dklen).toBe(32);
      if (kdf === "pbkdf2") expect(ks.crypto.kdfparams.prf).toBe("hmac-sha256");
      expect(ks.crypto.mac).toMatch(/^[0-9a-f]{64}$/);
      const text = JSON.stringify(ks);
      expect(text).not.toContain(WIKI_KEY);
      expect(hex(await decryptKeystore(JSON.parse(text), "pässword"))).toBe(WIKI_KEY);
      await configError(decryptKeystore(ks, "password"));
    });
  }

  it("uses standard-strength parameters by default", async () => {
    const ks = await encryptKeystore(key, "pw", { kdf: "pbkdf2" });
    expect((ks.crypto.kdfparams as { c: number }).c).toBe(262144);
  });
});

describe("keygenCommand", () => {
  const dir = mkdtempSync(join(tmpdir(), "dacd-keygen-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("writes a 0600 keystore whose key matches the printed address, and refuses to overwrite", async () => {
    const pwFile = join(dir, "pw");
    writeFileSync(pwFile, "correct horse\n", { mode: 0o600 });
    const out = join(dir, "key.json");
    const printed: string[] = [];
    await keygenCommand({
      out,
      passwordFile: pwFile,
      kdf: "scrypt",
      fastForTests: true,
      print: (l) => printed.push(l),
    });
    expect(printed).toHaveLength(1);
    expect(printed[0]).toMatch(/^0x[0-9a-fA-F]{40}$/);
    expect(statSync(out).mode & 0o777).toBe(0o600);
    const doc = JSON.parse(readFileSync(out, "utf8")) as { address: string };
    const k = await decryptKeystore(doc, "correct horse");
    expect(secp256k1.utils.isValidSecretKey(k)).toBe(true);
    expect(ethAddressFromPrivateKey(k)).toBe(printed[0]);
    expect("0x" + doc.address).toBe(printed[0]!.toLowerCase());

    const before = readFileSync(out, "utf8");
    const refused = await keygenCommand({ out, passwordFile: pwFile, fastForTests: true }).catch(
      (e: unknown) => e,
    );
    expect(isDacdError(refused, "BAD_INPUT"), String(refused)).toBe(true); // exit 2: not overwritten
    expect((refused as Error).message).toMatch(/already exists/);
    expect(readFileSync(out, "utf8")).toBe(before);
  });

  it("refuses an empty password file", async () => {
    const pwFile = join(dir, "empty-pw");
    writeFileSync(pwFile, "\n", { mode: 0o600 });
    const refused = await keygenCommand({
      out: join(dir, "k2.json"),
      passwordFile: pwFile,
      fastForTests: true,
    }).catch((e: unknown) => e);
    expect(isDacdError(refused, "USAGE"), String(refused)).toBe(true);
    expect((refused as Error).message).toMatch(/empty/);
  });
});
