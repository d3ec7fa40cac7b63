#!/bin/sh
# WharfCli.BenchClusterLoadRun: a 2-host, 5-second `wharf bench cluster` with
# homa (embedded) and both kernel baselines, and short throughput rows (1 s,
# 1 and 8 in flight), then checks that results.json holds every series with
# samples and every series' throughput rows with RPCs, that the throughput
# table was printed and that the PNG was drawn. Exit 77 (skipped) when the
# command is (not root).
#   cluster_smoke_test.sh WHARF OUT_DIR
set -u
wharf="$1" out="$2"
rm -rf "$out"
mkdir -p "$out" || exit 1
"$wharf" bench cluster --hosts 2 --duration 5s --link-rate 1gbit --workload w4 \
  --proto homa,kernel-udp,kernel-tcp --mode embedded --unloaded-per-size 5 \
  --throughput-duration 1s --throughput-in-flight 1,8 --no-progress --out "$out" \
  > "$out/stdout.txt"
rc=$?
cat "$out/stdout.txt"
[ "$rc" -eq 77 ] && exit 77
[ "$rc" -eq 0 ] || { echo "wharf bench cluster exited $rc"; exit 1; }
python3 - "$out/results.json" "$out/stdout.txt" <<'PY' || exit 1
import json, re, sys
doc = json.load(open(sys.argv[1]))
labels = {s["label"]: s for s in doc["series"]}
for want in ("homa embedded", "kernel-udp", "kernel-tcp"):
    assert want in labels, f"series {want} missing: {sorted(labels)}"
    assert labels[want]["count"] > 0, f"series {want} has no samples"
assert doc["run"]["hosts"] == 2
# The defaults: responses echo the request, messages cut at Homa's 1 MB.
assert doc["run"]["response_size"] == 0, doc["run"]
assert doc["run"]["max_message"] == 1000000, doc["run"]
# Without the old 65 kB skip, kernel-udp carries the largest messages too.
meta = {m["label"]: m for m in doc["series_meta"]}
assert "udp_max_message_bytes" not in doc["run"]
for want in ("kernel-udp", "kernel-tcp"):
    assert meta[want]["completed"] > 0, f"{want}: nothing completed"
rows = {(r["label"], r["in_flight"]): r for r in doc["throughput"]}
for label in ("homa embedded", "kernel-udp", "kernel-tcp"):
    for n in (1, 8):
        r = rows.get((label, n))
        assert r, f"throughput row {label} {n} missing: {sorted(rows)}"
        assert r["rpcs"] > 0 and r["rpc_per_sec"] > 0, f"throughput row {label} {n}: {r}"
        assert r["client"]["max_in_flight"] <= n, f"throughput row {label} {n}: {r}"
        assert r["cpu_includes"] == ["client node h0", "server node h1"], r
text = open(sys.argv[2]).read()
assert "RPC throughput, 64 B, host 0 -> host 1" in text, "no throughput table"
table = text[text.index("RPC throughput, 64 B"):]
assert re.search(r"^homa embedded +8 +[1-9][0-9]* ", table, re.M), "no homa 8 in flight row"
assert re.search(r"^kernel-udp +1 +[1-9][0-9]* ", table, re.M), "no kernel-udp 1 in flight row"
print("results.json: series", sorted(labels), "with",
      [labels[l]["count"] for l in sorted(labels)], "samples;",
      len(rows), "throughput rows")
PY
[ -s "$out/slowdown.png" ] || { echo "no $out/slowdown.png"; exit 1; }
echo "smoke run ok"
