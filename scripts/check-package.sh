#!/usr/bin/env bash
# The package as a user gets it: `npm pack` (prepack builds dist/ and the prebuilt addon), then the
# tarball installed globally without devDependencies into temporary prefixes, once with its install
# script and once with --ignore-scripts (as a later npm may install it when allowScripts does not
# cover it). Each installed `dacd` must answer --help and replay the golden vector
# (test/fixtures/vectors/spot-golden) to the expected roots, claim and signature. Called by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "check-package: $*" >&2
  exit 1
}

npm pack --silent --pack-destination "$tmp" >"$tmp/pack.out"
tarball="$tmp/$(tail -n 1 "$tmp/pack.out")"
[ -f "$tarball" ] || fail "npm pack did not write a tarball"
tar tzf "$tarball" >"$tmp/files"
echo "check-package: $(basename "$tarball"), $(wc -l <"$tmp/files") files, $(du -k "$tarball" | cut -f1) KiB"

# What it carries: the compiled CLI, the addon's sources and install script, the licence, the
# changelog, the documentation, the alert rules with their tests, the dashboard and the units; no
# tests, benchmarks, CI files, TypeScript sources or source maps.
for f in bin/dacd.js dist/src/cli/main.js dist/page/escape.js native/binding.gyp dist/src/verifier/hash/pedersen-worker.js \
  native/dacd_native.c native/pedersen/pedersen_napi.c native/trees/record_format.h \
  native/level/dacd_level.cc native/level/leveldb-sync-beside.patch scripts/build-native.mjs scripts/build-level.mjs \
  scripts/native-toolchain.mjs scripts/window-bits.mjs LICENSE CHANGELOG.md README.md \
  docs/operations.md docs/escape.md docs/hardening.md docs/escape-api.openapi.json \
  ops/prometheus/dacd-alerts.yml ops/prometheus/dacd-alerts.test.yml ops/grafana/dacd-dashboard.json \
  systemd/dacd.service systemd/dacd@.service config/spot.yaml; do
  grep -qx "package/$f" "$tmp/files" || fail "the tarball lacks $f"
done
if grep -E '^package/(test|bench|\.ci|src|dist/bench|dist/test|native/build)/|\.map$|\.ts$' "$tmp/files"; then
  fail "the tarball carries files it should not (above)"
fi
prebuilt=no
if [ "$(node -p 'process.platform + "-" + process.arch')" = linux-x64 ]; then
  grep -qx package/prebuilds/linux-x64/dacd_native.node "$tmp/files" || fail "the tarball lacks the prebuilt addon"
  grep -qx package/prebuilds/linux-x64/level/build/Release/classic_level.node "$tmp/files" ||
    fail "the tarball lacks the prebuilt LevelDB binding"
  prebuilt=yes
fi

golden=test/fixtures/vectors/spot-golden
node -e 'process.stdout.write(require(process.argv[1]).private_key)' "$PWD/$golden/expected.json" >"$tmp/member.key"
chmod 600 "$tmp/member.key"

# npm 11 has allowScripts: name the two packages whose install scripts this install needs, as the
# README does. npm matches a tarball by its absolute path (a registry package by its name), and
# --strict-allow-scripts fails the install when the list does not cover every install script.
allow=()
if [ "$(npm config get allow-scripts)" != undefined ]; then
  allow=("--allow-scripts=$tarball,classic-level")
  [ "$(npm config get strict-allow-scripts)" != undefined ] && allow+=(--strict-allow-scripts)
fi

