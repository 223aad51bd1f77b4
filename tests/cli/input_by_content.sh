#!/usr/bin/env bash
# input_by_content.sh SCHEDC EXAMPLES: a schedule JSON document is recognised by its content (its
# first non-blank byte is `{`) whatever its name, on every command that reads an input; `.sched`
# specs and `.csv` files keep working by their names.
set -u
schedc=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
examples=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "input_by_content: $*" >&2; [ -f "$dir/err" ] && cat "$dir/err" >&2; exit 1; }
"$schedc" schedule "$examples/1f1b.sched" -o "$dir/s.json" 2>"$dir/err" || fail "schedule of a spec"
# A copy without the suffix, with a leading blank line as editors leave them.
{ printf '\n  '; cat "$dir/s.json"; } > "$dir/sched_copy.txt"
cp "$dir/s.json" "$dir/sched_copy"
for f in sched_copy.txt sched_copy; do
  (cd "$dir" && "$schedc" verify "$f" >out 2>err) || fail "verify $f"
  (cd "$dir" && "$schedc" simulate "$f" >sim 2>err) || fail "simulate $f"
  "$schedc" simulate "$dir/s.json" > "$dir/sim_json" 2>"$dir/err" || fail "simulate s.json"
  cmp -s "$dir/sim" "$dir/sim_json" || fail "simulate $f differs from simulate s.json"
  (cd "$dir" && "$schedc" schedule "$f" --format torch-csv >csv 2>err) || fail "schedule $f"
  "$schedc" schedule "$dir/s.json" --format torch-csv > "$dir/csv_json" 2>"$dir/err" || fail "schedule s.json"
  cmp -s "$dir/csv" "$dir/csv_json" || fail "schedule $f differs from schedule s.json"
  (cd "$dir" && "$schedc" show "$f" >/dev/null 2>err) || fail "show $f"
  (cd "$dir" && "$schedc" check "$f" >/dev/null 2>err) || fail "check $f"
done
"$schedc" verify - < "$dir/s.json" >/dev/null 2>"$dir/err" || fail "verify - with JSON on stdin"
# A spec under another name is still a spec, and a CSV still a CSV.
cp "$examples/1f1b.sched" "$dir/spec.txt"
"$schedc" check "$dir/spec.txt" >/dev/null 2>"$dir/err" || fail "check of a spec named .txt"
"$schedc" schedule "$dir/s.json" --format torch-csv -o "$dir/s.csv" 2>"$dir/err" || fail "export csv"
"$schedc" verify "$dir/s.csv" >/dev/null 2>"$dir/err" || fail "verify a .csv"
# Malformed JSON without the suffix is reported as JSON, not as a spec.
printf '{"format": "schedc.schedule", "version": 1,\n' > "$dir/broken.txt"
"$schedc" verify "$dir/broken.txt" >/dev/null 2>"$dir/err" && fail "broken JSON accepted"
grep -q 'unknown-key\|bad-json\|bad-format\|json' "$dir/err" || fail "broken.txt not reported as JSON"
echo "input_by_content: ok"
