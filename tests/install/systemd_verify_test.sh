#!/usr/bin/env bash
# systemd_verify_test.sh: `systemd-analyze verify` on packaging/wharfd.service.
# verify insists that ExecStart's program exists, so a copy of the unit runs
# SUBSTITUTE (the built wharfd when there is one) instead of /usr/bin/wharfd.
# Any diagnostic fails the test: verify reports unknown keys and bad values
# as warnings and still exits 0. Exit 77 (skip) without systemd-analyze.
#
# Usage: systemd_verify_test.sh UNIT SUBSTITUTE
set -uo pipefail
unit=$1 substitute=$2
if ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "systemd_verify_test: SKIP: systemd-analyze not installed" >&2
  exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wharf-unit-test.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP

grep -q '^ExecStart=/usr/bin/wharfd ' "$unit" || { echo "no ExecStart=/usr/bin/wharfd in $unit" >&2; exit 1; }
sed "s|^ExecStart=/usr/bin/wharfd |ExecStart=$substitute |" "$unit" > "$tmp/wharfd.service"
out=$(cd "$tmp" && SYSTEMD_LOG_COLOR=0 timeout 60 systemd-analyze verify ./wharfd.service 2>&1)
rc=$?
if [[ $rc -ne 0 || -n "$out" ]]; then
  echo "systemd-analyze verify (exit $rc):" >&2
  echo "$out" >&2
  exit 1
fi
echo "systemd_verify_test: ok"
