#!/usr/bin/env bash
# vpp_auto.sh SCHEDC: `--vpp auto` (issue 14, the cost of fine interleaving). The same problem,
# one rank's share of the model per microbatch F = 4, B = 4, W = 2: without overheads interleaving
# shrinks the bubble and more than one stage per rank wins; with an overhead per action and per
# message that fine interleaving multiplies, one stage per rank wins. And the errors.
set -u
schedc=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "vpp_auto: $*" >&2; cat "$dir/err" >&2; exit 1; }
solve() {  # solve NAME COST...
  local name=$1
  shift
  timeout 120 "$schedc" schedule --solve --pp 4 -m 8 --vpp auto --backward split --cost "$1" --time-limit 3 \
    --threads 1 --deterministic -o "$dir/$name.json" 2> "$dir/err" || fail "the $name solve failed"
  grep -q '^schedc: stages_per_rank = auto:' "$dir/err" || fail "no candidates table for $name"
}
solve plain F=4,B=4,W=2,comm=0.1
grep -q '"stages_per_rank": 1,' "$dir/plain.json" && fail "without overheads one stage per rank was chosen"
grep -q '^  vpp 1: ' "$dir/err" || fail "vpp 1 missing from the table"
solve costly F=4,B=4,W=2,comm=0.1,action_overhead=1,message_overhead=0.5
grep -q '"stages_per_rank": 1,' "$dir/costly.json" || fail "with overheads more than one stage per rank was chosen"
grep -q '"version": 3,' "$dir/costly.json" || fail "overheads not written as version 3"
"$schedc" verify "$dir/costly.json" 2> "$dir/err" || fail "the chosen schedule does not verify"
echo "vpp_auto: ok (chosen: $(grep -o '"stages_per_rank": [0-9]*' "$dir/plain.json") without overheads, 1 with)"

# Errors: a family fixes the stages per rank; a custom placement too; a bad value.
"$schedc" schedule --family 1f1b --pp 4 -m 8 --vpp auto -o "$dir/x.json" 2> "$dir/err"
[ $? -eq 1 ] && grep -q "\`stages_per_rank = auto\` needs \`schedule = solve\` or --solve" "$dir/err" &&
  grep -q '\[bad-value\]' "$dir/err" || fail "auto with a family is not a bad-value error"
[ ! -e "$dir/x.json" ] || fail "an output was written after an error"
"$schedc" schedule --solve --pp 4 -m 8 --vpp two -o "$dir/x.json" 2> "$dir/err"
[ $? -eq 2 ] && grep -q -- "--vpp: expected \`auto\` or a whole number in 1..64, got \`two\`" "$dir/err" ||
  fail "a bad --vpp is not a command-line error"
printf 'ranks = 4\nmicrobatches = 8\nstages_per_rank = auto\nbackward = split\nschedule = family 1f1b\n' > "$dir/a.sched"
"$schedc" schedule "$dir/a.sched" -o "$dir/x.json" 2> "$dir/err"
[ $? -eq 1 ] && grep -q 'a.sched:3:19: error: `stages_per_rank = auto` needs' "$dir/err" ||
  fail "auto in a spec with a family is not located"
echo "vpp_auto: ok (errors)"
