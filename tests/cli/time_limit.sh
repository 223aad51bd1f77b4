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

# Under a short limit no SAT model or relaxation model is built that could not be built in time
# (their builds cannot be interrupted by the clock: a 70k-literal model took 2 s at a 0.3 s limit).
timeout 120 "$schedc" schedule --solve --pp 6 -m 24 --direction bidirectional --backward split \
  --cost F=2,B=2,W=1,comm=0.1 --memory F=1,B=-0.5,W=-0.5,cap=6 --time-limit 0.3 --threads 1 --debug \
  -o "$dir/short.json" 2> "$dir/err" || { echo "time_limit: the 0.3 s solve failed" >&2; cat "$dir/err" >&2; exit 1; }
grep -q '^debug: model of about [0-9]* literals not built' "$dir/err" &&
  grep -q '^debug: relaxation model of about [0-9]* literals not built' "$dir/err" &&
  ! grep -q '^debug: model (estimate' "$dir/err" ||
  { echo "time_limit: a 0.3 s solve built a SAT model it had no time for" >&2; grep '^debug: .*model' "$dir/err" >&2; exit 1; }
echo "time_limit: ok (no model built under a 0.3 s limit)"

# A Z3 window begun before the deadline ends by it: its model is built only where the building
# fits half of what is left, and its timeout is set once the model is built (issue 29, item 2: a
# 2 s limit took 2.7 s, a 5 s limit 5.7 s). 0.5 s of slack, 1.5 s in a sanitizer build (slower).
slack_ms=500
grep -q __asan_init "$schedc" && slack_ms=1500
start_ms=$(date +%s%3N)
timeout 120 "$schedc" schedule --solve --threads 1 --time-limit 2 --pp 16 -m 64 --cost F=2,B=2,W=1,comm=0.5 \
  --memory cap=6 -o "$dir/window.json" 2> "$dir/err" || { echo "time_limit: the windows solve failed" >&2; cat "$dir/err" >&2; exit 1; }
took_ms=$(( $(date +%s%3N) - start_ms ))
if [ "$took_ms" -gt $(( 2000 + slack_ms )) ]; then
  echo "time_limit: a 2 s limit took $took_ms ms (windows past the deadline)" >&2; cat "$dir/err" >&2; exit 1
fi
echo "time_limit: ok ($took_ms ms for a 2 s limit with Z3 windows)"

# Whatever the limit, the answer is at least a native family that fits (issue 29, item 3): at
# pp 128, m 256 the bound alone takes longer than a 0.01 s limit, and the answer was the sequential
# schedule (gap 99 %); zb-h1 meets the bound.
timeout 120 "$schedc" schedule --solve --threads 1 --time-limit 0.01 --pp 128 -m 256 -o "$dir/floor.json" \
  2> "$dir/err" || { echo "time_limit: the 0.01 s solve failed" >&2; cat "$dir/err" >&2; exit 1; }
grep -q '"found_by": *"zb-h1"' "$dir/floor.json" ||
  { echo "time_limit: a 0.01 s solve at pp 128 did not return zb-h1" >&2; grep -o '"found_by": *"[^"]*"' "$dir/floor.json" >&2; exit 1; }
echo "time_limit: ok (a 0.01 s limit at pp 128 returns zb-h1)"
