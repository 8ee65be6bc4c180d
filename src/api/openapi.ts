import { PAGE_FILE_NAMES, pageFileType } from "../escape/page/assets.js";

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
const escapeId = (what: string, height: string): Record<string, unknown> => ({
  ...id,
  description: `The ${what} id, decimal, below ${height}`,
});
const hex = { type: "string", pattern: "^0x[0-9a-f]{64}$" };
const words = (description: string): Record<string, unknown> => ({ type: "array", items: hex, description });
const signed = { type: "string", pattern: "^(0|-?[1-9][0-9]*)$" };
const unsigned = { type: "string", pattern: "^(0|[1-9][0-9]*)$" };
const source = {
  profile: { type: "string" },
  batch_id: { type: "integer" },
  sequence_number: { type: "integer" },
  empty: {
    type: "boolean",
    description: "An empty leaf: the proof is valid, and there is nothing to withdraw",
  },
};
/** A proof at another batch than the frozen one, from a member whose base-chain watch saw the freeze, says so. */
const frozenLabel = {
  frozen_batch_id: {
    type: "integer",
    description: "The batch the exchange froze at, when the member saw the freeze",
  },
  at_frozen_batch: {
    const: false,
    description: "Present (false) only when this proof is not at the frozen batch: the verifier refuses it",
  },
  frozen_batch_note: {
    type: "string",
    description: "When not at the frozen batch: why the proof will not serve",
  },
};
const nullable = (schema: Record<string, unknown>): Record<string, unknown> => ({
  anyOf: [schema, { type: "null" }],
});
const address = { type: "string", pattern: "^0x[0-9a-fA-F]{40}$" };
const exitPath = (what: "vault" | "position", height: string, variant: string): Record<string, unknown> => ({
  get: {
    summary: `The exit from the exchange for a ${what} (${variant}): each transaction, in order, with its call data`,
    description:
      "The steps register (only when the stark key has no Ethereum address on the exchange), request, freeze, " +
      "verify_escape, escape and withdraw, with StarkWare's function signatures and argument order, and `data` where " +
      "the committee's data are enough (null, with a note, where a value only the chain or the user holds is needed). " +
      "An empty leaf has no steps and a `message`. With `base_chain_rpc_url` configured, each step has the chain's " +
      "`state` and the answer a `chain` summary (isFrozen, FREEZE_GRACE_PERIOD, the pending request, getEthKey, the " +
      "asset and its quantum, the withdrawal balance). Default batch: the frozen batch, else the latest signed.",
    parameters: [escapeId(what, height), batch],
    responses: escapeAnswer("ExitPlan", "The exit plan"),
  },
});

const escapeAnswer = (schema: string, description: string): Record<string, unknown> => ({
  "200": {
    description,
    content: { "application/json": { schema: { $ref: `#/components/schemas/${schema}` } } },
  },
  ...byBatch,
  ...common,
});
const byBatch = errors({
  "400":
    "A malformed parameter (named in `parameter`): id not decimal or not below 2^height, batch not decimal",
  "404": "No such tree, or the batch is not signed, not stored or pruned (named in `parameter`)",
});

/** The escape page's files: `/` is index.html. */
const pageFile = (name: string, summary: string): Record<string, unknown> => ({
  get: {
    summary,
    description:
      "A file of the escape page (no outside assets; Content-Security-Policy default-src 'self'); the escape kit carries the same files.",
    responses: {
      "200": {
        description: `${name} (cached for five minutes)`,
        content: { [pageFileType(name).split(";")[0]!]: { schema: { type: "string" } } },
      },
      ...common,
    },
  },
});
const pagePaths = Object.fromEntries([
  [
    "/",
    pageFile("index.html", "The escape page: a vault's or position's proof and the transactions that use it"),
  ],
  ...PAGE_FILE_NAMES.map((name) => [`/${name}`, pageFile(name, `The escape page's ${name}`)]),
]);

