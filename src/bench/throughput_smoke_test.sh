#!/bin/sh
# WharfCli.BenchThroughput*Run: a short `wharf bench throughput` on one path
# (homa and tcp embedded, 1 and 4 in flight for 300 ms, 64 KiB goodput for
# 1 s, two rounds), then checks the JSON: both rounds are there, every RPC
# row and goodput row has a positive rate and CPU, 4 in flight never
# exceeded, the iperf3 baseline ran (or says why not), the cross-CPU copy
# probe ran around each round (when pinned) and the tables were printed. Exit 77 (skipped) when the command
# is (--path veth without root).
#   throughput_smoke_test.sh WHARF OUT_DIR PATH
set -u
wharf="$1" out="$2" path="$3"
rm -rf "$out"
mkdir -p "$out" || exit 1
"$wharf" bench throughput --path "$path" --proto homa,tcp --mode embedded --in-flight 1,4 \
  --duration 300ms --goodput-size 65536 --goodput-seconds 1 --rounds 2 --no-progress \
  --json "$out/throughput.json" > "$out/stdout.txt"
rc=$?
cat "$out/stdout.txt"
[ "$rc" -eq 77 ] && exit 77
[ "$rc" -eq 0 ] || { echo "wharf bench throughput exited $rc"; exit 1; }
python3 - "$out/throughput.json" "$out/stdout.txt" "$path" <<'PY' || exit 1
import json, sys
doc = json.load(open(sys.argv[1]))
path = sys.argv[3]
assert [p["path"] for p in doc["paths"]] == [path], doc["paths"]
p = doc["paths"][0]
assert not p["errors"], p["errors"]
# Two rounds, each with every row; the rows reported are their medians.
assert doc["plan"]["rounds"] == 2 and len(p["rounds"]) == 2, p["rounds"]
for rnd in p["rounds"]:
    assert len(rnd["rpc"]) == 4 and len(rnd["goodput"]) == 2, rnd
rows = {(r["label"], r["in_flight"]): r for r in p["rpc"]}
for label in ("homa embedded", "tcp embedded"):
    for n in (1, 4):
        r = rows.get((label, n))
        assert r, f"RPC row {label} {n} missing: {sorted(rows)}"
        assert r["rpcs"] > 0 and r["rpc_per_sec"] > 0, r
        assert r["client"]["max_in_flight"] <= n, r
        assert r["bytes"] == 64 and r["cpu_ns_per_rpc"] > 0, r
        assert r["vs_grpc"]["ratio"] is None, r  # no grpc series in this run
good = {r["label"]: r for r in p["goodput"]}
for label in ("homa embedded", "tcp embedded"):
    r = good.get(label)
    assert r, f"goodput row {label} missing: {sorted(good)}"
    assert r["bytes"] == 65536 and r["client"]["response_bytes"] == 1, r
    assert r["goodput_bits_per_second"] > 0 and r["cpu_ms_per_mib"] > 0, r
    assert r["vs_iperf3"]["target"] > 0, r
    # The client's transport counters ride along (cluster-node summary).
    counters = r["client"].get("counters", {})
    sent_key = "homa.data_sent" if label.startswith("homa") else "tcp.bytes_sent"
    assert counters.get(sent_key, 0) > 0, (sent_key, sorted(counters)[:20])
iperf3 = p["iperf3"]
assert iperf3 is not None, "no iperf3 entry"
if "error" not in iperf3:
    assert iperf3["received_bits_per_second"] > 0, iperf3
    assert good["homa embedded"]["vs_iperf3"]["ratio"] > 0, good
    assert len(good["homa embedded"]["vs_iperf3"]["rounds"]) == 2, good
# Pinned to two CPUs: the machine's copy rate before and after each round.
if doc["plan"]["pinned"]:
    probes = p["cross_cpu_copy_gbit_per_sec"]
    assert len(probes) == 4 and all(g > 0 for g in probes), probes
text = open(sys.argv[2]).read()
assert f"path {path}:" in text and "RPC throughput, 64 B" in text and "Goodput, 65536 B" in text, text
assert "median of 2 rounds" in text, text
print("throughput.json:", len(rows), "RPC rows,", len(good), "goodput rows, iperf3",
      iperf3.get("received_bits_per_second", iperf3.get("error")))
PY
echo "throughput smoke run ok"
