#!/usr/bin/env bash
# Test driver for wharf-grpc-node (src/bench/grpc/CMakeLists.txt): two nodes
# on loopback, host 0 on 127.0.0.1 and host 1 on 127.0.0.2, then checks each
# client's summary line (completed > 0, failed 0) and sample file.
#   grpc_node_test.sh NODE unloaded|loaded WORKDIR [SERVER_API [PROTO]]
# PROTO homa-typed: wharf's generated code on the same echo.proto.
set -euo pipefail
node="$1" mode="$2" dir="$3" api="${4:-async}" proto="${5:-grpc}"
rm -rf "$dir" && mkdir -p "$dir"
# A port of this run's own (gRPC listens with SO_REUSEPORT, so a clash with
# another test would not fail the bind but mix the servers).
port=$((20000 + $$ % 20000))
common=(--addresses 127.0.0.1,127.0.0.2 --port "$port" --workload w1 --link-rate 20mbit
        --server-api "$api" --proto "$proto")
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT
case "$mode" in
  unloaded)
    # The server bounds its own life too (--duration), should this script die.
    "$node" --host 1 "${common[@]}" --threads 0 --duration 40s --out "$dir/h1.bin" \
      > "$dir/h1.out" &
    pids+=($!)
    # The client's connection waits for the server (no polling needed).
    "$node" --host 0 "${common[@]}" --unloaded --peer 1 --threads 1 --per-size 3 \
      --out "$dir/h0.bin" > "$dir/h0.out"
    clients=(0) ;;
  loaded)
    start=$(( $(date +%s%N) + 1000000000 ))
    for h in 0 1; do
      "$node" --host "$h" "${common[@]}" --load 0.3 --threads 1 --start-at "$start" \
        --duration 1s --drain 1s --out "$dir/h$h.bin" > "$dir/h$h.out" &
      pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
    clients=(0 1) ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
for h in "${clients[@]}"; do
  cat "$dir/h$h.out"
  python3 - "$dir/h$h.out" "$dir/h$h.bin" "$proto" <<'PY'
import json, os, sys
line = [l for l in open(sys.argv[1]) if l.startswith("summary ")][-1]
s = json.loads(line[len("summary "):])
assert s["proto"] == sys.argv[3], s
assert s["completed"] > 0 and s["failed"] == 0 and s["unfinished"] == 0, s
data = open(sys.argv[2], "rb").read()
assert data[:8] == b"WBCSMP01", data[:8]
assert (len(data) - 8) == 24 * s["completed"], (len(data), s["completed"])
PY
done
echo "grpc node test ok ($proto)"
