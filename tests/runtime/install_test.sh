#!/usr/bin/env bash
# install_test.sh BUILD_DIR SCHEDC: installing after a partial build (only schedc and schedrt, as
# scripts/demo builds) gives a schedrt package that emitted code finds with find_package and
# builds with -Wall -Wextra -Werror; the installed schedc builds executors against the installed
# headers and library, not the tree it was built from; emitting twice gives identical files; the
# build tree is a package too.
set -eu
build=$(cd "$1" && pwd)
schedc=$2
. "$(dirname "$0")/../common/prelude.sh"

# The partial build: a copy of the build tree's install scripts that sees, of what the build
# makes, only the outputs of the targets schedc and schedrt (executables and libraries of other
# targets are left out; what CMake wrote at configure time, such as the package files, is kept).
# `cmake --install` runs exactly these scripts.
root=$(sed -n 's/^CMAKE_CACHEFILE_DIR:INTERNAL=//p' "$build/CMakeCache.txt")
partial=$tmp/partial
scripts=$(cd "$root" && find . -name cmake_install.cmake)
for f in $scripts; do
  mkdir -p "$partial/$(dirname "$f")"
  sed "s|\"$root/|\"$partial/|g" "$root/$f" > "$partial/$f"
done
(cd "$root" && grep -ho "\"$root/[^\"\$]*\"" $scripts) | tr -d '"' | sort -u | while read -r p; do
  rel=${p#"$root"/}
  case $rel in
    runtime/libschedrt.a | tools/schedc/schedc) ;;  # what the partial build made
    */cmake_install.cmake | *.a | *.so | *.so.*) continue ;;
    *) if [ -f "$p" ] && [ -x "$p" ]; then continue; fi ;;  # another target's executable
  esac
  [ -e "$p" ] || continue
  mkdir -p "$(dirname "$partial/$rel")"
  cp "$p" "$partial/$rel"
done
prefix=$tmp/prefix
cmake -DCMAKE_INSTALL_PREFIX="$prefix" -P "$partial/cmake_install.cmake" > "$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log" >&2; fail "installing after a build of only schedc and schedrt failed"; }
config=$(find "$prefix" -name schedrtConfig.cmake | head -n 1)
[ -n "$config" ] || fail "no schedrtConfig.cmake installed"
[ -x "$prefix/bin/schedc" ] || fail "no bin/schedc installed"

"$schedc" emit --family zb-v --pp 4 --vpp 2 --microbatches 8 -o "$tmp/src"
"$schedc" emit --family zb-v --pp 4 --vpp 2 --microbatches 8 -o "$tmp/again"
diff -r "$tmp/src" "$tmp/again" || fail "emitting twice gave different files"
cmake -S "$tmp/src" -B "$tmp/b" -Dschedrt_DIR="$(dirname "$config")" \
  -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror" > /dev/null
cmake --build "$tmp/b" > "$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }
"$tmp/b/executor" --check
cmake -S "$tmp/src" -B "$tmp/b2" -Dschedrt_DIR="$build/runtime" > /dev/null
# `schedc build -o BIN` gives a standalone executable (the spec's runtime block as its defaults).
printf 'ranks = 2\nmicrobatches = 4\nschedule = family 1f1b\nruntime { dtype = fp32  hidden = 16 }\n' > "$tmp/small.sched"
SCHEDC_CACHE_DIR="$tmp/cache" "$schedc" build "$tmp/small.sched" -o "$tmp/small"
"$tmp/small" --check --format json | grep -q '"dtype": "fp32"'

# The installed schedc compiles against <prefix>/include and links <prefix>/lib/libschedrt.a,
# though the source and build trees it came from are still there.
"$prefix/bin/schedc" build "$tmp/small.sched" -o "$tmp/small-installed" --cache-dir "$tmp/cache-installed" --verbose \
  2> "$tmp/verbose.log" || { cat "$tmp/verbose.log" >&2; fail "the installed schedc cannot build"; }
