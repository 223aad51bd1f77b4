#!/usr/bin/env bash
# warm_start.sh SCHEDC: `--warm-start FILE` starts the solver from a schedule's orders (schedule
# JSON, torch-csv, a spec's explicit orders), re-timed under the problem solved: a tighter cap's
# answer warm-starts a looser cap's solve, which is never worse; the answer may replace the warm
# start's own file; a schedule of another shape, a file without orders, or the flag without a solve
# is an error that writes nothing.
set -u
schedc=$1
. "$(dirname "$0")/../common/prelude.sh"
makespan() { sed -n 's/.*"makespan": \([0-9.e+-]*\).*/\1/p' "$1" | head -1; }
problem=(--pp 6 -m 24 --direction bidirectional --backward split)
costs=F=2,B=2,W=1,comm=0.1
mem=F=1,B=-0.5,W=-0.5

"$schedc" schedule --solve "${problem[@]}" --cost $costs --memory $mem,cap=6 --time-limit 2 --deterministic -q \
  -o "$tmp/tight.json" 2> "$tmp/err" || fail "the solve at cap 6"
tight=$(makespan "$tmp/tight.json")
[ -n "$tight" ] || fail "no makespan in the cap-6 schedule"
cp "$tmp/tight.json" "$tmp/best.json"
# A looser cap, warm-started with the tighter cap's answer: never worse than it.
"$schedc" schedule --solve "${problem[@]}" --cost $costs --memory $mem,cap=9 --time-limit 2 --deterministic -q \
  --warm-start "$tmp/tight.json" -o "$tmp/best.json" 2> "$tmp/err" || fail "the warm-started solve at cap 9"
loose=$(makespan "$tmp/best.json")
awk -v a="$loose" -v b="$tight" 'BEGIN { exit !(a <= b + 1e-9) }' ||
  fail "cap 9 warm-started with cap 6's $tight gave a worse $loose"
# The answer replaces its own warm start (it is never worse than it).
"$schedc" schedule --solve "${problem[@]}" --cost $costs --memory $mem,cap=9 --time-limit 1 --deterministic -q \
  --warm-start "$tmp/best.json" -o "$tmp/best.json" 2> "$tmp/err" || fail "-o onto the warm start"
again=$(makespan "$tmp/best.json")
awk -v a="$again" -v b="$loose" 'BEGIN { exit !(a <= b + 1e-9) }' || fail "improving in place gave a worse $again"
# torch-csv orders (one direction) are warm starts too, re-timed under other costs.
"$schedc" schedule --family zb-h1 --pp 4 -m 8 -o "$tmp/zb.csv" --format torch-csv 2> "$tmp/err" || fail "torch-csv"
"$schedc" schedule --solve --pp 4 -m 8 --cost F=3,B=2,W=1 --time-limit 1 --deterministic -q \
  --warm-start "$tmp/zb.csv" -o "$tmp/csv.json" 2> "$tmp/err" || fail "a torch-csv warm start"

# Errors: exit 1 (or 2 for flags), the file named, nothing written.
expect_error() {  # CODE KIND ARGS...
  local code=$1 kind=$2
  shift 2
  rm -f "$tmp/out.json"
  expect_exit "$code" "[$kind]" "$schedc" schedule "$@" -q -o "$tmp/out.json"
  [ ! -e "$tmp/out.json" ] || fail "an output was written for: $*"
}
expect_error 1 bad-value --solve --pp 6 -m 12 --time-limit 1 --warm-start "$tmp/tight.json"
grep -q "tight.json: error: this warm start is a schedule of another problem: microbatches 24, not 12" "$tmp/err" ||
  fail "the shape error does not name the file and the difference"
expect_error 2 bad-flag --family 1f1b --pp 6 -m 24 --warm-start "$tmp/tight.json"
printf 'ranks = 6\nmicrobatches = 24\n' > "$tmp/no-orders.sched"
expect_error 1 no-schedule --solve "${problem[@]}" --time-limit 1 --warm-start "$tmp/no-orders.sched"
expect_error 1 io --solve "${problem[@]}" --time-limit 1 --warm-start "$tmp/missing.json"
echo "warm_start: ok"
