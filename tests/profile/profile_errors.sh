#!/usr/bin/env bash
# profile_errors.sh SCHEDC CACHE_DIR: `schedc profile --write` refuses what it cannot do, with a
# located or named diagnostic and a non-zero exit, and leaves files alone.
# shellcheck disable=SC2016  # the patterns hold backticks, not expansions
set -uo pipefail
schedc=$1
export SCHEDC_CACHE_DIR=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
expect() {  # expect CODE PATTERN ARGS...
  local code=$1 pattern=$2
  shift 2
  out=$("$schedc" "$@" 2>&1)
  got=$?
  if [ "$got" -ne "$code" ] || ! grep -qE -- "$pattern" <<< "$out"; then
    echo "profile_errors: \`schedc $*\` exited $got (expected $code) with:" >&2
    echo "$out" >&2
    fail=1
  fi
}
printf 'ranks = 2\nmicrobatches = 2\nschedule = family 1f1b\n' > "$tmp/a.sched"
cp "$tmp/a.sched" "$tmp/orig.sched"
"$schedc" schedule "$tmp/a.sched" > "$tmp/a.json"
expect 1 'error: --write updates the cost block of a .sched spec; give one \[unsupported\]' profile "$tmp/a.json" --write
expect 2 '--write measures the spec.s own problem: drop the problem flags' profile "$tmp/a.sched" --write --pp 4
expect 1 'cannot read `.*missing.sched`' profile "$tmp/missing.sched" --write
printf 'ranks = 2\nmicrobatches = two\n' > "$tmp/bad.sched"
expect 1 'bad.sched:2:16: error: `microbatches` needs an integer' profile "$tmp/bad.sched" --write
expect 1 'dtype `bf16` needs backend `cuda`' profile "$tmp/a.sched" --dtype bf16
cmp -s "$tmp/a.sched" "$tmp/orig.sched" || { echo "profile_errors: a refused --write changed the spec" >&2; fail=1; }
exit $fail
