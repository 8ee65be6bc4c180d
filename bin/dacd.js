#!/usr/bin/env node
// Thin launcher: the CLI is compiled to dist/ by `npm run build` (in a checkout `npm ci` runs it via
// `prepare`; the packed tarball carries dist/, built by `prepack`).
import "../dist/src/cli/main.js";
