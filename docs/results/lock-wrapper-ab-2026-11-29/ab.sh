#!/bin/bash
# A/B: before = wt-rooms (cd6e419, no lock wrapper), after = main
set -u
B=/work/wt-rooms/build/src/tools/wharf; A=/work/main/build/src/tools/wharf
row() { # bin proto mode
  "$1" bench throughput --path loopback --proto "$2" --mode "$3" --in-flight 32 --duration 3s --rounds 1 --no-goodput --no-progress --json /tmp/ab/b.json >/dev/null 2>/tmp/ab/err || { cat /tmp/ab/err; return; }
  python3 -c 'import json;r=json.load(open("/tmp/ab/b.json"))["paths"][0]["rpc"][0];print(int(r["rpc_per_sec"]), r["p50_us"], r.get("p99_us"))'
}
for i in 1 2 3 4 5 6; do
  for pm in "homa embedded" "tcp embedded" "homa managed"; do
    for t in before after; do
      bin=$B; [[ $t == after ]] && bin=$A
      echo "$i $t $pm $(row $bin $pm)"
    done
  done
  for t in before after; do
    bin=$B; [[ $t == after ]] && bin=$A
    echo "$i $t baseline $($bin bench baseline --proto udp,wharf --mode poll --iterations 30000 2>/dev/null | grep "^ratio" | sed "s/.*p50 //")"
  done
done
