#!/usr/bin/env bash
# wharfd_yaml_engine_keys_test.sh: packaging/wharfd.yaml writes every engine
# key out commented, at its default. Uncommented, that part must load as an
# endpoint's config (so no key is misspelt, unknown or out of date): this
# runs `wharf serve --config` on it for a moment.
#
# Usage: wharfd_yaml_engine_keys_test.sh WHARF_PROGRAM WHARFD_YAML
set -uo pipefail
wharf=$1 yaml=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wharf-yaml-test.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP

# From the engine marker on: "# homa:" -> "homa:", "#   key: v" -> "  key: v";
# notes ("#   # ...") stay comments.
sed -n '/^# --- the engine/,$p' "$yaml" |
  sed -E 's/^# (homa|udp|endpoint|tcp|ucx):/\1:/; s/^#   /  /' > "$tmp/engine.yaml"
for section in homa udp endpoint tcp ucx; do
  grep -q "^$section:" "$tmp/engine.yaml" || { echo "no $section section in $yaml" >&2; exit 1; }
done
timeout 30 "$wharf" serve --config "$tmp/engine.yaml" --listen homa://127.0.0.1:0 --duration 0.1
