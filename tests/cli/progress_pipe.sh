#!/usr/bin/env bash
# progress_pipe.sh SCHEDC: with stderr a pipe, a solve prints a progress line at least every
# second (docs/solver.md), also while a phase runs without news. A 4 s solve that cannot be proved
# optimal (the lower bound stays below the best schedule) must print at least 3 lines; before the
# fix it printed 2 (the first incumbent and the final line). Progress never reaches stdout.
set -u
schedc=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
. "$(dirname "$0")/../common/prelude.sh"
# stderr through a pipe into cat; stdout to a file.
{ timeout 120 "$schedc" schedule --solve --pp 4 -m 16 --vpp 2 --backward split --cost F=1,B=1.3,W=0.7,comm=0.35 \
    --memory cap=7 --time-limit 4 --threads 1 2>&1 >"$tmp/out.json" | cat > "$tmp/err"; } || true
grep -q '"format": "schedc.schedule"' "$tmp/out.json" || fail "no schedule written"
grep -q 'solve:' "$tmp/out.json" && fail "progress went to stdout"
lines=$(grep -c '^solve: ' "$tmp/err")
grep -q $'\r' "$tmp/err" && fail "a terminal's carriage returns on a pipe"
[ "$lines" -ge 3 ] || fail "$lines progress lines in a 4 s solve, expected at least 3"
echo "progress_pipe: ok ($lines lines in a 4 s solve)"