check_install() {
  local mode="$1" prefix="$tmp/$1"
  shift
  mkdir -p "$prefix/lib"
  npm install -g --omit=dev --omit=optional --no-audit --no-fund --loglevel=error --prefix "$prefix" "$@" "$tarball" \
    >"$tmp/$mode.install" 2>&1 || { cat "$tmp/$mode.install" >&2; fail "$mode: npm install failed"; }
  "$prefix/bin/dacd" --help | grep -q '^  replay' || fail "$mode: dacd --help does not list replay"
  # With the prebuilt addon (linux-x64) the native engine must load whether or not a script ran.
  local engine=auto
  [ "$prebuilt" = yes ] && engine=native
  DACD_HASH_ENGINE="$engine" "$prefix/bin/dacd" replay --profile spot --key-file "$tmp/member.key" \
    --input "$golden/responses.json" --db "$tmp/$mode.db" >"$tmp/$mode.out" 2>"$tmp/$mode.err" ||
    { cat "$tmp/$mode.err" >&2; fail "$mode: dacd replay failed"; }
  [ "$(grep -c 'WASM engine' "$tmp/$mode.err" || true)" -le 1 ] || fail "$mode: the WASM fallback is said more than once"
  ENGINE="$engine" node -e '
    const [expectedFile, outFile, mode] = process.argv.slice(1);
    const want = require(expectedFile).batches;
    const got = require("fs").readFileSync(outFile, "utf8").trim().split("\n").map((l) => JSON.parse(l));
    if (got.length !== want.length) throw new Error(`${mode}: ${got.length} batches replayed, ${want.length} expected`);
    want.forEach((w, i) => {
      const g = got[i];
      for (const k of ["claim_hash", "signature"]) {
        if (g[k] !== w[k]) throw new Error(`${mode}: batch ${w.batch_id} ${k} ${g[k]}, expected ${w[k]}`);
      }
      for (const [tree, root] of Object.entries(w.roots)) {
        const hex = (v) => BigInt("0x" + String(v).replace(/^0x/, ""));
        if (hex(g.roots[tree]) !== hex(root)) throw new Error(`${mode}: batch ${w.batch_id} ${tree} root differs`);
      }
    });
    console.log(`check-package: ${mode}: dacd --help and the golden replay (${want.length} batch, engine ${process.env.ENGINE}) match`);
  ' "$PWD/$golden/expected.json" "$tmp/$mode.out" "$mode"
  # The HSM binding compiles at install: an optional peer, never installed with dacd.
  [ ! -e "$prefix/lib/node_modules/dacd/node_modules/pkcs11js" ] || fail "$mode: pkcs11js was installed"
  # No Hardhat in an install: --chain is refused in one line, before the demo makes its folder and key.
  local cmd
  for cmd in "demo --chain --data-dir $tmp/$mode.demo" "devnet --chain"; do
    # shellcheck disable=SC2086 # the words of $cmd
    if "$prefix/bin/dacd" $cmd >"$tmp/$mode.chain" 2>&1; then fail "$mode: dacd $cmd ran without Hardhat"; fi
    { [ "$(wc -l <"$tmp/$mode.chain")" -eq 1 ] && grep -q '^dacd: --chain needs Hardhat' "$tmp/$mode.chain"; } ||
      { cat "$tmp/$mode.chain" >&2; fail "$mode: dacd $cmd without Hardhat is not one line"; }
  done
  [ ! -e "$tmp/$mode.demo" ] || fail "$mode: dacd demo --chain left $tmp/$mode.demo behind"
}

# The installed demo's next steps name this dacd as the user can run it: here by its path (its bin
# directory is not on the PATH), never `npx dacd`, which outside a project asks the public registry.
check_demo_steps() {
  local prefix="$tmp/$1" out="$tmp/$1.demo-steps"
  (cd "$tmp" && exec "$prefix/bin/dacd" demo --data-dir "$tmp/$1.demo-steps.d" --traffic 5) >"$out" 2>&1 &
  local pid=$! i
  for i in $(seq 1 120); do
    grep -q 'stop the demo with Ctrl-C' "$out" && break
    sleep 0.5
  done
  kill -INT "$pid" 2>/dev/null || true
  wait "$pid" || true
  grep -qx "  $prefix/bin/dacd status --config $tmp/$1.demo-steps.d/dacd.yaml" "$out" ||
    { cat "$out" >&2; fail "$1: the demo's next steps do not name the installed dacd"; }
  if grep -q 'npx dacd' "$out"; then fail "$1: the demo's next steps say npx dacd"; fi
  echo "check-package: $1: no pkcs11js, --chain without Hardhat is one line, the demo's steps name $prefix/bin/dacd"
}

# Which LevelDB binding an install loads: dacd's (built by the install script, or the package's
# prebuilt one) or classic-level's own.
level_binding() {
  node --input-type=module -e 'const m = await import(process.argv[1]); console.log(m.levelBindingName)' \
    "$tmp/$1/lib/node_modules/dacd/dist/src/storage/level-binding.js"
}

check_install with-scripts "${allow[@]}"
check_demo_steps with-scripts
# The replay above wrote its store with dacd's binding: the package's prebuilt one, made from these
# very sources, so the install script builds nothing (it would with another classic-level).
if [ "$prebuilt" = yes ]; then
  [ ! -e "$tmp/with-scripts/lib/node_modules/dacd/native/build/level/build/Release/classic_level.node" ] ||
    fail "with-scripts: the install script built a LevelDB binding beside a prebuilt one of the same sources"
  [ "$(level_binding with-scripts)" = dacd ] || fail "with-scripts: dacd's LevelDB binding is not the one loaded"
fi
check_install ignore-scripts --ignore-scripts
# Without the install script too, on linux-x64: the prebuilt binding.
if [ "$prebuilt" = yes ]; then
  [ "$(level_binding ignore-scripts)" = dacd ] || fail "ignore-scripts: dacd's LevelDB binding is not the one loaded"
  # Beside another classic-level version the prebuilt binding is left alone.
  echo 0.0.0 >"$tmp/ignore-scripts/lib/node_modules/dacd/prebuilds/linux-x64/level/classic-level.version"
  [ "$(level_binding ignore-scripts)" = classic-level ] ||
    fail "ignore-scripts: the prebuilt LevelDB binding was loaded beside another classic-level version"
  echo "check-package: both installs load dacd's LevelDB binding (the prebuilt one), not beside another classic-level"
fi