grep -qF -- "-I $prefix/include " "$tmp/verbose.log" ||
  { cat "$tmp/verbose.log" >&2; fail "the installed schedc does not compile against $prefix/include"; }
grep -qF -- "$prefix/lib/libschedrt.a" "$tmp/verbose.log" ||
  { cat "$tmp/verbose.log" >&2; fail "the installed schedc does not link $prefix/lib/libschedrt.a"; }
if grep -qF -e "$build/runtime/" -e "/runtime/include" "$tmp/verbose.log"; then
  cat "$tmp/verbose.log" >&2
  fail "the installed schedc uses the source or build tree's runtime"
fi
"$tmp/small-installed" --check --format json | grep -q '"dtype": "fp32"'

# A stage of your own (examples/stages/block.cpp) built into the emitted executor from the user's
# own CMake project with the package's schedrt_add_executor, with -Werror, and trained with --check;
# the plain executor has no such stage and says which it has; schedrt_add_stage_sources refuses a
# static library (its registrars would be dropped); the installed schedc takes --stage-source.
src_root=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
block=$src_root/examples/stages/block.cpp
mkdir -p "$tmp/user"
cat > "$tmp/user/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.22)
project(user_training LANGUAGES CXX)
find_package(schedrt REQUIRED)
schedrt_add_executor(trainer GENERATED_DIR "$tmp/src" STAGE_SOURCES "$block")
CMAKE
cmake -S "$tmp/user" -B "$tmp/user/b" -Dschedrt_DIR="$(dirname "$config")" \
  -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror" > /dev/null || fail "configuring a project with schedrt_add_executor failed"
cmake --build "$tmp/user/b" > "$tmp/user.log" 2>&1 || { cat "$tmp/user.log"; fail "building the user's executor failed"; }
"$tmp/user/b/trainer" --list-stages | grep -q '^block ' || fail "the user's executor does not list the stage block"
"$tmp/user/b/trainer" --stage block --hidden 8 --batch 4 --layers 1 --check --format json > "$tmp/user.json" ||
  { cat "$tmp/user.json"; fail "the user's stage does not train with --check"; }
grep -q '"ok": true' "$tmp/user.json" && grep -q '"max_rel_grad_diff": 0,' "$tmp/user.json" ||
  { cat "$tmp/user.json"; fail "the user's stage does not match its sequential reference bit for bit"; }
set +e
"$tmp/b/executor" --stage block > /dev/null 2> "$tmp/nostage.log"
code=$?
set -e
[ $code -eq 2 ] && grep -qF -- '--stage needs one of `mlp`, `synthetic`, `noop`, got `block`' "$tmp/nostage.log" ||
  { cat "$tmp/nostage.log"; fail "an executor without the stage source accepts --stage block (exit $code)"; }
mkdir -p "$tmp/lib"
cat > "$tmp/lib/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.22)
project(user_lib LANGUAGES CXX)
find_package(schedrt REQUIRED)
add_library(stages STATIC "$block")
schedrt_add_stage_sources(stages "$block")
CMAKE
if cmake -S "$tmp/lib" -B "$tmp/lib/b" -Dschedrt_DIR="$(dirname "$config")" > "$tmp/lib.log" 2>&1; then
  fail "schedrt_add_stage_sources accepted a static library"
fi
grep -q "STATIC_LIBRARY; stage sources go" "$tmp/lib.log" || { cat "$tmp/lib.log"; fail "schedrt_add_stage_sources: no reason given"; }
"$prefix/bin/schedc" run "$tmp/small.sched" --stage-source "$block" --stage block --dtype fp64 --check \
  --cache-dir "$tmp/cache-installed" > "$tmp/installed-block.log" 2>&1 ||
  { cat "$tmp/installed-block.log"; fail "the installed schedc does not run --stage-source"; }
