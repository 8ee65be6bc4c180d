#!/usr/bin/env bash
# Checks systemd/dacd.service with systemd's own tool: `systemd-analyze verify` must print nothing
# (it exits 0 on warnings such as an unknown key, so its output is what counts) and
# `systemd-analyze security --offline=true` must rate the unit 1.2 or less. Where systemd-analyze
# is not installed it says so and passes; where it is, any finding fails. Called by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
unit=systemd/dacd.service
max=1.2

if ! command -v systemd-analyze >/dev/null; then
  echo "check-systemd: systemd-analyze is not installed; the unit checks are skipped"
  exit 0
fi
fail() {
  echo "check-systemd: $*" >&2
  exit 1
}

# verify checks that ExecStart='s program exists and resolves the units the service is ordered
# against, so it runs in a scratch root: the unit where systemd looks for it, an executable stub at
# the ExecStart= path of the documented install, and systemd's own units (its targets).
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
exec_path="$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$unit")"
case "$exec_path" in
  /*) ;;
  *) fail "ExecStart= is not an absolute path: $exec_path" ;;
esac
mkdir -p "$tmp$(dirname "$exec_path")" "$tmp/etc/systemd/system" "$tmp/usr/lib/systemd"
printf '#!/bin/sh\n' >"$tmp$exec_path"
chmod +x "$tmp$exec_path"
units=/usr/lib/systemd/system
[ -d "$units" ] || units=/lib/systemd/system
cp -r "$units" "$tmp/usr/lib/systemd/system"
cp "$unit" "$tmp/etc/systemd/system/dacd.service"
verify="$(systemd-analyze verify --root="$tmp" /etc/systemd/system/dacd.service 2>&1)" ||
  fail "systemd-analyze verify failed: $verify"
[ -z "$verify" ] || fail "systemd-analyze verify: $verify"

report="$(systemd-analyze security --offline=true --no-pager "$unit" 2>&1)" ||
  fail "systemd-analyze security failed: $report"
score="$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' <<<"$report")"
[ -n "$score" ] || fail "no exposure level in: $report"
if ! awk -v s="$score" -v m="$max" 'BEGIN { exit !(s <= m) }'; then
  grep '✗' <<<"$report" >&2 || true
  fail "exposure level $score is above $max"
fi
echo "check-systemd: verify clean; exposure level $score (at most $max)"
