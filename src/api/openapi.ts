/**
 * The escape API's OpenAPI document, served at /v1/openapi.json and committed as
 * docs/escape-api.openapi.json (a unit test keeps the two equal).
 */

const error = { $ref: "#/components/schemas/Error" };
const errors = (codes: Record<string, string>): Record<string, unknown> =>
  Object.fromEntries(
    Object.entries(codes).map(([code, description]) => [
      code,
      { description, content: { "application/json": { schema: error } } },
    ]),
  );
const common = {
  "405": { description: "Any method other than GET and HEAD (the API is read-only)" },
  ...errors({
    "429": "Too many requests from this address; wait Retry-After seconds",
    "503": "Too many requests being answered, or no answer in time; wait Retry-After seconds",
  }),
};
const tree = {
  name: "tree",
  in: "path",
  required: true,
  description:
    "The tree: vault and order (spot), rollup_vault (spot with rollup), position and order (perpetual)",
  schema: { type: "string", enum: ["vault", "order", "rollup_vault", "position"] },
};
const id = {
  name: "id",
  in: "path",
  required: true,
  description: "The leaf id (vault, order or position id), decimal, below 2^height of the tree",
  schema: { type: "string", pattern: "^(0|[1-9][0-9]*)$" },
};
const batch = {
  name: "batch",
  in: "query",
  required: false,
  description: "A signed batch id (default: the latest signed batch)",
  schema: { type: "integer", minimum: 0 },
};
const byBatch = errors({
  "400":
    "A malformed parameter (named in `parameter`): id not decimal or not below 2^height, batch not decimal",
  "404": "No such tree, or the batch is not signed, not stored or pruned (named in `parameter`)",
});

export const OPENAPI = {
  openapi: "3.1.0",
  info: {
    title: "dacd escape API",
    version: "1",
    description:
      "Read-only access to a data-availability committee member's copy of the state: the latest signed batch, " +
      "leaves, Merkle proofs (checkable offline with `dacd verify-proof`) and whole-tree dumps, for users of the " +
      "escape hatch. Every answer reads one consistent snapshot of the member's store.",
  },
  paths: {
    "/v1/batches/latest": {
      get: {
        summary: "The latest batch this member signed",
        responses: {
          "200": {
            description: "The batch",
            content: { "application/json": { schema: { $ref: "#/components/schemas/Batch" } } },
          },
          ...errors({ "404": "No batch is signed yet" }),
          ...common,
        },
      },
    },
    "/v1/leaf/{tree}/{id}": {
      get: {
        summary: "A leaf at a batch (the JSON of `dacd show leaf`)",
        parameters: [tree, id, batch],
        responses: {
          "200": {
            description: "The leaf; an empty leaf has empty: true",
            content: { "application/json": { schema: { $ref: "#/components/schemas/Leaf" } } },
          },
          ...byBatch,
          ...common,
        },
      },
    },
    "/v1/proof/{tree}/{id}": {
      get: {
        summary: "A leaf's proof under its batch's root (the JSON of `dacd proof`)",
        description:
          "Save it and check it with `dacd verify-proof FILE --root ROOT`, ROOT taken from the base chain. " +
          "An empty leaf's proof shows non-membership.",
        parameters: [tree, id, batch],
        responses: {
          "200": {
            description: "The proof (format dacd-proof/1)",
            content: { "application/json": { schema: { $ref: "#/components/schemas/Proof" } } },
          },
          ...byBatch,
          ...common,
        },
      },
    },
    "/v1/dump/{tree}": {
      get: {
        summary: "Every non-empty leaf of a tree at a batch, in id order (the file of `dacd dump`), streamed",
        description:
          "CSV with a header line for vaults and orders (vault_id,key,token,balance; order_id,fulfilled_amount), " +
          "JSON lines for positions. Headers X-Dacd-Batch-Id and X-Dacd-Root name the batch and the tree's root.",
        parameters: [tree, batch],
        responses: {
          "200": {
            description: "The dump file",
            content: {
              "text/csv": { schema: { type: "string" } },
              "application/x-ndjson": { schema: { type: "string" } },
            },
          },
          ...byBatch,
          ...common,
        },
      },
    },
    "/v1/openapi.json": {
      get: {
        summary: "This document",
        responses: { "200": { description: "OpenAPI 3.1", content: { "application/json": {} } }, ...common },
      },
    },
  },
  components: {
    schemas: {
      Error: {
        type: "object",
        required: ["error", "status"],
        properties: {
          error: { type: "string" },
          status: { type: "integer" },
          parameter: { type: "string", description: "The parameter at fault, when one is" },
        },
      },
      Batch: {
        type: "object",
        required: ["batch_id", "sequence_number", "roots"],
        properties: {
          batch_id: { type: "integer" },
          sequence_number: { type: "integer" },
          roots: {
            type: "object",
            description: "Each tree's root, 64 hex digits",
            additionalProperties: { type: "string" },
          },
          claim_hash: { type: "string" },
          accepted_at: { type: ["string", "null"], format: "date-time" },
        },
      },
      Leaf: {
        type: "object",
        required: ["batch_id", "tree", "id", "empty", "leaf_hash", "leaf"],
        properties: {
          batch_id: { type: "integer" },
          tree: { type: "string" },
          id: { type: "string" },
          empty: { type: "boolean" },
          leaf_hash: { type: "string" },
          leaf: {
            type: "object",
            description:
              "stark_key, token, balance (vaults); fulfilled_amount (orders); public_key, collateral_balance, assets (positions)",
          },
        },
      },
      Proof: {
        type: "object",
        required: [
          "format",
          "profile",
          "batch_id",
          "tree",
          "height",
          "root",
          "leaf_id",
          "empty",
          "leaf",
          "leaf_hash",
        ],
        properties: {
          format: { const: "dacd-proof/1" },
          profile: { type: "string" },
          batch_id: { type: "integer" },
          sequence_number: { type: "integer" },
          tree: { type: "string" },
          kind: { enum: ["merkle", "patricia"] },
          leaf_kind: { type: "string" },
          height: { type: "integer" },
          root: { type: "string" },
          leaf_id: { type: "string" },
          empty: { type: "boolean" },
          leaf: { type: "object" },
          leaf_hash: { type: "string" },
          siblings: {
            type: "array",
            items: { type: "string" },
            description: "Merkle: sibling hashes, leaf level upward",
          },
          steps: {
            type: "array",
            items: { type: "object" },
            description: "Patricia: binary and edge nodes, root downward",
          },
        },
      },
    },
  },
} as const;
