#!/usr/bin/env bash
# expect_failure.sh SCHEDC CACHE_DIR SECONDS PATTERN ARGS...: `schedc run ARGS` must exit non-zero
# within SECONDS, with PATTERN (a grep -E expression) on stderr. For the watchdog and for failures
# that must stop every rank: never a silent hang.
set -u
schedc=$1
cache=$2
limit=$3
pattern=$4
shift 4
err=$(mktemp)
trap 'rm -f "$err"' EXIT
start=$(date +%s)
SCHEDC_CACHE_DIR=$cache timeout $((limit + 30)) "$schedc" run "$@" > /dev/null 2> "$err"
code=$?
elapsed=$(( $(date +%s) - start ))
cat "$err"
if [ $code -eq 0 ]; then
  echo "expect_failure: \`schedc run $*\` succeeded" >&2
  exit 1
fi
if [ $code -eq 124 ] || [ $elapsed -gt "$limit" ]; then
  echo "expect_failure: \`schedc run $*\` took ${elapsed} s (limit ${limit} s)" >&2
  exit 1
fi
if ! grep -Eq "$pattern" "$err"; then
  echo "expect_failure: stderr does not match \`$pattern\`" >&2
  exit 1
fi
