#!/usr/bin/env bash
# debug_flag.sh SCHEDC: the solver's debug lines come with --debug and only with it (issue 13: no
# hidden switches). A deterministic solve where Z3 probes the whole instance prints `debug: ` lines
# on stderr with --debug; without it none, and SCHEDC_DEBUG in the environment changes nothing.
# The schedule written is the same either way.
set -u
schedc=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
. "$(dirname "$0")/../common/prelude.sh"
solve=(schedule --solve --pp 3 -m 6 --cost F=2,B=2,W=1,comm=0.5 --memory cap=4 --deterministic --time-limit 5 --quiet)

timeout 120 "$schedc" "${solve[@]}" --debug > "$tmp/out-debug.json" 2> "$tmp/err" || fail "exit $? with --debug"
grep -q '^debug: probe ' "$tmp/err" || fail "no \`debug: probe\` line with --debug"
grep -v '^debug: ' "$tmp/err" | grep -q . && fail "stderr has more than debug lines with --debug --quiet"
grep -q 'debug:' "$tmp/out-debug.json" && fail "debug lines reached stdout"

SCHEDC_DEBUG=1 timeout 120 "$schedc" "${solve[@]}" > "$tmp/out.json" 2> "$tmp/err" || fail "exit $? without --debug"
[ -s "$tmp/err" ] && fail "stderr is not empty without --debug (SCHEDC_DEBUG=1 set)"
cmp -s "$tmp/out.json" "$tmp/out-debug.json" || fail "--debug changed the schedule written"
echo "debug_flag: ok ($(grep -c '^debug: ' <(timeout 120 "$schedc" "${solve[@]}" --debug 2>&1 >/dev/null)) debug lines)"
