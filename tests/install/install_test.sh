#!/usr/bin/env bash
# install_test.sh: installs a built wharf tree into a temporary prefix and
# uses it as an application would:
#   1. `cmake --install BUILD --prefix P`, then checks the layout (and that
#      nothing went outside P);
#   2. configures and builds examples/out_of_tree with CMake against P
#      (find_package(wharf), -DCMAKE_PREFIX_PATH=P) and runs it; when the
#      install has typed RPCs (protoc-gen-wharf among the programs), the
#      example generates its greeter.proto with the installed
#      wharf_generate_proto and protoc-gen-wharf, and its run must show the
#      generated stub's answer;
#   3. compiles the same main.cc with `CXX -std=c++20 $(pkg-config --cflags
#      --static --libs wharf)` (PKG_CONFIG_PATH into P) and runs that (the
#      plain build, without the generated code);
#   4. runs the installed programs' --help (protoc-gen-wharf, a protoc
#      plugin that takes no flags: an empty request on stdin instead).
# Every step has its own time limit, and all of them together stay within
# WHARF_INSTALL_TEST_BUDGET seconds (default 540, below the CTest TIMEOUT of
# 600, at which CTest would kill the script outright), so the script always
# reaches its cleanup: the temporary directory goes on every path, and
# the build tree's install_manifest.txt (which `cmake --install` rewrites) is
# put back as it was. Exit 77 (CTest SKIP_RETURN_CODE) only if cmake is
# missing. Needs no network.
#
# A tree configured for prefix /usr (or with absolute daemon directories)
# would put the daemon's files in /etc and /lib outside any --prefix; then
# the Daemon component is installed with DESTDIR into the temporary directory
# instead, so that the test never writes outside it.
#
# Usage: install_test.sh CMAKE BUILD_DIR SOURCE_DIR CXX GENERATOR VERSION
#          LIBDIR CONFDIR UNITDIR SYSUSERSDIR "PROGRAM;..."
# (directories as configured: relative to the prefix, or absolute)
set -uo pipefail

