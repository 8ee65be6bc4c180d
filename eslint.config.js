import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  {
    ignores: [
      "dist/",
      "node_modules/",
      "native/build/",
      "prebuilds/",
      "test/fixtures/",
      "data/",
      ".devnet-data/",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // The launcher is CommonJS (bin/package.json) and sets libuv's pool through process.env.
    files: ["bin/*.js"],
    languageOptions: { sourceType: "commonjs", globals: { process: "readonly" } },
  },
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
    },
  },
);
