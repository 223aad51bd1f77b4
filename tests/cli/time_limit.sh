#!/usr/bin/env bash
# time_limit.sh SCHEDC: the time limit holds at scale (issue 11, limits that hold). A solve of
# pp 256, m 512 (393 216 actions) under a binding cap and a 3 s limit took 126 s when every greedy
# instance closed same-rank reachability without a budget; a generous 60 s of slack is allowed
# here (sanitizer builds are slower), so only a phase that ignores the limit fails it.
set -u
schedc=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
start=$(date +%s)
timeout 300 "$schedc" schedule --solve --pp 256 -m 512 --backward split --memory cap=200 --time-limit 3 \
  -o "$dir/out.json" 2> "$dir/err"
rc=$?
took=$(( $(date +%s) - start ))
if [ "$rc" -ne 0 ]; then echo "time_limit: exit $rc" >&2; cat "$dir/err" >&2; exit 1; fi
if [ "$took" -gt 63 ]; then echo "time_limit: a 3 s limit took $took s" >&2; cat "$dir/err" >&2; exit 1; fi
grep -q '"status"' "$dir/out.json" || { echo "time_limit: no schedule written" >&2; exit 1; }
echo "time_limit: ok ($took s for a 3 s limit)"
