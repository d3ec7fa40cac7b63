#!/usr/bin/env bash
# Checks that the public headers (INCLUDE_DIR/wharf/*.h) expose only what an
# application uses (DESIGN.md §2: include/wharf/ holds nothing internal and
# no third-party types):
#   1. no header mentions core() (Endpoint's old accessor of its internals);
#   2. every #include is another public header ("wharf/...") or a standard
#      library header (<name>, no directory, no extension): none is a path
#      under SRC_DIR, nor a third-party or system header;
#   3. no public member of a class or struct at namespace level names an
#      internal:: type. Internal types may appear in forward declarations, in
#      `friend` lines and in private or protected members (a pimpl's pointer,
#      a constructor only internal::PublicAccess calls).
# The checks read lines, which suits these headers' Google style (top-level
# classes open at column 0, their access labels at column 1).
#   check_public_headers.sh INCLUDE_DIR SRC_DIR
# Prints one line per problem, FILE:LINE: what; exits 1 if there was any.
set -euo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: $0 INCLUDE_DIR SRC_DIR" >&2
  exit 2
fi
include_dir="$1" src_dir="$2"
shopt -s nullglob
headers=("$include_dir"/wharf/*.h)
if [[ ${#headers[@]} -eq 0 ]]; then
  echo "check_public_headers: no headers in $include_dir/wharf" >&2
  exit 2
fi
# The module directories under src/, as a regex alternation: base|client|...
modules="$(find "$src_dir" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort | paste -sd'|')"
if [[ -z "$modules" ]]; then
  echo "check_public_headers: no module directories in $src_dir" >&2
  exit 2
fi

problems=0
report() {  # report FILE LINE WHAT
  echo "$(basename "$1"):$2: $3"
  problems=$((problems + 1))
}

for h in "${headers[@]}"; do
  # 1. core()
  while IFS=: read -r line _; do
    report "$h" "$line" "mentions core()"
  done < <(grep -nE '\bcore[[:space:]]*\([[:space:]]*\)' "$h" || true)

  # 2. includes
  while IFS=: read -r line text; do
    if [[ "$text" =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\"([^\"]*)\" ]]; then
      path="${BASH_REMATCH[1]}"
      if [[ "$path" =~ ^($modules)/ ]]; then
        report "$h" "$line" "includes a path under src/: \"$path\""
      elif [[ ! "$path" =~ ^wharf/[A-Za-z0-9_]+\.h$ ]]; then
        report "$h" "$line" "includes a header that is not public: \"$path\""
      fi
    elif [[ "$text" =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\<([^\>]*)\> ]]; then
      path="${BASH_REMATCH[1]}"
      if [[ ! "$path" =~ ^[a-z_]+$ ]]; then
        report "$h" "$line" "includes a non-standard header: <$path>"
      fi
    else
      report "$h" "$line" "an #include this check cannot read: $text"
    fi
  done < <(grep -nE '^[[:space:]]*#[[:space:]]*include' "$h" || true)

  # 3. internal:: types in public members. Tracks the access of the
  # current top-level class: `class` starts private, `struct` public.
  while IFS=: read -r line _; do
    report "$h" "$line" "a public member names an internal type"
  done < <(awk '
    /^(class|struct) [A-Za-z_][A-Za-z0-9_]*[^;]*$/ {
      in_class = 1; access = ($1 == "class") ? "private" : "public"; next
    }
    in_class && /^};/ { in_class = 0; next }
    in_class && /^ (public|private|protected):/ { access = $1; sub(":", "", access); next }
    /internal::/ {
      if ($0 ~ /^[[:space:]]*friend[[:space:]]/) next
      if (!in_class || access == "public") print NR ":"
    }' "$h")
done

if [[ $problems -gt 0 ]]; then
  echo "check_public_headers: $problems problem(s) in $include_dir/wharf"
  exit 1
fi
echo "check_public_headers: ${#headers[@]} headers expose no internals"
