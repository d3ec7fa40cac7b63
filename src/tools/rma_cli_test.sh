#!/bin/bash
# `wharf serve --lend-bytes` and `wharf rma` by hand, as the README shows
# them: a write read back byte for byte (as text and as a hex dump),
# compare-and-swap that does and does not swap, fetch-add, a write with
# immediate that the server reports, and the errors a user can make (past
# the end, a misaligned word, a server that lends nothing), then the same
# client through a wharfd (--mode managed). Over UCX's tcp
# on loopback (src/client/remote_memory_test.cc covers shared memory: both
# sides must agree on ucx.detect_peer_failure, or UCX refuses the pair).
# Usage: rma_cli_test.sh WHARF WORKDIR
set -u
wharf=$1
work=$2
rm -rf "$work" && mkdir -p "$work"
serve_pid=
daemon_pid=
cleanup() {
  [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null
  [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null
  wait 2>/dev/null
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- server log:"; cat "$work/serve.log"; exit 1; }

tcp=(--set ucx.tls=tcp --set ucx.devices=lo --timeout 10)
timeout 60 "$wharf" serve --listen ucx://127.0.0.1:0 --lend-bytes 4096 --mode embedded \
  "${tcp[@]::4}" --duration 50 >"$work/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 100); do
  grep -q "lending 4096 bytes" "$work/serve.log" 2>/dev/null && break
  sleep 0.1
done
if grep -q "this build has no UCX" "$work/serve.log"; then echo "no UCX in this build"; exit 77; fi
addr=$(sed -n 's/^listening on //p' "$work/serve.log")
[ -n "$addr" ] || fail "the server did not start"

rma() { timeout 20 "$wharf" rma "$@" "${tcp[@]}"; }
out=$(rma write "$addr" --offset 16 --data "hello, remote memory") || fail "write: $out"
grep -q "wrote 20 bytes at offset 16" <<<"$out" || fail "write said: $out"
out=$(rma read "$addr" --offset 16 --length 20) || fail "read: $out"
grep -qx "hello, remote memory" <<<"$out" || fail "read back: $out"
out=$(rma read "$addr" --offset 16 --length 5 --hex) || fail "hex read: $out"
grep -q "^000010  68 65 6c 6c 6f .*|hello|" <<<"$out" || fail "hex read: $out"
out=$(rma cas "$addr" --offset 64 --expected 0 --desired 7) || fail "cas: $out"
grep -q "was 0: now 7" <<<"$out" || fail "cas said: $out"
out=$(rma cas "$addr" --offset 64 --expected 0 --desired 9) || fail "second cas: $out"
grep -q "was 7, not 0: unchanged" <<<"$out" || fail "second cas said: $out"
out=$(rma add "$addr" --offset 64 --value 5) || fail "add: $out"
grep -q "was 7: now 12" <<<"$out" || fail "add said: $out"
out=$(rma write "$addr" --offset 128 --data x --immediate 42) || fail "immediate: $out"
for _ in $(seq 50); do grep -q "immediate 42 after a write of 1 bytes at offset 128" \
  "$work/serve.log" && break; sleep 0.1; done
grep -q "immediate 42 after a write of 1 bytes at offset 128" "$work/serve.log" ||
  fail "the server did not report the immediate"

# What a user gets wrong: a clear error and exit 1, never a hang.
out=$(rma write "$addr" --offset 4090 --data "too long" 2>&1) && fail "past the end succeeded"
grep -q "OUT_OF_RANGE" <<<"$out" || fail "past the end said: $out"
out=$(rma add "$addr" --offset 3 2>&1) && fail "a misaligned add succeeded"
grep -q "not 8-aligned" <<<"$out" || fail "misaligned add said: $out"
out=$(timeout 20 "$wharf" rma read ucx://127.0.0.1:1 --timeout 2 "${tcp[@]::4}" 2>&1) && fail "no server succeeded"
grep -q "is it a .wharf serve --lend-bytes N" <<<"$out" || fail "no server said: $out"

# Through a wharfd of the test's own: the client's bytes move between its
# shared heap and the server's block.
# Its own ports are any free ones (other tests run beside this one).
timeout 60 "$wharf" daemon --socket "$work/wharfd.sock" --set listen.homa=127.0.0.1:0 \
  --set listen.tcp= --set http.listen= "${tcp[@]::4}" >"$work/daemon.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do [ -S "$work/wharfd.sock" ] && break; sleep 0.1; done
[ -S "$work/wharfd.sock" ] || fail "wharfd did not start: $(cat "$work/daemon.log")"
managed=(--mode managed --socket "$work/wharfd.sock")
out=$(rma write "$addr" --offset 256 --data "through wharfd" "${managed[@]}") || fail "managed write: $out"
out=$(rma read "$addr" --offset 256 --length 14 "${managed[@]}") || fail "managed read: $out"
grep -qx "through wharfd" <<<"$out" || fail "managed read back: $out"
out=$(rma add "$addr" --offset 64 --value 1 "${managed[@]}") || fail "managed add: $out"
grep -q "was 12: now 13" <<<"$out" || fail "managed add said: $out"
echo "rma cli ok"
