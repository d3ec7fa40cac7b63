#!/usr/bin/env bash
# serve_test.sh: `kv serve` in the background on a kernel-picked loopback
# port, then `kv put`, `kv get`, `kv delete`, `kv scan` and `kv watch`
# against it as a user types them, checking their output and exit codes,
# the server's limits included (small ones here: 2 keys, 16-byte values);
# last, SIGTERM stops the server cleanly. Every command is bounded with timeout, and the server also ends
# alone (--seconds) if this script is killed outright; on every other exit
# path the trap stops it and removes the temporary directory.
#   serve_test.sh KV
set -uo pipefail
kv="$1"
dir=$(mktemp -d "${TMPDIR:-/tmp}/wharf-kv-XXXXXX") || exit 1
server_pid=""
stop_server() {
  [[ -z "$server_pid" ]] && return 0
  kill -TERM "$server_pid" 2>/dev/null
  for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$server_pid" 2>/dev/null
  wait "$server_pid" 2>/dev/null
  local rc=$?
  server_pid=""
  return $rc
}
cleanup() {
  stop_server
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

fail() {
  echo "FAIL: $*"
  echo "--- kv serve's output:"; cat "$dir/server.log" 2>/dev/null
  exit 1
}

# kvrun EXIT ARGS...: runs `kv ARGS`, its stdout in $out and stderr in $err,
# and checks that it exits with EXIT.
kvrun() {
  local want=$1; shift
  timeout 10 "$kv" "$@" >"$dir/out" 2>"$dir/err"
  local rc=$?
  out=$(cat "$dir/out") err=$(cat "$dir/err")
  echo "\$ kv $*   (exit $rc)"
  [[ -n "$out" ]] && echo "$out"
  [[ -n "$err" ]] && echo "$err"
  [[ $rc -eq $want ]] || fail "kv $*: exit $rc, expected $want"
}
# expect TEXT WHAT: TEXT must occur in WHAT ($out or $err).
expect() {
  [[ "$2" == *"$1"* ]] || fail "expected '$1' in: $2"
}

timeout 90 "$kv" serve --listen homa://127.0.0.1:0 --max-keys 2 --max-value-bytes 16 \
  --seconds 80 >"$dir/server.log" 2>&1 &
server_pid=$!
addr=""
for _ in $(seq 100); do
  addr=$(sed -n 's/^listening on \([^ ]*\).*/\1/p' "$dir/server.log")
  [[ -n "$addr" ]] && break
  kill -0 "$server_pid" 2>/dev/null || fail "kv serve exited early"
  sleep 0.1
done
[[ -n "$addr" ]] || fail "kv serve did not say where it listens within 10 s"
echo "kv serve: $addr"
c=(--server "$addr")

kvrun 0 put "${c[@]}" greeting hello
expect "put 'greeting': version 1 (new key)" "$out"
kvrun 0 get "${c[@]}" greeting
[[ "$out" == hello ]] || fail "get printed '$out', expected 'hello'"
expect "version 1" "$err"
kvrun 0 put "${c[@]}" greeting "hello again"
expect "version 2 (replaced)" "$out"
kvrun 0 get "${c[@]}" greeting
[[ "$out" == "hello again" ]] || fail "get printed '$out', expected 'hello again'"

# The limits: a 17-byte value; a third key.
kvrun 1 put "${c[@]}" big 12345678901234567
expect "INVALID_ARGUMENT" "$err"
expect "over the limit of 16 bytes" "$err"
kvrun 0 put "${c[@]}" second 2
kvrun 1 put "${c[@]}" third 3
expect "RESOURCE_EXHAUSTED" "$err"
expect "the store is full (2 keys)" "$err"

# Scan: every key in order, then a prefix.
kvrun 0 scan "${c[@]}"
[[ "$out" == "'greeting' = 'hello again' (version 2)"$'\n'"'second' = '2' (version 3)" ]] ||
  fail "scan printed: $out"
expect "2 entries" "$err"
kvrun 0 scan "${c[@]}" sec
[[ "$out" == "'second' = '2' (version 3)" ]] || fail "scan sec printed: $out"

# Watch: the key's state, then the change a put makes while it watches.
timeout 20 "$kv" watch "${c[@]}" --events 2 --seconds 15 greeting >"$dir/watch.out" 2>&1 &
watch_pid=$!
for _ in $(seq 100); do [[ -s "$dir/watch.out" ]] && break; sleep 0.1; done
kvrun 0 put "${c[@]}" greeting watched
wait "$watch_pid" || fail "kv watch exited $?: $(cat "$dir/watch.out")"
echo "\$ kv watch greeting"; cat "$dir/watch.out"
[[ "$(cat "$dir/watch.out")" == "'greeting' = 'hello again' (version 2)"$'\n'"'greeting' = 'watched' (version 4)" ]] ||
  fail "kv watch printed: $(cat "$dir/watch.out")"

kvrun 0 delete "${c[@]}" greeting
expect "deleted 'greeting'" "$out"
kvrun 3 get "${c[@]}" greeting
expect "NOT_FOUND" "$err"
expect "no key 'greeting'" "$err"
kvrun 0 delete "${c[@]}" greeting
expect "'greeting' was not there" "$out"
# Bad usage: no key.
kvrun 2 get "${c[@]}"

stop_server || fail "kv serve did not exit 0 on SIGTERM"
grep -q '^stopped$' "$dir/server.log" || fail "kv serve did not say it stopped"
echo "kv serve and commands: ok"
