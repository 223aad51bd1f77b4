#!/usr/bin/env bash
# processes.sh SCHEDC EXAMPLES WITH_MPI: killing schedc during `run` or `build` (issue: processes and files).
#   SIGTERM during `run` (threads and mpi) or during `build`'s compiles: schedc ends by the signal
#   (exit 143) and no executor, mpiexec or compiler it started runs on; the interrupted build
#   leaves no `tmp-*` folder in the cache.
#   SIGKILL (no handler runs): the executor dies with schedc (parent-death signal), and the
#   `tmp-*` folder of a build killed so is removed by the next use of the cache, while that of a
#   live process stays.
# Processes are found by the unique cache folder in their command lines (schedc's own names the
# cache, not `cache/v1`).
set -u
schedc=$1
examples=$2
dir=$(mktemp -d)
cache=$dir/cache
pat="$cache/v1"
leftovers() { pgrep -f "$pat" 2> /dev/null; }
cleanup() {
  [ "$BASHPID" = "$$" ] || return 0  # a subshell (the watchdog) killed early runs the trap too
  for p in $(leftovers); do kill -KILL "$p" 2> /dev/null; done
  [ -n "${pid:-}" ] && kill -KILL "$pid" 2> /dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "processes: $*" >&2; [ -f "$dir/err" ] && cat "$dir/err" >&2; exit 1; }

# wait_until SECONDS COMMAND...: polls every 0.1 s.
wait_until() {
  local limit=$(( $1 * 10 )) i=0
  shift
  until "$@"; do
    i=$((i + 1))
    [ $i -ge $limit ] && return 1
    sleep 0.1
  done
}
running() { [ "$(pgrep -fc "$1" 2> /dev/null)" -ge "${2:-1}" ]; }
none_left() { [ -z "$(leftovers)" ]; }
alive() { kill -0 "$1" 2> /dev/null; }
# A watchdog: never wait on a hang.
wait_schedc() {
  ( sleep 60; kill -KILL "$pid" 2> /dev/null ) &
  local dog=$!
  wait "$pid"
  code=$?
  kill "$dog" 2> /dev/null; wait "$dog" 2> /dev/null
  pid=
}

# An executor that runs for minutes: 69 cost units of 1 s.
slow=(--stage synthetic --ms-per-unit 1000 --timeout 600 --cache-dir "$cache")
backends="threads"
[ "${3:-0}" = 1 ] && backends="threads mpi"

for backend in $backends; do
  procs=1
  [ "$backend" = mpi ] && procs=9  # mpiexec and 8 ranks
  "$schedc" run "$examples/1f1b.sched" --backend $backend "${slow[@]}" > /dev/null 2> "$dir/err" &
  pid=$!
  wait_until 300 running "$pat/[0-9a-f]*/executor" $procs || fail "run $backend: the executor did not start"
  sleep 0.5
  kill -TERM $pid
  wait_schedc
  [ $code -eq 143 ] || fail "run $backend, SIGTERM: exit $code (expected 143, ended by the signal)"
  wait_until 20 none_left || fail "run $backend, SIGTERM: processes left running: $(pgrep -af "$pat")"
  grep -q 'executor failed' "$dir/err" && fail "run $backend, SIGTERM: reported a failure of the stopped executor"
  echo "processes: run $backend, SIGTERM: exit 143, no process left"
done

# SIGKILL: nothing in schedc runs, the executor still dies with it.
"$schedc" run "$examples/1f1b.sched" "${slow[@]}" > /dev/null 2> "$dir/err" &
pid=$!
wait_until 300 running "$pat/[0-9a-f]*/executor" || fail "run, SIGKILL: the executor did not start"
kill -KILL $pid
wait_schedc
wait_until 20 none_left || fail "run, SIGKILL: the executor was left running: $(pgrep -af "$pat")"
echo "processes: run, SIGKILL: no process left"

# A build whose compiles take seconds; the seed makes its content (and so its compiles) new.
big=(--family 1f1b --pp 16 -m 64 --cache-dir "$cache")
"$schedc" build "${big[@]}" --seed $$ -o "$dir/exe" 2> "$dir/err" &
pid=$!
wait_until 120 running "$pat/tmp-" || fail "build, SIGTERM: no compiler started"
kill -TERM $pid
wait_schedc
[ $code -eq 143 ] || fail "build, SIGTERM: exit $code (expected 143)"
wait_until 20 none_left || fail "build, SIGTERM: processes left running: $(pgrep -af "$pat")"
ls "$cache/v1" | grep -q '^tmp-' && fail "build, SIGTERM: temporaries left in the cache: $(ls "$cache/v1")"
[ -e "$dir/exe" ] && fail "build, SIGTERM: the output was written"
echo "processes: build, SIGTERM: exit 143, no process and no temporary left"

# SIGKILL during a build leaves its temporary; the next use of the cache removes it, and one of
# a process that still runs (this shell) stays.
"$schedc" build "${big[@]}" --seed $(( $$ + 1 )) -o "$dir/exe" 2> "$dir/err" &
pid=$!
wait_until 120 running "$pat/tmp-" || fail "build, SIGKILL: no compiler started"
killed=$pid
kill -KILL $pid
wait_schedc
# Compilers the killed schedc's children started finish on their own; wait for them.
wait_until 120 none_left || fail "build, SIGKILL: processes left running: $(pgrep -af "$pat")"
ls "$cache/v1" | grep -q "^tmp-.*-$killed\$" || fail "build, SIGKILL: expected the killed build's temporary: $(ls "$cache/v1")"
live="$cache/v1/tmp-0123456789abcdef0123456789abcdef-$$"
mkdir -p "$live"
"$schedc" build "$examples/1f1b.sched" --cache-dir "$cache" -o "$dir/exe" 2> "$dir/err" || fail "build after SIGKILL failed"
ls "$cache/v1" | grep -q "^tmp-.*-$killed\$" && fail "build, SIGKILL: the next build left the stale temporary: $(ls "$cache/v1")"
[ -d "$live" ] || fail "build, SIGKILL: the temporary of a live process was removed"
none_left || fail "build after SIGKILL: processes left running: $(pgrep -af "$pat")"
echo "processes: build, SIGKILL: the next build removed the stale temporary, kept a live one"
exit 0
