import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { SCHEMA, type Field } from "../../src/config/schema.js";

// The schema is the one list of configuration keys: the docs' table and the examples follow it.
const root = new URL("../../", import.meta.url);

/** The schema's keys, nested ones as `parent.child`, in the schema's order. */
function schemaKeys(fields: Readonly<Record<string, Field>>, prefix = ""): [string, Field][] {
  return Object.entries(fields).flatMap(([key, field]): [string, Field][] =>
    field.kind === "object" ? schemaKeys(field.fields, `${prefix}${key}.`) : [[prefix + key, field]],
  );
}

/** What the docs' default column says for a field. */
function documentedDefault(field: Field): string {
  if (field.kind === "object") throw new Error("objects have no default");
  if (field.required) return "required";
  return field.default === undefined ? "—" : `\`${String(field.default)}\``;
}

/** The rows of docs/configuration.md's table: key and default. */
function docsRows(): [string, string][] {
  const text = readFileSync(new URL("docs/configuration.md", root), "utf8");
  return text
    .split("\n")
    .filter((line) => line.startsWith("| `"))
    .map((line) => {
      const [key, value] = line
        .split("|")
        .slice(1, 3)
        .map((cell) => cell.trim());
      return [key!.replace(/^`|`$/g, ""), value!];
    });
}

/**
 * The keys an example uses, and those it shows commented out (`# key: value`, nested ones
 * indented under a commented-out parent), nested ones as `parent.child`.
 */
function exampleKeys(text: string): string[] {
  const used: string[] = [];
  const walk = (value: unknown, prefix: string): void => {
    if (value === null || typeof value !== "object" || Array.isArray(value)) return;
    for (const [key, inner] of Object.entries(value)) {
      const field = prefix === "" ? SCHEMA[key] : undefined;
      if (field?.kind === "object") walk(inner, `${key}.`);
      else used.push(prefix + key);
    }
  };
  walk(parse(text), "");
  let parent = "";
  for (const line of text.split("\n")) {
    const commented = /^# ?( *)([a-z][a-z0-9_]*):(?: |$)/.exec(line);
    if (!commented) continue;
    const [, indent, key] = commented;
    if (indent === "") {
      parent = key!;
      if (SCHEMA[key!]?.kind !== "object") used.push(key!);
    } else used.push(`${parent}.${key}`);
  }
  return used;
}

describe("configuration keys", () => {
  const keys = schemaKeys(SCHEMA);

  it("docs/configuration.md names exactly the schema's keys, in its order", () => {
    expect(docsRows().map(([key]) => key)).toEqual(keys.map(([key]) => key));
  });

  it("docs/configuration.md states the schema's defaults and required keys", () => {
    const stated = new Map(docsRows());
    for (const [key, field] of keys) expect([key, stated.get(key)]).toEqual([key, documentedDefault(field)]);
  });

  const examples = readdirSync(new URL("config/", root)).filter((name) => name.endsWith(".yaml"));
  it("there are examples to check", () => expect(examples.length).toBeGreaterThanOrEqual(3));
  it.each(examples)("config/%s uses only the schema's keys, commented-out ones too", (name) => {
    const used = exampleKeys(readFileSync(new URL(`config/${name}`, root), "utf8"));
    expect(used).toContain("profile");
    const known = new Set(keys.map(([key]) => key));
    expect(used.filter((key) => !known.has(key))).toEqual([]);
  });

  it("would notice an unknown key in an example, commented out or not", () => {
    expect(exampleKeys("profile: spot\npolling_intervall_s: 5\n# heights:\n#   vaults: 31\n")).toEqual([
      "profile",
      "polling_intervall_s",
      "heights.vaults",
    ]);
  });
});
