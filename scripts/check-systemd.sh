#!/usr/bin/env bash
# Checks systemd/dacd.service and the template systemd/dacd@.service with systemd's own tool:
# `systemd-analyze verify` must print nothing (it exits 0 on warnings such as an unknown key, so its
# output is what counts) and `systemd-analyze security --offline=true` must rate each unit 1.2 or
# less. The template must set what the main unit sets, but for its per-instance names (so its
# hardening cannot drift). Where systemd-analyze is not installed it says so and passes; where it
# is, any finding fails. Called by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
max=1.2
fail() {
  echo "check-systemd: $*" >&2
  exit 1
}

# The settings of a unit, without comments and the lines that name the instance.
settings() {
  grep -Ev '^\s*(#|$)' "$1" | grep -Ev '^(Description=|ExecStart=|SyslogIdentifier=|StateDirectory=|Environment=DACD_)'
}
drift="$(diff <(settings systemd/dacd.service) <(settings systemd/dacd@.service))" ||
  fail "systemd/dacd@.service differs from dacd.service beyond its instance names: $drift"
grep -qE '^ExecStart=.* /usr/local/bin/dacd run --config /etc/dacd/%i.yaml$' systemd/dacd@.service ||
  fail "dacd@.service does not run /etc/dacd/%i.yaml"
grep -qx 'StateDirectory=dacd/%i dacd-claims/%i' systemd/dacd@.service ||
  fail "dacd@.service has no state and claims directories of its own"

if ! command -v systemd-analyze >/dev/null; then
  echo "check-systemd: systemd-analyze is not installed; the unit checks are skipped"
  exit 0
fi

# verify checks that ExecStart='s program exists and resolves the units the service is ordered
# against, so it runs in a scratch root: the unit where systemd looks for it, an executable stub at
# the ExecStart= path of the documented install, and systemd's own units (its targets). A template
# is verified through an instance of it.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
units=/usr/lib/systemd/system
[ -d "$units" ] || units=/lib/systemd/system
mkdir -p "$tmp/etc/systemd/system" "$tmp/usr/lib/systemd"
cp -r "$units" "$tmp/usr/lib/systemd/system"
check_unit() {
  local unit="$1" name="$2" verify_as="$3"
  local exec_path
  exec_path="$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$unit")"
  case "$exec_path" in
    /*) ;;
    *) fail "$name: ExecStart= is not an absolute path: $exec_path" ;;
  esac
  mkdir -p "$tmp$(dirname "$exec_path")"
  printf '#!/bin/sh\n' >"$tmp$exec_path"
  chmod +x "$tmp$exec_path"
  cp "$unit" "$tmp/etc/systemd/system/$name"
  local verify report score
  verify="$(systemd-analyze verify --root="$tmp" "/etc/systemd/system/$verify_as" 2>&1)" ||
    fail "$name: systemd-analyze verify failed: $verify"
  [ -z "$verify" ] || fail "$name: systemd-analyze verify: $verify"

  report="$(systemd-analyze security --offline=true --root="$tmp" --no-pager "$verify_as" 2>&1)" ||
    fail "$name: systemd-analyze security failed: $report"
  score="$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' <<<"$report")"
  [ -n "$score" ] || fail "$name: no exposure level in: $report"
  if ! awk -v s="$score" -v m="$max" 'BEGIN { exit !(s <= m) }'; then
    grep '✗' <<<"$report" >&2 || true
    fail "$name: exposure level $score is above $max"
  fi
  echo "check-systemd: $name: verify clean; exposure level $score (at most $max)"
}
check_unit systemd/dacd.service dacd.service dacd.service
check_unit systemd/dacd@.service dacd@.service dacd@spot-a.service
