#!/usr/bin/env bash
# warm_start.sh SCHEDC: `--warm-start FILE` starts the solver from a schedule's orders (schedule
# JSON, torch-csv, a spec's explicit orders), re-timed under the problem solved: a tighter cap's
# answer warm-starts a looser cap's solve, which is never worse; the answer may replace the warm
# start's own file; a schedule of another shape, a file without orders, or the flag without a solve
# is an error that writes nothing.
set -u
schedc=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "warm_start: $*" >&2; [ -f "$dir/err" ] && cat "$dir/err" >&2; exit 1; }
makespan() { sed -n 's/.*"makespan": \([0-9.e+-]*\).*/\1/p' "$1" | head -1; }
problem=(--pp 6 -m 24 --direction bidirectional --backward split)
costs=F=2,B=2,W=1,comm=0.1
mem=F=1,B=-0.5,W=-0.5

"$schedc" schedule --solve "${problem[@]}" --cost $costs --memory $mem,cap=6 --time-limit 2 --deterministic -q \
  -o "$dir/tight.json" 2> "$dir/err" || fail "the solve at cap 6"
tight=$(makespan "$dir/tight.json")
[ -n "$tight" ] || fail "no makespan in the cap-6 schedule"
cp "$dir/tight.json" "$dir/best.json"
# A looser cap, warm-started with the tighter cap's answer: never worse than it.
"$schedc" schedule --solve "${problem[@]}" --cost $costs --memory $mem,cap=9 --time-limit 2 --deterministic -q \
  --warm-start "$dir/tight.json" -o "$dir/best.json" 2> "$dir/err" || fail "the warm-started solve at cap 9"
loose=$(makespan "$dir/best.json")
awk -v a="$loose" -v b="$tight" 'BEGIN { exit !(a <= b + 1e-9) }' ||
  fail "cap 9 warm-started with cap 6's $tight gave a worse $loose"
# The answer replaces its own warm start (it is never worse than it).
"$schedc" schedule --solve "${problem[@]}" --cost $costs --memory $mem,cap=9 --time-limit 1 --deterministic -q \
  --warm-start "$dir/best.json" -o "$dir/best.json" 2> "$dir/err" || fail "-o onto the warm start"
again=$(makespan "$dir/best.json")
awk -v a="$again" -v b="$loose" 'BEGIN { exit !(a <= b + 1e-9) }' || fail "improving in place gave a worse $again"
# torch-csv orders (one direction) are warm starts too, re-timed under other costs.
"$schedc" schedule --family zb-h1 --pp 4 -m 8 -o "$dir/zb.csv" --format torch-csv 2> "$dir/err" || fail "torch-csv"
"$schedc" schedule --solve --pp 4 -m 8 --cost F=3,B=2,W=1 --time-limit 1 --deterministic -q \
  --warm-start "$dir/zb.csv" -o "$dir/csv.json" 2> "$dir/err" || fail "a torch-csv warm start"

# Errors: exit 1 (or 2 for flags), the file named, nothing written.
expect_error() {  # CODE KIND ARGS...
  local code=$1 kind=$2
  shift 2
  rm -f "$dir/out.json"
  "$schedc" schedule "$@" -q -o "$dir/out.json" 2> "$dir/err"
  local rc=$?
  [ "$rc" -eq "$code" ] || fail "exit $rc, not $code, for: $*"
  grep -q "\[$kind\]" "$dir/err" || fail "no [$kind] error for: $*"
  [ ! -e "$dir/out.json" ] || fail "an output was written for: $*"
}
expect_error 1 bad-value --solve --pp 6 -m 12 --time-limit 1 --warm-start "$dir/tight.json"
grep -q "tight.json: error: this warm start is a schedule of another problem: microbatches 24, not 12" "$dir/err" ||
  fail "the shape error does not name the file and the difference"
expect_error 2 bad-flag --family 1f1b --pp 6 -m 24 --warm-start "$dir/tight.json"
printf 'ranks = 6\nmicrobatches = 24\n' > "$dir/no-orders.sched"
expect_error 1 no-schedule --solve "${problem[@]}" --time-limit 1 --warm-start "$dir/no-orders.sched"
expect_error 1 io --solve "${problem[@]}" --time-limit 1 --warm-start "$dir/missing.json"
echo "warm_start: ok"
