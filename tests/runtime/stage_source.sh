#!/usr/bin/env bash
# stage_source.sh SCHEDC CACHE_DIR BLOCK_CPP: `--stage-source` and its mistakes, each with its exit
# code and message: a compile error is a build failure naming the user's file (exit 1); a --stage
# that the sources do not register is a bad command line listing what is registered (exit 2), as
# is --check on a stage without a reference; a runtime block's unknown stage is reported at its
# location (exit 1); a stage registered twice stops the executor with both names (exit 1); the
# executor lists what is compiled in (--list-stages); changing a stage source rebuilds; a source
# named other than .cpp is compiled as C++.
set -u
schedc=$1
cache=$2
block=$3
. "$(dirname "$0")/../common/prelude.sh"
export SCHEDC_CACHE_DIR=$cache
printf 'ranks = 2\nmicrobatches = 2\nschedule = family 1f1b\nruntime { hidden = 8  batch = 4  layers = 1 }\n' > "$tmp/s.sched"

# expect CODE TEXT ARGS...: `schedc ARGS` exits CODE with TEXT (a fixed string) on stderr.
expect() { expect_exit "$1" "$2" "$schedc" "${@:3}"; }

# A compile error: the compiler's message, naming the user's file.
printf '#include "schedrt/stage.h"\nint broken( {\n' > "$tmp/broken.cpp"
expect 1 "broken.cpp:2:" run "$tmp/s.sched" --stage-source "$tmp/broken.cpp" --stage broken
grep -qF "compiling \`$tmp/broken.cpp\` failed" "$tmp/err" || { cat "$tmp/err" >&2; fail "the failure does not name the source"; }

# A name the sources do not register.
expect 2 'schedc: error: --stage: no stage `blok` is registered; registered stages: `mlp`, `synthetic`, `noop`, `block`; the --stage-source files register no stage of that name [bad-flag]' \
  run "$tmp/s.sched" --stage-source "$block" --stage blok --check
# Without sources, before building anything.
expect 2 'schedc: error: --stage: no stage `block` is registered; registered stages: `mlp`, `synthetic`, `noop` (a stage of your own is compiled in with `--stage-source FILE`) [bad-flag]' \
  run "$tmp/s.sched" --stage block
# A runtime block's stage, at its location.
printf 'ranks = 2\nmicrobatches = 2\nschedule = family 1f1b\nruntime { stage = blok }\n' > "$tmp/r.sched"
expect 1 'r.sched:4:19: error: no stage `blok` is registered; registered stages: `mlp`, `synthetic`, `noop`, `block`' \
  run "$tmp/r.sched" --stage-source "$block"
expect 1 'r.sched:4:19: error: no stage `blok` is registered' build "$tmp/r.sched" -o "$tmp/r"

# A stage without a reference: --check refused (exit 2), a plain run works.
cat > "$tmp/plain.cpp" <<'CPP'
#include <memory>
#include "schedrt/stage.h"
namespace {
class Plain final : public schedrt::Stage {
 public:
  size_t boundary_bytes() const override { return 16; }
  void forward(int32_t, const void*, void*) override {}
  void backward_input(int32_t, const void*, void*) override {}
  void backward_weight(int32_t) override {}
};
std::unique_ptr<schedrt::Stage> make(const schedrt::StageConfig&, int32_t, const schedrt::StageEnv&) {
  return std::make_unique<Plain>();
}
}  // namespace
SCHEDRT_REGISTER_STAGE(plain, .description = "does nothing, with 16-byte messages", .make = make);
CPP
expect 2 'schedc: error: --check: stage `plain` (from --stage) has no sequential reference to compare with, its StageInfo says has_reference = false; stages with one: `mlp`, `block`' \
  run "$tmp/s.sched" --stage-source "$tmp/plain.cpp" --stage-source "$block" --stage plain --check
"$schedc" run "$tmp/s.sched" --stage-source "$tmp/plain.cpp" --stage plain > "$tmp/out" 2>&1 ||
  { cat "$tmp/out" >&2; fail "a plain run of a stage without a reference failed"; }
grep -q 'stage plain' "$tmp/out" || { cat "$tmp/out" >&2; fail "the report does not name the stage"; }

# A stage source whose name does not say C++ (`plain.txt`) is compiled as C++ all the same, not
# handed to the linker as an object file it is not.
cp "$tmp/plain.cpp" "$tmp/plain.txt"
"$schedc" run "$tmp/s.sched" --stage-source "$tmp/plain.txt" --stage plain > "$tmp/out" 2>&1 ||
  { cat "$tmp/out" >&2; fail "a stage source named plain.txt failed"; }
grep -q 'stage plain' "$tmp/out" || { cat "$tmp/out" >&2; fail "the report of plain.txt's stage does not name it"; }

# `schedc build`: the executor lists what is compiled in; the built executor runs the stage.
"$schedc" build "$tmp/s.sched" --stage-source "$block" --stage block -o "$tmp/ex" || fail "schedc build --stage-source failed"
"$tmp/ex" --list-stages > "$tmp/list" || fail "--list-stages failed"
grep -q '^block  *host  *reference  *pre-norm transformer block' "$tmp/list" || { cat "$tmp/list" >&2; fail "--list-stages lacks block"; }
grep -q '^synthetic  *no  *-' "$tmp/list" || { cat "$tmp/list" >&2; fail "--list-stages lacks synthetic"; }
"$tmp/ex" --check > "$tmp/out" || { cat "$tmp/out" >&2; fail "the built executor's default stage (block) failed --check"; }
grep -q 'stage block (fp64, hidden 8, layers 1, batch 4)' "$tmp/out" || { cat "$tmp/out" >&2; fail "the report lacks the stage"; }

# Registered twice (here: the same file twice): the executor refuses to start, schedc says why.
mkdir -p "$tmp/copy" && cp "$block" "$(dirname "$block")/block.h" "$tmp/copy/"
expect 1 'stage `block` is registered twice' run "$tmp/s.sched" --stage-source "$block" --stage-source "$tmp/copy/block.cpp" --stage block

# The sources' content is part of the cache key: an edit rebuilds.
cp "$tmp/plain.cpp" "$tmp/edit.cpp"
"$schedc" build "$tmp/s.sched" --stage-source "$tmp/edit.cpp" --stage plain -o "$tmp/e1" || fail "build e1"
sed -i 's/return 16;/return 32;/' "$tmp/edit.cpp"
"$schedc" build "$tmp/s.sched" --stage-source "$tmp/edit.cpp" --stage plain -o "$tmp/e2" || fail "build e2"
cmp -s "$tmp/e1" "$tmp/e2" && fail "editing a stage source did not rebuild the executor"
echo "stage_source: ok"