export const OPENAPI = {
  openapi: "3.1.0",
  info: {
    title: "dacd escape API",
    version: "1",
    description:
      "Read-only access to a data-availability committee member's copy of the state: the latest signed batch, " +
      "leaves, Merkle proofs (checkable offline with `dacd verify-proof`), the same proofs as the base chain's " +
      "escape verifiers take them, and whole-tree dumps, for users of the " +
      "escape hatch. Every answer reads one consistent snapshot of the member's store.",
  },
  paths: {
    "/v1/batches/latest": {
      get: {
        summary:
          "The batch the other answers default to: the latest this member signed, or once the exchange is frozen the batch it froze at",
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
    "/v1/escape/info": {
      get: {
        summary: "What the escape page needs besides a proof",
        description:
          "The escape tree (vault for spot profiles, position for perpetual), its root and height at the batch " +
          "proofs are given for (the batch the exchange froze at, else the latest signed), and the contracts " +
          "the operator configured (`escape_contracts`).",
        responses: {
          "200": {
            description: "The escape tree and contracts",
            content: { "application/json": { schema: { $ref: "#/components/schemas/EscapeInfo" } } },
          },
          ...errors({ "404": "No batch is signed yet" }),
          ...common,
        },
      },
    },
    "/v1/escape/vault/{id}": {
      get: {
        summary: "A vault's escape proof as the base chain's EscapeVerifier takes it (spot profiles)",
        description:
          "The words of `verifyEscape(uint256[])`, the claim hash it registers and the call data of the two " +
          "transactions (`verifyEscape` on the verifier, `escape` on the frozen exchange), ready for a wallet. " +
          "Check it with `dacd verify-proof FILE --root ROOT`, ROOT the exchange's frozen vault root.",
        parameters: [escapeId("vault", "2^31 (validium vaults)"), batch],
        responses: escapeAnswer("SpotEscape", "The on-chain proof (format starkex-escape-spot/1)"),
      },
    },
    "/v1/escape/position/{id}": {
      get: {
        summary: "A position's escape proof as the base chain's PerpetualEscapeVerifier takes it (perpetual)",
        description:
          "The `merkleProof` words and `nAssets` of `verifyEscape(uint256[], uint256, uint256[])`; its third " +
          "argument, the shared state, comes from the base chain: once the member has read the frozen batch's from " +
          "its updateState transaction, the proof at that batch carries it, the withdrawal amount, the fact and the " +
          "call data of `verifyEscape`, `escape` and `withdraw`. Check it with `dacd verify-proof FILE --root ROOT`.",
        parameters: [escapeId("position", "2^64"), batch],
        responses: escapeAnswer("PerpetualEscape", "The on-chain proof (format starkex-escape-perpetual/1)"),
      },
    },
    "/v1/escape/vault/{id}/exit": exitPath("vault", "2^31 (validium vaults)", "spot"),
    "/v1/escape/position/{id}/exit": exitPath("position", "2^64", "perpetual"),
    "/v1/escape/keys/{starkKey}": {
      get: {
        summary: "A stark key's vaults (spot) or positions (perpetual) at a batch, with their amounts",
        description:
          "For a user who knows their stark key and not their ids. There is no index by key: the member walks every " +
          "non-empty leaf of the batch's tree, so the answer may take as long as a dump's walk (and time out on a " +
          "large state). Default batch: the frozen batch, else the latest signed. At most 1000 ids (`truncated`).",
        parameters: [
          {
            name: "starkKey",
            in: "path",
            required: true,
            description: "The stark key: 0x and 1 to 64 hex digits",
            schema: { type: "string", pattern: "^0x[0-9a-fA-F]{1,64}$" },
          },
          batch,
        ],
        responses: escapeAnswer("KeyLeaves", "The key's ids and amounts"),
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
    ...pagePaths,
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
          latest_signed_batch_id: {
            type: ["integer", "null"],
            description:
              "The latest batch this member signed (batch_id, unless the exchange froze at another)",
          },
          frozen_batch_id: {
            type: ["integer", "null"],
            description: "The batch the exchange froze at, once this member saw the freeze; else null",
          },
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
          frozen_batch_id: {
            type: "integer",
            description: "Once this member saw the exchange freeze: the batch it froze at",
          },
          at_frozen_batch: {
            type: "boolean",
            description:
              "With frozen_batch_id: whether this leaf is at that batch (the state escapes are checked against)",
          },
        },
      },
      EscapeInfo: {
        type: "object",
        required: [
          "profile",
          "tree",
          "batch_id",
          "sequence_number",
          "root",
          "tree_height",
          "escape_contracts",
        ],
        properties: {
          profile: { type: "string" },
          tree: { enum: ["vault", "position"] },
          batch_id: { type: "integer" },
          sequence_number: { type: "integer" },
          root: hex,
          tree_height: { type: "integer" },
          escape_contracts: {
            type: ["object", "null"],
            description: "The exchange and escape verifier addresses, when the operator configured them",
            required: ["exchange", "verifier"],
            properties: { exchange: { type: "string" }, verifier: { type: "string" } },
          },
          chain_id: {
            type: ["integer", "null"],
            description:
              "The base chain's id, read from base_chain_rpc_url; null without one or when its node does not answer",
          },
        },
      },
      SpotEscape: {
        type: "object",
        required: [
          "format",
          "empty",
          "vault_id",
          "stark_key",
          "asset_id",
          "quantized_amount",
          "vault_root",
          "tree_height",
          "escape_proof",
          "claim_hash",
          "calldata",
        ],
        properties: {
          format: { const: "starkex-escape-spot/1" },
          ...source,
          ...frozenLabel,
          vault_id: unsigned,
          stark_key: hex,
          asset_id: hex,
          quantized_amount: unsigned,
          vault_root: hex,
          tree_height: { type: "integer" },
          escape_proof: words("The escapeProof words: 2·(tree_height + 3), 68 at height 31"),
          claim_hash: {
            ...hex,
            description:
              "keccak256(abi.encode(stark_key, asset_id, quantized_amount, vault_root, tree_height, vault_id))",
          },
          calldata: {
            type: "object",
            required: ["verify_escape", "escape"],
            properties: {
              verify_escape: { type: "string", description: "verifyEscape(uint256[]) on the EscapeVerifier" },
              escape: {
                type: "string",
                description:
                  "escape(uint256 starkKey, uint256 vaultId, uint256 assetId, uint256 quantizedAmount) on the exchange",
              },
            },
          },
        },
      },
      PerpetualEscape: {
        type: "object",
        required: [
          "format",
          "empty",
          "position_id",
          "public_key",
          "collateral_balance",
          "assets",
          "n_assets",
          "position_root",
          "tree_height",
          "merkle_proof",
          "note",
        ],
        properties: {
          format: { const: "starkex-escape-perpetual/1" },
          ...source,
          ...frozenLabel,
          position_id: unsigned,
          public_key: hex,
          collateral_balance: signed,
          assets: {
            type: "array",
            description: "Ascending by asset id",
            items: {
              type: "object",
              required: ["asset_id", "balance", "cached_funding_index"],
              properties: { asset_id: hex, balance: signed, cached_funding_index: signed },
            },
          },
          n_assets: { type: "integer" },
          position_root: hex,
          tree_height: { type: "integer" },
          merkle_proof: words("The merkleProof words: 2·(n_assets + 2 + tree_height + 1)"),
          shared_state: words("At the frozen batch: the sharedState words, from its updateState transaction"),
          shared_state_hash: hex,
          shared_state_tx: {
            type: "string",
            description: "The updateState transaction the shared state is from",
          },
          withdrawal_amount: {
            ...signed,
            description:
              "What the verifier computes the position may withdraw; absent when it refuses the position",
          },
          fact_hash: hex,
          system_asset_type: hex,
          calldata: {
            type: "object",
            description: "When the withdrawal amount is positive: the three calls, ready for a wallet",
            required: ["verify_escape", "escape"],
            properties: {
              verify_escape: {
                type: "string",
                description: "verifyEscape(merkleProof, nAssets, sharedState) on the verifier",
              },
              escape: {
                type: "string",
                description:
                  "escape(uint256 starkKey, uint256 vaultId, uint256 quantizedAmount) on the exchange",
              },
              withdraw: {
                type: "string",
                description: "withdraw(uint256 ownerKey, uint256 assetType) on the exchange",
              },
            },
          },
          note: {
            type: "string",
            description: "Where verifyEscape's sharedState comes from (the base chain), and the steps",
          },
        },
      },
      ExitPlan: {
        type: "object",
        required: [
          "object",
          "id",
          "batch_id",
          "chain_id",
          "frozen_batch_id",
          "at_frozen_batch",
          "exchange",
          "verifier",
          "owner_key",
          "quantized_amount",
          "empty",
          "fact",
          "message",
          "notes",
          "steps",
        ],
        properties: {
          object: { enum: ["vault", "position"] },
          id: unsigned,
          batch_id: nullable({ type: "integer" }),
          chain_id: nullable({ type: "integer" }),
          frozen_batch_id: nullable({ type: "integer" }),
          at_frozen_batch: {
            ...nullable({ type: "boolean" }),
            description: "Whether the proof is at the frozen batch; null when the freeze is not known",
          },
          exchange: nullable(address),
          verifier: nullable(address),
          owner_key: { ...hex, description: "The stark key (the position's public key)" },
          asset_id: { ...hex, description: "Spot: the vault's asset id" },
          quantized_amount: {
            ...signed,
            description:
              "Spot: the vault's balance; perpetual: what the verifier lets the position withdraw, or its collateral without the shared state",
          },
          empty: { type: "boolean" },
          fact: nullable({ ...hex, description: "The fact verifyEscape registers and escape looks up" }),
          message: nullable({
            type: "string",
            description: "Why there is no step (an empty leaf, nothing to withdraw)",
          }),
          notes: { type: "array", items: { type: "string" } },
          steps: { type: "array", items: { $ref: "#/components/schemas/ExitStep" } },
          chain: {
            type: "object",
            description:
              "With base_chain_rpc_url: what the chain says (uint256s as decimal strings; null when unread)",
            properties: {
              frozen: nullable({ type: "boolean" }),
              freeze_grace_period: nullable(unsigned),
              last_batch_id: nullable({ type: "integer" }),
              eth_key: nullable(address),
              request_time: nullable(unsigned),
              freeze_possible_at: nullable(unsigned),
              withdrawal_balance: nullable({ ...unsigned, description: "getWithdrawalBalance, base units" }),
              withdrawal_balance_quantized: nullable(unsigned),
              asset: nullable({
                type: "object",
                properties: {
                  kind: {
                    enum: [
                      "eth",
                      "erc20",
                      "erc721",
                      "erc1155",
                      "mintable_erc20",
                      "mintable_erc721",
                      "unregistered",
                    ],
                  },
                  token: address,
                  quantum: unsigned,
                  decimals: { type: "integer" },
                  info: { type: "string" },
                  assetType: { type: "string" },
                },
              }),
              amount_base_units: nullable(unsigned),
              amount_units: nullable({ type: "string" }),
              unread: {
                type: "array",
                items: { type: "string" },
                description: "Reads that failed, one line each",
              },
            },
          },
        },
      },
      KeyLeaves: {
        type: "object",
        required: ["format", "stark_key", "object", "batch_id", "leaves", "truncated", "scanned"],
        properties: {
          format: { const: "dacd-key-leaves/1" },
          stark_key: hex,
          object: { enum: ["vault", "position"] },
          batch_id: { type: "integer" },
          leaves: {
            type: "array",
            items: {
              type: "object",
              required: ["id"],
              properties: {
                id: unsigned,
                asset_id: { ...hex, description: "Spot" },
                quantized_amount: { ...unsigned, description: "Spot" },
                collateral_balance: { ...signed, description: "Perpetual" },
                n_assets: { type: "integer", description: "Perpetual" },
              },
            },
          },
          truncated: { type: "boolean", description: "More than 1000 ids: the list stops there" },
          scanned: { type: "integer", description: "Non-empty leaves walked" },
        },
      },
      ExitStep: {
        type: "object",
        required: [
          "step",
          "contract",
          "to",
          "function",
          "inputs",
          "args",
          "data",
          "value",
          "sender",
          "state",
          "note",
        ],
        properties: {
          step: { enum: ["register", "request", "freeze", "verify_escape", "escape", "withdraw"] },
          contract: { enum: ["exchange", "verifier"] },
          to: nullable(address),
          function: {
            type: "string",
            description: "The canonical signature, e.g. fullWithdrawalRequest(uint256,uint256)",
          },
          inputs: { type: "array", items: { type: "string" }, description: "The parameter names" },
          args: {
            type: "array",
            description:
              "One per input: 0x hex or decimal strings, an array of words, a bool, or null when not known",
          },
          data: nullable({ type: "string", description: "The call data, ready for a wallet" }),
          value: { const: "0" },
          sender: { enum: ["owner", "anyone"] },
          state: nullable({
            type: "object",
            required: ["status", "reason", "revert"],
            properties: {
              status: { enum: ["done", "ready", "waiting", "blocked", "unknown"] },
              reason: nullable({ type: "string" }),
              revert: nullable({
                type: "string",
                description: "The revert reason of an eth_call of the step",
              }),
            },
          }),
          note: nullable({ type: "string" }),
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
