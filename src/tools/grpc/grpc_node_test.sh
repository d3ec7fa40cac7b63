#!/usr/bin/env bash
# Test driver for wharf-grpc-node (src/tools/grpc/CMakeLists.txt): starts a
# --serve-only server on 127.0.0.1 (any port, read from its first line),
# runs a client against it, and stops the server, whatever happens.
#   grpc_node_test.sh NODE throughput|open-loop WORKDIR
set -euo pipefail
node="$1" mode="$2" dir="$3"
rm -rf "$dir" && mkdir -p "$dir"
# The server bounds its own life too (--duration), should this script die.
# Its first line, once it listens, names the port: read it from the pipe
# (no polling), with a 10 s bound.
exec 3< <(exec "$node" --serve-only --listen 127.0.0.1:0 --duration 40s 2>&1)
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
if ! read -r -t 10 line <&3 || [[ "$line" != *"listening on port "* ]]; then
  echo "server did not start: ${line:-}"; cat <&3; exit 1
fi
port="${line##*listening on port }"
port="${port%%,*}"
case "$mode" in
  throughput)
    "$node" --throughput 32 --size 64 --target "127.0.0.1:$port" --duration 2s ;;
  open-loop)
    # Host 0 sends to host 1 (the server above); its own server binds any port.
    "$node" --host 0 --peers "127.0.0.1:0,127.0.0.1:$port" --workload w1 --load 0.5 \
      --link-rate 100mbit --duration 1s --linger 0s --seed 3 --out "$dir/h0.samples"
    "$node" --check-samples "$dir/h0.samples" ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
kill -TERM "$server"
cat <&3  # the server's last words, up to its exit
