#!/usr/bin/env bash
# exact_ticks.sh SCHEDC: values finer than a microsecond are exact, never rounded into another
# verdict (issue 29, item 1; docs/dsl.md): the issue's commands, each of which gave a false figure
# or a false claim when the finest tick was 1e-6.
set -u
schedc=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "exact_ticks: $*" >&2; exit 1; }

# Memory in micro-units under a cap: the same optimum (39) as in whole units, the peak exact
# (4.2e-06, three forwards), not 33 with a peak of 4e-06.
"$schedc" schedule --solve --time-limit 2 --threads 1 --deterministic --pp 4 -m 8 --backward fused \
  --memory F=1.4e-6,cap=4.3e-6 -o "$dir/micro.json" 2> "$dir/err" || { cat "$dir/err" >&2; fail "the micro-unit solve failed"; }
"$schedc" schedule --solve --time-limit 2 --threads 1 --deterministic --pp 4 -m 8 --backward fused \
  --memory F=1.4,cap=4.3 -o "$dir/whole.json" 2> "$dir/err" || { cat "$dir/err" >&2; fail "the whole-unit solve failed"; }
out=$("$schedc" verify "$dir/micro.json" --optimal 2>&1) || fail "verify --optimal failed: $out"
whole=$("$schedc" verify "$dir/whole.json" 2>&1) || fail "verify failed: $whole"
echo "$out" | grep -q 'makespan 39, peak memory 4.2e-06' || fail "micro-units: $out"
echo "$whole" | grep -q 'makespan 39, peak memory 4.2$' || fail "whole units: $whole"

# A family whose peak (5.6e-06) is above the cap is refused, not passed at 5e-06.
cat > "$dir/capped.sched" <<'SPEC'
ranks = 4
microbatches = 8
backward = fused
memory { F = 1.4e-6  cap = 5e-6 }
schedule = family 1f1b
expect { peak_memory <= 5e-6 }
SPEC
"$schedc" verify "$dir/capped.sched" > "$dir/out" 2>&1 && fail "1f1b over its cap passed: $(cat "$dir/out")"
grep -q 'needs a memory cap of at least `5.6e-06`' "$dir/out" || fail "capped: $(cat "$dir/out")"

# Costs: 1.5e-6 beside 1 is timed exactly; 1e-7 is not zero.
"$schedc" simulate --family 1f1b --pp 4 -m 8 --cost F=1.5e-6,B=1,W=1 > "$dir/out" 2>&1 || fail "simulate failed"
grep -q '^makespan  *22.0000165$' "$dir/out" || fail "F=1.5e-6: $(head -1 "$dir/out")"
"$schedc" simulate --family 1f1b --pp 4 -m 8 --cost F=1e-7,B=1e-7,W=1e-7 > "$dir/out" 2>&1 || fail "simulate failed"
grep -q '^makespan  *3.3e-06$' "$dir/out" || fail "F=1e-7: $(head -1 "$dir/out")"

# A value no tick holds is the flag's error (exit 2), naming the value.
"$schedc" simulate --family 1f1b --pp 4 -m 8 --cost F=1e-16 > "$dir/out" 2>&1
rc=$?
[ "$rc" -eq 2 ] || fail "--cost F=1e-16 exited $rc: $(cat "$dir/out")"
grep -q -- '--cost: the time value 1e-16 cannot be timed exactly.*\[bad-flag\]' "$dir/out" || fail "F=1e-16: $(cat "$dir/out")"
echo "exact_ticks: ok"
