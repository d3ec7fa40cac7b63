#!/bin/sh
# WharfCli.Bench*ShortRun: a short `wharf bench baseline`, then checks its
# JSON: every row named was measured (all iterations, no timeout, no time
# limit hit, its server exited 0), its percentiles are ordered and
# positive, its CPU was measured, and the ratio lines were printed. A smoke
# run judges no performance target (a short run on a shared CI machine
# says nothing about one): `wharf bench` is where targets are judged.
#   baseline_smoke_test.sh WHARF OUT_DIR "ROW;ROW;..." "RATIO;RATIO;..." ARGS...
#   e.g. ROW "wharf-managed block 64 B", RATIO "ratio wharf-managed / wharf block 64 B"
set -u
wharf="$1" out="$2" rows="$3" ratios="$4"
shift 4
rm -rf "$out"
mkdir -p "$out" || exit 1
"$wharf" bench baseline "$@" --no-progress --json "$out/baseline.json" > "$out/stdout.txt" 2>&1
rc=$?
cat "$out/stdout.txt"
[ "$rc" -eq 0 ] || { echo "wharf bench baseline exited $rc"; exit 1; }
python3 - "$out/baseline.json" "$out/stdout.txt" "$rows" "$ratios" <<'PY' || exit 1
import json, re, sys
doc = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
rows = {r["name"]: r for r in doc["pingpong"]}
for name in [n for n in sys.argv[3].split(";") if n]:
    r = rows.get(name)
    assert r, f"row {name!r} missing: {sorted(rows)}"
    assert r["count"] == doc["iterations"], (name, r["count"], doc["iterations"])
    assert r["timeouts"] == 0 and not r["hit_time_limit"], r
    assert r["server_exit"] == "exit code 0", r
    assert 0 < r["min_ns"] <= r["p50_ns"] <= r["p99_ns"] <= r["max_ns"], r
    assert r["round_trips_per_sec"] > 0 and r["cpu_ns_per_round_trip"] > 0, r
for ratio in [n for n in sys.argv[4].split(";") if n]:
    m = re.search(re.escape(ratio) + r": p50 ([0-9.]+)x, p99 ([0-9.]+)x", text)
    assert m, f"no line {ratio!r}"
    assert float(m.group(1)) > 0 and float(m.group(2)) > 0, m.group(0)
print("baseline smoke run ok")
PY