if [[ $# -ne 11 ]]; then
  echo "usage: $0 CMAKE BUILD_DIR SOURCE_DIR CXX GENERATOR VERSION LIBDIR CONFDIR" \
       "UNITDIR SYSUSERSDIR PROGRAMS" >&2
  exit 2
fi
cmake=$1 build=$2 source=$3 cxx=$4 generator=$5 version=$6 libdir=$7
confdir=$8 unitdir=$9 sysusersdir=${10}
IFS=';' read -r -a programs <<< "${11}"
typed=false
for p in "${programs[@]}"; do [[ "$p" == protoc-gen-wharf ]] && typed=true; done

if ! command -v "$cmake" >/dev/null 2>&1; then
  echo "install_test: SKIP: cmake ('$cmake') not found" >&2
  exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/wharf-install-test.XXXXXX") || exit 1
mkdir "$tmp/saved" || { rm -rf "$tmp"; exit 1; }
# `cmake --install` (re)writes BUILD/install_manifest*.txt, which a real
# install relies on for uninstalling: keep copies and put them back.
for m in "$build"/install_manifest*.txt; do
  [[ -e "$m" ]] && { cp -p "$m" "$tmp/saved/" || { rm -rf "$tmp"; exit 1; }; }
done
cleanup() {
  rm -f "$build"/install_manifest*.txt
  for m in "$tmp"/saved/install_manifest*.txt; do
    [[ -e "$m" ]] && cp -p "$m" "$build/"
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

prefix="$tmp/prefix"
log="$tmp/log"
step=""

fail() {
  echo "install_test: FAIL in $step: $*" >&2
  [[ -s "$log" ]] && { echo "--- output of $step:" >&2; tail -n 60 "$log" >&2; }
  exit 1
}

budget=${WHARF_INSTALL_TEST_BUDGET:-540}

# run SECONDS COMMAND...: runs the command with its output in $log, killed
# (and failing) after SECONDS or when the whole budget is spent.
run() {
  local limit=$1; shift
  local left=$((budget - SECONDS))
  [[ $left -le 0 ]] && fail "out of time (${budget}s) before: $*"
  [[ $left -lt $limit ]] && limit=$left
  timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1
  local rc=$?
  [[ $rc -eq 124 || $rc -eq 137 ]] && fail "timed out after ${limit}s: $*"
  [[ $rc -ne 0 ]] && fail "exit $rc: $*"
  return 0
}

expect_file() {
  [[ -f "$1" ]] || fail "missing ${1#"$prefix"/}"
}

# --- 1. install -------------------------------------------------------------
step="install"
manifests=("$build/install_manifest.txt")
daemon_root="$prefix"
if [[ "$confdir" == /* || "$unitdir" == /* || "$sysusersdir" == /* ]]; then
  daemon_root="$tmp/root$prefix"
  manifests=()
  for c in Development Runtime; do
    run 120 env -u DESTDIR "$cmake" --install "$build" --prefix "$prefix" --component $c
    manifests+=("$build/install_manifest_$c.txt")
  done
  run 120 env DESTDIR="$tmp/root" "$cmake" --install "$build" --prefix "$prefix" \
    --component Daemon
else
  run 120 env -u DESTDIR "$cmake" --install "$build" --prefix "$prefix"
fi
# daemon_file DIR NAME: where the Daemon component put NAME from DIR.
daemon_file() {
  if [[ "$1" == /* ]]; then echo "$tmp/root$1/$2"; else echo "$daemon_root/$1/$2"; fi
}
for h in buffer completion endpoint group result status build_info; do
  expect_file "$prefix/include/wharf/$h.h"
done
extra=$(find "$prefix/include" -type f ! -path "$prefix/include/wharf/*.h")
[[ -z "$extra" ]] || fail "headers outside include/wharf/: $extra"
# Applications link one library; no module archive is installed beside it.
lib="$prefix/$libdir"
expect_file "$lib/libwharf.a"
others=$(find "$tmp" -name 'lib*.a' ! -path "$lib/libwharf.a")
[[ -z "$others" ]] || fail "unexpected archives: $others"
for f in wharfConfig.cmake wharfConfigVersion.cmake wharfTargets.cmake; do
  expect_file "$lib/cmake/wharf/$f"
done
expect_file "$lib/pkgconfig/wharf.pc"
# Typed RPCs: the package brings wharf_generate_proto and knows the plugin.
if $typed; then
  expect_file "$lib/cmake/wharf/wharfGenerateProto.cmake"
  grep -qs 'wharf::protoc-gen-wharf' "$lib"/cmake/wharf/wharfTargets*.cmake ||
    fail "the CMake package does not export wharf::protoc-gen-wharf"
elif [[ -e "$lib/cmake/wharf/wharfGenerateProto.cmake" ]]; then
  fail "wharfGenerateProto.cmake installed without protoc-gen-wharf"
fi
for p in "${programs[@]}"; do
  [[ -x "$prefix/bin/$p" ]] || fail "missing program bin/$p"
done
expect_file "$(daemon_file "$confdir" wharfd.yaml)"
expect_file "$(daemon_file "$unitdir" wharfd.service)"
expect_file "$(daemon_file "$sysusersdir" wharf.conf)"
# Everything installed without DESTDIR went into the prefix.
for m in "${manifests[@]}"; do
  [[ -f "$m" ]] || fail "cmake --install wrote no ${m##*/}"
  outside=$(grep -v "^$prefix/" "$m")
  [[ -z "$outside" ]] || fail "installed outside the prefix: $outside"
done
grep -qx "$lib/pkgconfig/wharf.pc" "${manifests[@]}" || fail "wharf.pc is in no install manifest"

# --- 2. CMake: find_package(wharf) ------------------------------------------
step="cmake configure of examples/out_of_tree"
app="$tmp/app"
run 180 "$cmake" -S "$source/examples/out_of_tree" -B "$app" -G "$generator" \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
found=$(sed -n 's/^wharf_DIR:PATH=//p' "$app/CMakeCache.txt")
[[ "$found" == "$lib/cmake/wharf" ]] || fail "find_package(wharf) used '$found', not the install"
step="cmake build of examples/out_of_tree"
run 300 "$cmake" --build "$app"
if $typed; then
  # The installed plugin generated the greeter, through the installed function.
  [[ -f "$app/wharf_proto/wharf_app/greeter.wharf.h" ]] ||
    fail "wharf_generate_proto did not generate greeter.wharf.h"
  grep -rqsF -e "--plugin=protoc-gen-wharf=$prefix/bin/protoc-gen-wharf" "$app" \
    --include='*.ninja' --include='*.make' ||
    fail "the build did not run the installed protoc-gen-wharf"
fi
step="run of the CMake-built example"
run 60 "$app/wharf_app"
[[ "$(tail -n 1 "$log")" == "ok" ]] || fail "did not print ok"
grep -q "^wharf $version," "$log" || fail "build_info.h does not say version $version"
if $typed; then
  grep -qx "typed RPC: Hello, wharf_app!" "$log" || fail "the generated Greeter stub did not answer"
  grep -qx "typed stream: Hello #3, wharf_app!" "$log" || fail "the generated Greeter stream did not answer"
elif grep -q "^typed RPC:" "$log"; then
  fail "typed RPCs ran, but the install has no protoc-gen-wharf"
fi

# --- 3. pkg-config ------------------------------------------------------------
step="pkg-config"
export PKG_CONFIG_PATH="$lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
run 30 pkg-config --modversion wharf
[[ "$(cat "$log")" == "$version" ]] || fail "pkg-config --modversion wharf is not $version"
run 30 pkg-config --cflags --static --libs wharf
flags=$(cat "$log")
[[ " $flags " == *" -I$prefix/include "* ]] || fail "--cflags lacks -I$prefix/include: $flags"
[[ " $flags " == *" -L$lib "* ]] || fail "--libs lacks -L$lib: $flags"
step="compile with pkg-config flags"
# shellcheck disable=SC2086  # the flags are meant to split
run 300 "$cxx" -std=c++20 -o "$tmp/app_pc" "$source/examples/out_of_tree/main.cc" $flags
step="run of the pkg-config-built example"
run 60 "$tmp/app_pc"
[[ "$(tail -n 1 "$log")" == "ok" ]] || fail "did not print ok"
grep -q "^typed RPC:" "$log" && fail "the plain build ran the generated greeter"

# --- 4. the installed programs ------------------------------------------------
for p in "${programs[@]}"; do
  if [[ "$p" == protoc-gen-wharf ]]; then
    # protoc's PluginMain refuses every flag; an empty CodeGeneratorRequest
    # (no files) is answered with an empty response.
    step="bin/$p with an empty request"
    run 30 "$prefix/bin/$p" </dev/null
    continue
  fi
  step="bin/$p --help"
  run 30 "$prefix/bin/$p" --help
done

typed_text="no typed RPCs"
$typed && typed_text="typed RPCs through the installed wharf_generate_proto"
echo "install_test: ok (prefix layout, find_package, $typed_text, pkg-config --static," \
     "${programs[*]})"
