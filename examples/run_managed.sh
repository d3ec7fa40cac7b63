#!/usr/bin/env bash
# Runs the examples in managed mode: starts a wharfd on a temporary socket and
# loopback ports, points the examples at it with WHARF_SOCKET (their
# endpoints use the default Hosting::kAuto, so they attach), checks that each
# succeeds, and that wharfd saw them attach. Always stops wharfd and removes
# its directory. The kv example is run when the optional fourth argument is
# "kv" (it is built only with typed RPCs).
#   run_managed.sh WHARFD WHARF EXAMPLES_DIR [kv]
set -euo pipefail
wharfd="$1" wharf="$2" examples="$3" with_kv="${4:-}"
dir="$(mktemp -d /tmp/wharf-examples-XXXXXX)"
daemon_pid=""
cleanup() {
  [[ -n "$daemon_pid" ]] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
export WHARF_SOCKET="$dir/wharfd.sock"
"$wharfd" --set listen.homa=127.0.0.1:0 --set listen.tcp= --set http.listen= --log-level warn &
daemon_pid=$!
for _ in $(seq 200); do [[ -S "$WHARF_SOCKET" ]] && break; sleep 0.05; done
[[ -S "$WHARF_SOCKET" ]] || { echo "wharfd did not start"; exit 1; }

run() {
  echo "== $*"
  timeout 60 "$@" || { echo "FAILED (managed): $*"; exit 1; }
}
run "$examples/rpc_echo" --count 3
run "$examples/messages"
run "$examples/async_epoll" --calls 100
run "$examples/barrier" --rank 0 --members homa://127.0.0.1:0 --rounds 3
# rpc_echo, messages and async_epoll open two endpoints each, barrier one.
expected=7
if [[ "$with_kv" == kv ]]; then
  run "$examples/kv" demo
  expected=$((expected + 2))  # kv demo: a server and a client endpoint
fi
attached=$("$wharf" status --json | sed -E 's/.*"applications_attached":([0-9]+).*/\1/')
echo "wharfd saw $attached attaches"
if (( attached < expected )); then
  echo "expected the examples to attach to wharfd at least $expected times"; exit 1
fi
echo "all examples passed in managed mode"
