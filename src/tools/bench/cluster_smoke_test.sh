#!/bin/sh
# WharfCli.BenchClusterLoadRun: a 2-host, 5-second `wharf bench cluster` with
# homa (embedded) and both kernel baselines, then checks that results.json
# holds every series with samples and that the PNG was drawn. Exit 77
# (skipped) when the command is (not root).
#   cluster_smoke_test.sh WHARF OUT_DIR
set -u
wharf="$1" out="$2"
rm -rf "$out"
"$wharf" bench cluster --hosts 2 --duration 5s --link-rate 1gbit --workload w4 \
  --proto homa,kernel-udp,kernel-tcp --mode embedded --unloaded-per-size 5 --no-progress --out "$out"
rc=$?
[ "$rc" -eq 77 ] && exit 77
[ "$rc" -eq 0 ] || { echo "wharf bench cluster exited $rc"; exit 1; }
python3 - "$out/results.json" <<'PY' || exit 1
import json, sys
doc = json.load(open(sys.argv[1]))
labels = {s["label"]: s for s in doc["series"]}
for want in ("homa embedded", "kernel-udp", "kernel-tcp"):
    assert want in labels, f"series {want} missing: {sorted(labels)}"
    assert labels[want]["count"] > 0, f"series {want} has no samples"
assert doc["run"]["hosts"] == 2
# Without the old 65 kB skip, kernel-udp carries the largest messages too.
meta = {m["label"]: m for m in doc["series_meta"]}
assert "udp_max_message_bytes" not in doc["run"]
for want in ("kernel-udp", "kernel-tcp"):
    assert meta[want]["completed"] > 0, f"{want}: nothing completed"
print("results.json: series", sorted(labels), "with",
      [labels[l]["count"] for l in sorted(labels)], "samples")
PY
[ -s "$out/slowdown.png" ] || { echo "no $out/slowdown.png"; exit 1; }
echo "smoke run ok"
