#!/usr/bin/env bash
# check_run.sh SCHEDC CACHE_DIR ARGS...: `schedc run ARGS --check --format json` must exit 0 and
# report ok, with the gradients within 1e-12 (relative) of the sequential reference.
set -u
schedc=$1
cache=$2
shift 2
out=$(SCHEDC_CACHE_DIR=$cache timeout 250 "$schedc" run "$@" --check --format json)
code=$?
echo "$out"
if [ $code -ne 0 ]; then
  echo "check_run: \`schedc run $* --check\` exited with $code" >&2
  exit 1
fi
if ! echo "$out" | grep -q '"ok": true'; then
  echo "check_run: the report is not ok" >&2
  exit 1
fi
rel=$(echo "$out" | sed -n 's/.*"max_rel_grad_diff": \([^,]*\),.*/\1/p')
if ! awk -v r="$rel" 'BEGIN { exit !(r != "" && r != "null" && r + 0 <= 1e-12) }'; then
  echo "check_run: max_rel_grad_diff is \`$rel\`, expected at most 1e-12" >&2
  exit 1
fi
