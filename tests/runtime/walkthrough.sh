#!/usr/bin/env bash
# walkthrough.sh SCHEDC CACHE_DIR REPO: runs every command of docs/walkthrough.md, exactly as the
# page writes it, so that the page cannot rot. A command is a line `$ schedc ...` in a ```console
# block; the lines after it, up to the next command or the block's end, are its output as shown:
# each must be a whole line of what the command printed (stdout and stderr), where `...` inside a
# line matches anything and a line that is only `...` stands for lines that vary. Every command
# must exit 0. The commands run in a scratch folder where `examples` is the repository's.
set -u
schedc=$1
cache=$2
repo=$3
doc=$repo/docs/walkthrough.md
. "$(dirname "$0")/../common/prelude.sh"
export SCHEDC_CACHE_DIR=$cache
ln -s "$repo/examples" "$tmp/examples"
[ -f "$doc" ] || fail "no $doc"

# Split the page into commands (cmd_N) and their shown output (out_N).
awk -v dir="$tmp" '
  /^```console$/ { inside = 1; next }
  /^```/ && inside { inside = 0; next }
  inside && /^\$ / { n++; print substr($0, 3) > (dir "/cmd_" n); printf "" > (dir "/out_" n); next }
  inside && n { print > (dir "/out_" n) }
  END { print n + 0 > (dir "/count") }
' "$doc"
count=$(cat "$tmp/count")
[ "$count" -ge 4 ] || fail "found $count commands in $doc, expected at least 4"

for i in $(seq 1 "$count"); do
  cmd=$(cat "$tmp/cmd_$i")
  case $cmd in
    "schedc "*) ;;
    *) fail "command $i does not start with \`schedc\`: $cmd" ;;
  esac
  read -r -a words <<< "${cmd#schedc }"
  (cd "$tmp" && timeout 250 "$schedc" "${words[@]}") > "$tmp/got_$i" 2>&1
  code=$?
  [ $code -eq 0 ] || { cat "$tmp/got_$i" >&2; fail "\`$cmd\` exited $code"; }
  while IFS= read -r line; do
    [ "$line" = "..." ] && continue
    re=$(printf '%s' "$line" | sed -e 's/[][\.*^$(){}+?|/]/\\&/g' -e 's/\\\.\\\.\\\./.*/g')
    grep -Eq "^$re\$" "$tmp/got_$i" || { cat "$tmp/got_$i" >&2; fail "\`$cmd\` did not print the page's line: $line"; }
  done < "$tmp/out_$i"
  echo "walkthrough: ok: $cmd"
done

# The export step's file: one row per rank (8), with transfers, and it reads back.
[ -f "$tmp/llama.csv" ] || fail "the export step wrote no llama.csv"
[ "$(wc -l < "$tmp/llama.csv")" -eq 8 ] || fail "llama.csv has $(wc -l < "$tmp/llama.csv") rows, expected 8 (one per rank)"
grep -q 'SEND_F' "$tmp/llama.csv" && grep -q 'RECV_B' "$tmp/llama.csv" || fail "llama.csv has no transfers"
(cd "$tmp" && "$schedc" import torch-csv llama.csv -o back.json > /dev/null 2>&1) || fail "llama.csv does not read back"
echo "walkthrough: ok: llama.csv (8 rows, transfers, reads back)"
