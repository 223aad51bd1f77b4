#!/usr/bin/env bash
# install_test.sh BUILD_DIR SCHEDC: `cmake --install` gives a schedrt package that emitted code
# finds with find_package and builds with -Wall -Wextra -Werror; emitting twice gives identical
# files; the build tree is a package too.
set -eu
build=$1
schedc=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > /dev/null
config=$(find "$tmp/prefix" -name schedrtConfig.cmake | head -n 1)
[ -n "$config" ] || { echo "install_test: no schedrtConfig.cmake installed" >&2; exit 1; }
"$schedc" emit --family zb-v --pp 4 --vpp 2 --microbatches 8 -o "$tmp/src"
"$schedc" emit --family zb-v --pp 4 --vpp 2 --microbatches 8 -o "$tmp/again"
diff -r "$tmp/src" "$tmp/again" || { echo "install_test: emitting twice gave different files" >&2; exit 1; }
cmake -S "$tmp/src" -B "$tmp/b" -Dschedrt_DIR="$(dirname "$config")" \
  -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror" > /dev/null
cmake --build "$tmp/b" > "$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }
"$tmp/b/executor" --check
cmake -S "$tmp/src" -B "$tmp/b2" -Dschedrt_DIR="$build/runtime" > /dev/null
# `schedc build -o BIN` gives a standalone executable (the spec's runtime block as its defaults).
printf 'ranks = 2\nmicrobatches = 4\nschedule = family 1f1b\nruntime { dtype = fp32  hidden = 16 }\n' > "$tmp/small.sched"
SCHEDC_CACHE_DIR="$tmp/cache" "$schedc" build "$tmp/small.sched" -o "$tmp/small"
"$tmp/small" --check --format json | grep -q '"dtype": "fp32"'
