#!/usr/bin/env bash
# input_by_content.sh SCHEDC EXAMPLES: a schedule JSON document is recognised by its content (its
# first non-blank byte is `{`) whatever its name, on every command that reads an input; `.sched`
# specs and `.csv` files keep working by their names.
set -u
schedc=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
examples=$2
. "$(dirname "$0")/../common/prelude.sh"
"$schedc" schedule "$examples/1f1b.sched" -o "$tmp/s.json" 2>"$tmp/err" || fail "schedule of a spec"
# A copy without the suffix, with a leading blank line as editors leave them.
{ printf '\n  '; cat "$tmp/s.json"; } > "$tmp/sched_copy.txt"
cp "$tmp/s.json" "$tmp/sched_copy"
for f in sched_copy.txt sched_copy; do
  (cd "$tmp" && "$schedc" verify "$f" >out 2>err) || fail "verify $f"
  (cd "$tmp" && "$schedc" simulate "$f" >sim 2>err) || fail "simulate $f"
  "$schedc" simulate "$tmp/s.json" > "$tmp/sim_json" 2>"$tmp/err" || fail "simulate s.json"
  cmp -s "$tmp/sim" "$tmp/sim_json" || fail "simulate $f differs from simulate s.json"
  (cd "$tmp" && "$schedc" schedule "$f" --format torch-csv >csv 2>err) || fail "schedule $f"
  "$schedc" schedule "$tmp/s.json" --format torch-csv > "$tmp/csv_json" 2>"$tmp/err" || fail "schedule s.json"
  cmp -s "$tmp/csv" "$tmp/csv_json" || fail "schedule $f differs from schedule s.json"
  (cd "$tmp" && "$schedc" show "$f" >/dev/null 2>err) || fail "show $f"
  (cd "$tmp" && "$schedc" check "$f" >/dev/null 2>err) || fail "check $f"
done
"$schedc" verify - < "$tmp/s.json" >/dev/null 2>"$tmp/err" || fail "verify - with JSON on stdin"
# A spec under another name is still a spec, and a CSV still a CSV.
cp "$examples/1f1b.sched" "$tmp/spec.txt"
"$schedc" check "$tmp/spec.txt" >/dev/null 2>"$tmp/err" || fail "check of a spec named .txt"
"$schedc" schedule "$tmp/s.json" --format torch-csv -o "$tmp/s.csv" 2>"$tmp/err" || fail "export csv"
"$schedc" verify "$tmp/s.csv" >/dev/null 2>"$tmp/err" || fail "verify a .csv"
# Malformed JSON without the suffix is reported as JSON, not as a spec.
printf '{"format": "schedc.schedule", "version": 1,\n' > "$tmp/broken.txt"
"$schedc" verify "$tmp/broken.txt" >/dev/null 2>"$tmp/err" && fail "broken JSON accepted"
grep -q 'unknown-key\|bad-json\|bad-format\|json' "$tmp/err" || fail "broken.txt not reported as JSON"
echo "input_by_content: ok"
