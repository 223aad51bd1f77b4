#!/usr/bin/env bash
# Golden CLI test runner. A case is a file in this folder (NAME.sched, NAME.json or NAME.csv);
# its command is the case's `# RUN: schedc ...` line (.sched), or the one line of NAME.run, or by
# default `schedc check %s` (.sched), `schedc verify %s` (.json), `schedc import torch-csv %s`
# (.csv). `%s` is the case file. NAME.expected holds the command, the exit code, stdout and stderr.
# A case's name starts with `fail_` exactly when its exit code is not 0.
#
#   run.sh SCHEDC CASE            compare (the CTest entry point)
#   run.sh SCHEDC CASE --update   rewrite CASE.expected
#   run.sh SCHEDC --update-all    rewrite every case's expectation
set -u
schedc=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
here=$(cd "$(dirname "$0")" && pwd)
cd "$here" || exit 2

if [ "${2:-}" = "--update-all" ]; then
  status=0
  for c in *.sched *.json *.csv; do
    [ -e "$c" ] || continue
    "$0" "$schedc" "$c" --update || status=1
  done
  exit $status
fi

case_file=$2
mode=${3:-compare}
base=${case_file%.*}

if [ -f "$base.run" ]; then
  cmdline=$(head -n 1 "$base.run")
elif grep -q '^# RUN: ' "$case_file" 2>/dev/null; then
  cmdline=$(grep -m 1 '^# RUN: ' "$case_file" | sed 's/^# RUN: //')
else
  case "$case_file" in
    *.sched) cmdline="schedc check %s" ;;
    *.json) cmdline="schedc verify %s" ;;
    *.csv) cmdline="schedc import torch-csv %s" ;;
  esac
fi
cmdline=${cmdline//%s/$case_file}
read -r -a argv <<< "$cmdline"
if [ "${argv[0]}" != "schedc" ]; then
  echo "golden: $case_file: the command must start with \`schedc\`, got \`$cmdline\`" >&2
  exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
timeout 120 "$schedc" "${argv[@]:1}" > "$tmp/out" 2> "$tmp/err"
code=$?
{
  printf '$ %s\n' "$cmdline"
  printf 'exit %d\n' "$code"
  printf -- '--- stdout\n'
  cat "$tmp/out"
  printf -- '--- stderr\n'
  cat "$tmp/err"
} > "$tmp/actual"

name=$(basename "$case_file")
if [[ "$name" == fail_* ]] && [ "$code" -eq 0 ]; then
  echo "golden: $case_file: a fail_ case must exit non-zero, got 0" >&2
  [ "$mode" = "--update" ] || exit 1
fi
if [[ "$name" != fail_* ]] && [ "$code" -ne 0 ]; then
  echo "golden: $case_file: exit code $code, but only fail_ cases may fail" >&2
  cat "$tmp/err" >&2
  [ "$mode" = "--update" ] || exit 1
fi

if [ "$mode" = "--update" ]; then
  cp "$tmp/actual" "$base.expected"
  exit 0
fi
if [ ! -f "$base.expected" ]; then
  echo "golden: $case_file: no $base.expected (run with --update and review it)" >&2
  exit 1
fi
if ! diff -u "$base.expected" "$tmp/actual"; then
  echo "golden: $case_file: output differs from $base.expected (above)" >&2
  exit 1
fi
