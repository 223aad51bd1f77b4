#!/usr/bin/env bash
# output_target.sh SCHEDC: where `-o` may write. An empty path is a bad command line (exit 2,
# naming the flag), never standard output and never after the work is done.
set -u
schedc=$1
. "$(dirname "$0")/../common/prelude.sh"

# -o "" on every command that writes a file or a folder: exit 2, `[bad-flag]`, nothing on stdout.
empty() {
  expect_exit 2 'schedc: error: -o: the output path is empty, expected a file (or `-` for standard output) [bad-flag]' \
    "$schedc" "$@" -o ""
  [ -s "$tmp/out" ] && fail "\`schedc $* -o \"\"\` wrote to stdout"
  return 0
}
printf 'ranks = 2\nmicrobatches = 2\nschedule = family 1f1b\n' > "$tmp/s.sched"
printf '0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n' > "$tmp/s.csv"
empty schedule "$tmp/s.sched"
empty schedule --solve --pp 2 -m 2 --time-limit 30
empty simulate "$tmp/s.sched"
empty show "$tmp/s.sched"
empty verify "$tmp/s.sched"
empty check "$tmp/s.sched"
empty families
empty import torch-csv "$tmp/s.csv"
empty emit "$tmp/s.sched"
empty build "$tmp/s.sched"
# `-o -` is standard output.
"$schedc" schedule "$tmp/s.sched" -o - > "$tmp/dash" 2> "$tmp/err" || fail "-o - failed"
grep -q '"format": "schedc.schedule"' "$tmp/dash" || fail "-o - did not write the schedule to stdout"
echo "output_target: -o \"\" is refused by every command, -o - is stdout"
