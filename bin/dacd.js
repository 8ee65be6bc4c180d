#!/usr/bin/env node
// Thin launcher: the CLI is compiled to dist/ by `npm run build` (in a checkout `npm ci` runs it via
// `prepare`; the packed tarball carries dist/, built by `prepack`).
//
// CommonJS (bin/package.json), so that it runs before Node's ES module loader reads a file: that
// loader's reads start libuv's threadpool, which takes its size from UV_THREADPOOL_SIZE once, then.
// The size the store's lookups want is DACD_THREADPOOL_SIZE in src/util/threadpool.ts; an operator's
// own UV_THREADPOOL_SIZE is kept.
process.env.UV_THREADPOOL_SIZE ??= "16";
import("../dist/src/cli/main.js");
