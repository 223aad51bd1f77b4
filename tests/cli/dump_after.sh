#!/usr/bin/env bash
# dump_after.sh SCHEDC EXAMPLES: `--dump-after PHASE` prints the data after that phase on stderr
# (docs/driver.md), and nothing else changes: stdout is the same with and without it, the dump is
# the same on every run, a schedule dumped after `schedule` is schedule JSON schedc reads back, the
# program dumped after `lower` is `schedule --format program`'s, and the files dumped after `emit`
# are those `emit` writes. A phase the command never reaches, or no phase at all, is a `bad-flag`
# error (exit 2); a phase that fails prints nothing for itself or after.
set -u
schedc=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
examples=$2
. "$(dirname "$0")/../common/prelude.sh"
# The text of the dump after phase $1 in file $2 (without its header line).
section() { awk -v p="$1" '/^=== after / { on = ($3 == p ":") ; next } on' "$2"; }
spec=$examples/interleaved-1f1b.sched

"$schedc" simulate "$spec" > "$tmp/plain" 2> "$tmp/err" || fail "simulate without --dump-after"
"$schedc" simulate --dump-after load,schedule --dump-after verify --dump-after=simulate "$spec" \
  > "$tmp/out" 2> "$tmp/err" || fail "simulate with --dump-after"
cmp -s "$tmp/plain" "$tmp/out" || fail "--dump-after changed stdout"
[ "$(grep '^=== after ' "$tmp/err" | awk '{print $3}' | tr -d ':' | tr '\n' ' ')" = "load schedule verify simulate " ] ||
  fail "the dumps are not load, schedule, verify, simulate in that order"
cp "$tmp/err" "$tmp/first"
"$schedc" simulate "$spec" --dump-after load,schedule,verify,simulate > /dev/null 2> "$tmp/err" || fail "second run"
cmp -s "$tmp/first" "$tmp/err" || fail "two runs dump different bytes"

# load: the problem and where the spec gave each field.
section load "$tmp/first" > "$tmp/load.json"
grep -q '"format": "schedc.dump.load"' "$tmp/load.json" || fail "the load dump is not a schedc.dump.load document"
grep -q '"ranks": "[^"]*interleaved-1f1b.sched:[0-9]*:[0-9]*"' "$tmp/load.json" || fail "the load dump does not locate \`ranks\`"
# schedule: schedule JSON that schedc reads back to the same schedule.
section schedule "$tmp/first" > "$tmp/s.json"
"$schedc" schedule "$tmp/s.json" > "$tmp/again.json" 2> "$tmp/err" || fail "the schedule dump does not read back"
"$schedc" schedule "$spec" > "$tmp/direct.json" 2> "$tmp/err" || fail "schedule"
diff <(grep -v provenance "$tmp/again.json") <(grep -v provenance "$tmp/direct.json") > /dev/null ||
  fail "the schedule dump is not the schedule \`schedule\` writes"
# simulate: the timeline `show --format json` prints.
section simulate "$tmp/first" > "$tmp/timeline.json"
"$schedc" show "$spec" --format json > "$tmp/show.json" 2> "$tmp/err" || fail "show"
cmp -s "$tmp/timeline.json" "$tmp/show.json" || fail "the simulate dump is not \`show --format json\`"

# lower: the program `schedule --format program` prints.
"$schedc" schedule "$spec" --format program --dump-after lower > "$tmp/program" 2> "$tmp/err" || fail "program"
section lower "$tmp/err" > "$tmp/lowered"
cmp -s "$tmp/program" "$tmp/lowered" || fail "the lower dump is not \`schedule --format program\`"

# emit: the files emit writes, each under its name.
"$schedc" emit "$spec" -o "$tmp/emitted" --dump-after emit > /dev/null 2> "$tmp/err" || fail "emit"
for f in rank_0.cpp main.cpp CMakeLists.txt; do
  awk -v f="$f" '/^\/\/ ---- / { on = ($3 == f); next } on' <(section emit "$tmp/err") > "$tmp/dumped"
  cmp -s "$tmp/dumped" "$tmp/emitted/$f" || fail "the emit dump of $f is not the file emit wrote"
done

# A phase the command never reaches, an unknown phase: bad-flag, exit 2, before anything runs.
"$schedc" simulate "$spec" --dump-after lower > "$tmp/out" 2> "$tmp/err"
[ $? -eq 2 ] || fail "simulate --dump-after lower did not exit 2"
grep -q 'never reaches `lower`.*\[bad-flag\]' "$tmp/err" || fail "no bad-flag message for an unreached phase"
[ -s "$tmp/out" ] && fail "simulate wrote output despite a bad --dump-after"
"$schedc" schedule "$spec" --dump-after parse > /dev/null 2> "$tmp/err"
[ $? -eq 2 ] || fail "an unknown phase did not exit 2"
grep -q 'unknown phase `parse`, expected one of load, schedule, verify, simulate \[bad-flag\]' "$tmp/err" ||
  fail "the unknown-phase message does not list the phases of \`schedule --format json\`"

# A schedule that does not verify: dumped after `schedule`, and nothing after `verify`.
printf 'ranks = 2\nmicrobatches = 1\nschedule = explicit {\n  rank 0: F0.s0 B0.s0 W0.s0\n  rank 1: B0.s1 F0.s1 W0.s1\n}\n' > "$tmp/bad.sched"
"$schedc" verify "$tmp/bad.sched" --dump-after schedule,verify > /dev/null 2> "$tmp/err"
[ $? -eq 1 ] || fail "verify of an invalid schedule did not exit 1"
grep -q '^=== after schedule' "$tmp/err" || fail "no dump after schedule before verify failed"
grep -q '^=== after verify' "$tmp/err" && fail "a dump after verify, which failed"
echo "dump_after: ok"
