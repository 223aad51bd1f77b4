#!/usr/bin/env bash
# progress_pipe.sh SCHEDC: with stderr a pipe, a solve prints a progress line at least every
# second (docs/solver.md), also while a phase runs without news. A 4 s solve that cannot be proved
# optimal (the lower bound stays below the best schedule) must print at least 3 lines; before the
# fix it printed 2 (the first incumbent and the final line). Progress never reaches stdout.
set -u
schedc=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "progress_pipe: $*" >&2; cat "$dir/err" >&2; exit 1; }
# stderr through a pipe into cat; stdout to a file.
{ timeout 120 "$schedc" schedule --solve --pp 4 -m 16 --vpp 2 --backward split --cost F=1,B=1.3,W=0.7,comm=0.35 \
    --memory cap=7 --time-limit 4 --threads 1 2>&1 >"$dir/out.json" | cat > "$dir/err"; } || true
grep -q '"format": "schedc.schedule"' "$dir/out.json" || fail "no schedule written"
grep -q 'solve:' "$dir/out.json" && fail "progress went to stdout"
lines=$(grep -c '^solve: ' "$dir/err")
grep -q $'\r' "$dir/err" && fail "a terminal's carriage returns on a pipe"
[ "$lines" -ge 3 ] || fail "$lines progress lines in a 4 s solve, expected at least 3"
echo "progress_pipe: ok ($lines lines in a 4 s solve)"
