#!/usr/bin/env bash
# interrupt_solve.sh SCHEDC: Ctrl-C during `schedule --solve` (issue: limits that hold).
#   One SIGINT (or SIGTERM) in each phase of the search (constructive sweep, Z3, local search)
#   ends the solve within a few seconds, writes the best schedule found with status `feasible`
#   and `interrupted` in its provenance, says so on stderr and exits 0.
#   A second signal ends schedc at once (killed by it) and leaves no output file, partial or not.
set -u
schedc=$1
dir=$(mktemp -d)
# Only this shell removes it: a watchdog subshell killed before it reaches `sleep` runs the EXIT
# trap too (CI once saw stderr's file vanish before it was read).
trap '[ "$BASHPID" = "$$" ] && rm -rf "$dir"' EXIT
fail() { echo "interrupt_solve: $*" >&2; [ -f "$dir/err" ] && cat "$dir/err" >&2; exit 1; }

# A problem no phase finishes early: bidirectional, a binding cap, a 16 % gap after a minute.
spec() {  # spec NAME SOLVE-OPTIONS
  cat > "$dir/$1.sched" <<SPEC
ranks = 8
microbatches = 32
direction = bidirectional
backward = split
cost { F = 2  B = 2  W = 1  comm = 0.1 }
memory { F = 1  B = -0.5  W = -0.5  cap = 8 }
schedule = solve { time_limit = 600 $2 }
SPEC
}
spec sweep ""
spec z3 "greedy = false  local = false"
spec local "greedy = false  z3 = false"

now_ms() { date +%s%3N; }

for phase in sweep z3 local; do
  for sig in INT TERM; do
    rm -f "$dir/out.json" "$dir/err"
    "$schedc" schedule "$dir/$phase.sched" -o "$dir/out.json" 2> "$dir/err" &
    pid=$!
    sleep 2
    kill -0 $pid 2> /dev/null || fail "$phase: the solve ended before the signal (it should run for 600 s)"
    sent=$(now_ms)
    kill -$sig $pid
    # A watchdog: never wait on a hang.
    ( sleep 20; kill -KILL $pid 2> /dev/null ) &
    dog=$!
    wait $pid
    code=$?
    took=$(( $(now_ms) - sent ))
    kill $dog 2> /dev/null; wait $dog 2> /dev/null
    [ $code -eq 0 ] || fail "$phase, SIG$sig: exit $code (expected 0 after one signal)"
    [ $took -le 5000 ] || fail "$phase, SIG$sig: took ${took} ms after the signal (limit 5000)"
    [ -f "$dir/out.json" ] || fail "$phase, SIG$sig: no schedule written"
    grep -q '"status": *"feasible"\|\\"status\\": *\\"feasible\\"' "$dir/out.json" || fail "$phase, SIG$sig: status is not feasible"
    grep -q 'interrupted' "$dir/out.json" || fail "$phase, SIG$sig: provenance does not say interrupted"
    grep -q 'schedc: interrupted: the search ended early' "$dir/err" || fail "$phase, SIG$sig: stderr does not say so"
    "$schedc" verify "$dir/out.json" > /dev/null 2>&1 || fail "$phase, SIG$sig: the written schedule does not verify"
    echo "interrupt_solve: $phase, SIG$sig: exit 0, ${took} ms, schedule written"
  done
done

# Twice: abort at once, nothing written. Two signals of one kind sent back to back merge into one
# (POSIX does not queue them), and the solve may finish between two sent apart; so schedc is
# stopped, gets SIGINT and SIGTERM, and is continued: both arrive before it runs on.
rm -f "$dir/out.json" "$dir/err"
"$schedc" schedule "$dir/local.sched" -o "$dir/out.json" 2> "$dir/err" &
pid=$!
sleep 2
kill -STOP $pid; kill -INT $pid; kill -TERM $pid; kill -CONT $pid
( sleep 20; kill -KILL $pid 2> /dev/null ) &
dog=$!
wait $pid
code=$?
kill $dog 2> /dev/null; wait $dog 2> /dev/null
# Killed by whichever of the two was handled second: 130 (SIGINT) or 143 (SIGTERM).
[ $code -eq 130 ] || [ $code -eq 143 ] || fail "twice: exit $code (expected 130 or 143, killed by the second signal)"
grep -q 'interrupted again: aborting' "$dir/err" || fail "twice: stderr does not say it aborted"
ls "$dir" | grep -q 'out.json' && fail "twice: an output file was left: $(ls "$dir")"
echo "interrupt_solve: twice: killed by the second signal, no output file"
exit 0
