#!/usr/bin/env bash
# profile_loop.sh SCHEDC CACHE_DIR BACKEND [RUNTIME FLAGS...]: the loop profile -> solve -> run on
# one backend. `schedc profile --write` must change the spec's cost block and nothing else; the
# written costs must solve; the solved schedule must run and pass --check; the report must give a
# measured and a simulated makespan in the same unit (the block states its costs in us).
set -euo pipefail
schedc=$1
cache=$2
backend=$3
shift 3
export SCHEDC_CACHE_DIR=$cache
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
spec=$tmp/loop.sched
cat > "$spec" <<'SPEC'
# The profile loop's spec: costs start as guesses and are replaced by measurements.
ranks = 3
microbatches = 6
cost { F = 1  B = 1  W = 1 }   # guesses
memory { cap = 6 }
schedule = solve { time_limit = 10  deterministic = true }
runtime { hidden = 48  layers = 2  batch = 8  seed = 3 }
SPEC
cp "$spec" "$tmp/before.sched"

echo "== schedc profile --backend $backend --write"
"$schedc" profile "$spec" --backend "$backend" --write "$@" | tee "$tmp/block.txt"
grep -q '^cost {$' "$spec" || { echo "profile_loop: no multi-line cost block in the spec" >&2; exit 1; }
grep -q "measured by \`schedc profile\` on $backend, mlp" "$spec" || { echo "profile_loop: the block does not say how it was measured" >&2; exit 1; }
# Everything outside the cost block is byte for byte what it was.
strip() { awk '/^cost \{/ { skip = 1 } !skip { print } skip && /\}/ { skip = 0 }' "$1"; }
diff <(strip "$tmp/before.sched") <(strip "$spec") || { echo "profile_loop: --write changed more than the cost block" >&2; exit 1; }
# The block printed is the block written (the comment after the old block's brace stays).
[[ "$(cat "$spec")" == *"$(cat "$tmp/block.txt")   # guesses"* ]] || { echo "profile_loop: printed and written blocks differ" >&2; exit 1; }

echo "== schedc schedule --solve with the measured costs"
"$schedc" schedule "$spec" --quiet --format json > "$tmp/schedule.json"
grep -q '"ranks"' "$tmp/schedule.json"

echo "== schedc run --check on $backend"
out=$("$schedc" run "$spec" --backend "$backend" --check --format json --quiet "$@")
echo "$out"
echo "$out" | grep -q '"ok": true' || { echo "profile_loop: the run is not ok" >&2; exit 1; }
measured=$(echo "$out" | sed -n 's/.*"measured_makespan_s": \([^,]*\),.*/\1/p')
simulated=$(echo "$out" | sed -n 's/.*"simulated_makespan": \([^,]*\),.*/\1/p')
awk -v m="$measured" -v s="$simulated" 'BEGIN {
  if (!(m > 0 && s > 0)) exit 1
  printf "measured makespan %.1f us, simulated %.1f us (measured / simulated %.2f)\n", m * 1e6, s, m * 1e6 / s
}'
