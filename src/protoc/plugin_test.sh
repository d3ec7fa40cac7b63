#!/bin/sh
# What protoc-gen-wharf refuses, as protoc reports it to a user: each bad
# file fails with a message naming the problem, and writes nothing.
#   plugin_test.sh PROTOC PLUGIN TESTDATA_DIR
set -u
protoc="$1" plugin="$2" data="$3"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
failures=0
expect_refusal() {  # FILE TEXT...
  file="$1"; shift
  if msg="$("$protoc" -I"$data" --plugin=protoc-gen-wharf="$plugin" --wharf_out="$out" "$data/$file" 2>&1)"; then
    echo "FAIL: $file was accepted"; failures=$((failures + 1)); return
  fi
  for text in "$@"; do
    case "$msg" in
      *"$text"*) ;;
      *) echo "FAIL: $file: expected '$text' in: $msg"; failures=$((failures + 1)) ;;
    esac
  done
  echo "ok: $file: $msg"
}
expect_refusal collide.proto "/wharf.test.Collide/M32060020 and /wharf.test.Collide/M29685295 share method id 0x16585540"
expect_refusal reserved.proto "/wharf.test.Reserved/R55684 hashes to method id 0xffff8997" "reserves"
expect_refusal clash.proto "wharf.test.Clash.AsyncGet: its generated name AsyncGet is taken" \
  "wharf.test.Clash.Register: its generated name Register is taken"
# An option it does not know.
if msg="$("$protoc" -I"$data" --plugin=protoc-gen-wharf="$plugin" --wharf_out=fast:"$out" "$data/rpc_test.proto" 2>&1)"; then
  echo "FAIL: an unknown option was accepted"; failures=$((failures + 1))
else
  case "$msg" in *"unknown option 'fast' (the one option is class_suffix=NAME)"*) echo "ok: option: $msg" ;;
    *) echo "FAIL: option: $msg"; failures=$((failures + 1)) ;; esac
fi
# class_suffix: the class is named with it (beside gRPC's own class).
if "$protoc" -I"$data" --plugin=protoc-gen-wharf="$plugin" --wharf_out=class_suffix=Wharf:"$out" "$data/rpc_test.proto" &&
   grep -q "^class TesterWharf final" "$out/rpc_test.wharf.h" &&
   grep -q "TesterWharf::Service::Register" "$out/rpc_test.wharf.cc"; then
  echo "ok: class_suffix"
else
  echo "FAIL: class_suffix=Wharf did not name the class TesterWharf"; failures=$((failures + 1))
fi
if msg="$("$protoc" -I"$data" --plugin=protoc-gen-wharf="$plugin" --wharf_out=class_suffix=a-b:"$out" "$data/rpc_test.proto" 2>&1)"; then
  echo "FAIL: a bad class_suffix was accepted"; failures=$((failures + 1))
else
  case "$msg" in *"class_suffix 'a-b' is not"*) echo "ok: bad suffix: $msg" ;;
    *) echo "FAIL: bad suffix: $msg"; failures=$((failures + 1)) ;; esac
fi
rm -f "$out"/rpc_test.*
# A good file: both outputs, and nothing for the refused ones.
"$protoc" -I"$data" --plugin=protoc-gen-wharf="$plugin" --wharf_out="$out" "$data/rpc_test.proto" || failures=$((failures + 1))
for f in rpc_test.wharf.h rpc_test.wharf.cc; do
  [ -s "$out/$f" ] || { echo "FAIL: no $f"; failures=$((failures + 1)); }
done
for f in collide reserved clash; do
  [ ! -e "$out/$f.wharf.h" ] || { echo "FAIL: $f.wharf.h was written"; failures=$((failures + 1)); }
done
[ "$failures" -eq 0 ] && echo "all refusals as expected"
exit "$failures"
