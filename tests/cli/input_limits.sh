#!/usr/bin/env bash
# input_limits.sh SCHEDC: inputs that cannot hurt (issue 11, hardening), what golden files cannot
# show: devices, FIFOs, standard input, inputs past the size limit, a JSON document nested 100000
# deep, the memory and the stderr of huge one-line files, and bad flags on every command exiting
# 2 with the flag named. Big inputs are made in a temporary folder (sparse where they can be).
set -u
schedc=$1
here=$(cd "$(dirname "$0")" && pwd)
spec=$here/../../examples/1f1b.sched
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0
fail() {
  echo "input_limits: $*" >&2
  [ -f "$dir/err" ] && head -c 2000 "$dir/err" >&2 && echo >&2
  failures=$((failures + 1))
}

# expect RC PATTERN ARGS...: schedc ARGS exits RC within 60 s and its stderr (or stdout) holds
# PATTERN (an empty PATTERN: anything). Only the first MiB of stderr is kept; more is a failure of its own.
expect() {
  local want=$1 pattern=$2
  shift 2
  timeout 60 "$schedc" "$@" < "${stdin:-/dev/null}" 2>&1 > "$dir/out" | head -c 1048577 > "$dir/err"
  local rc=${PIPESTATUS[0]}
  if [ "$rc" -ne "$want" ]; then fail "schedc $*: exit $rc, expected $want"; return; fi
  if [ -n "$pattern" ] && ! grep -qF -- "$pattern" "$dir/err" "$dir/out"; then fail "schedc $*: no \`$pattern\` in its output"; return; fi
  if [ "$(wc -c < "$dir/err")" -gt 1048576 ]; then fail "schedc $*: more than 1 MiB on stderr"; fi
}

# ---- files that are not regular, and standard input ----
expect 1 "cannot read \`/dev/zero\`: it is a character device, not a regular file" check /dev/zero
mkfifo "$dir/pipe.sched"
expect 1 "it is a FIFO (named pipe), not a regular file (to read a stream, pass \`-\`" check "$dir/pipe.sched"
expect 1 "cannot read \`$dir\`: it is a directory" check "$dir"
stdin=$spec expect 0 "<stdin>: ok: 8 ranks x 1 stages" check -
stdin=/dev/zero expect 1 "<stdin>: error: the input is larger than the 256 MiB schedc reads from one input" check -
expect 2 "check: the path of the spec is empty" check ""

# ---- past the size limit: refused from the size, without reading ----
truncate -s 300M "$dir/big.sched" "$dir/big.json" "$dir/big.csv"
for f in big.sched big.json big.csv; do
  expect 1 "$f: error: the file has 314572800 bytes, more than the 256 MiB schedc reads from one input [too-large]" \
    verify "$dir/$f"
done

# ---- a JSON document nested 100000 deep (was a stack overflow) ----
{
  # under `format`, which a message quotes: printing it recursed once per level
  printf '{"version": 1, "problem": {"ranks": 1, "microbatches": 1}, "ranks": [], "format": '
  head -c 100000 /dev/zero | tr '\0' '['
  head -c 100000 /dev/zero | tr '\0' ']'
  printf '}\n'
} > "$dir/deep.json"
expect 1 "deep.json:1:" verify "$dir/deep.json"
expect 1 "arrays and objects nest deeper than 512 levels (a schedule document needs 4) [too-large]" verify "$dir/deep.json"

# ---- memory of a 30 MB one-line CSV of empty cells stays proportional (was 1.6 GB) ----
head -c 30000000 /dev/zero | tr '\0' ',' > "$dir/empty.csv"
expect 1 "the file has no actions" import torch-csv "$dir/empty.csv"
if [ -x /usr/bin/time ]; then
  /usr/bin/time -f '%M' -o "$dir/rss" "$schedc" import torch-csv "$dir/empty.csv" > /dev/null 2>&1
  rss_kb=$(tail -n 1 "$dir/rss")
  # The text itself (30 MB) and a little more; 500 MB leaves room for sanitizer builds.
  [ "$rss_kb" -lt 500000 ] || fail "import of a 30 MB CSV of empty cells took $rss_kb KB"
else
  echo "input_limits: no /usr/bin/time, memory not measured" >&2
fi

# ---- diagnostics on huge one-line files: a window of the line, 20 errors, then a note ----
bad=$(head -c 480 /dev/zero | tr '\0' 'z')
{
  printf '{"format": "schedc.schedule", "version": 1, "problem": {"ranks": 1, "microbatches": 65536}, "ranks": [['
  yes "\"$bad\"" | head -n 40000 | paste -sd, -
  printf ']]}\n'
} > "$dir/tokens.json"
yes "$bad" | head -n 40000 | paste -sd, - > "$dir/tokens.csv"
for f in tokens.json tokens.csv; do
  expect 1 "$f: note: too many errors, stopped after 20; fix these and run again" verify "$dir/$f"
  bytes=$(wc -c < "$dir/err")
  [ "$bytes" -lt 32768 ] || fail "verify $f (19 MB on one line): $bytes bytes on stderr"
done

# ---- bad flags: exit 2 and the flag named, never 1 or 3 ----
csv=$here/../golden/ok_csv_import_1f1b.csv
expect 2 "--pp: \`ranks\` must be in 1..1024, got \`0\`" check "$spec" --pp 0
expect 2 "--pp: \`ranks\` must be in 1..1024, got \`-1\`" schedule --family 1f1b --pp -1 -m 4
expect 2 "--pp" check "$spec" --pp 99999999999
expect 2 "--microbatches" check "$spec" -m abc
expect 2 "--microbatches: \`microbatches\` must be in 1..65536, got \`0\`" show --family gpipe --pp 2 -m 0
expect 2 "--vpp: \`stages_per_rank\` must be in 1..64, got \`65\`" check "$spec" --vpp 65
expect 2 "--cost: \`cost.F\` must be a number in 0..1e15, got \`-1\`" check "$spec" --cost F=-1
expect 2 "--cost: \`cost.comm\` must be a number in 0..1e15, got \`-1\`" import torch-csv "$csv" --cost comm=-1
expect 2 "--memory: \`cap\` needs a number" check "$spec" --memory cap=abc
expect 2 "--memory: \`memory.cap\` must be a number in 0..1e15, got \`-1\`" simulate "$spec" --memory cap=-1
expect 2 "--pp: \`ranks\` must be in 1..1024, got \`0\`" import torch-csv "$csv" --pp 0
expect 2 "--threads: Value 0 not in range 1 to 256" schedule "$spec" --threads 0
expect 2 "--threads: Value 0 not in range 1 to 256" schedule --solve --pp 2 -m 2 --threads 0
for v in -1 0 nan inf 1e300; do
  expect 2 "--time-limit: expected a number in 0.01..86400, got \`$v\`" schedule "$spec" --time-limit "$v"
done
expect 2 "--time-limit: expected a number in 0.01..86400, got \`0\`" verify "$spec" --optimal --time-limit 0
expect 2 "--ms-per-unit: expected a number in 0..100000, got \`nan\`" emit "$spec" --target cpp -o "$dir/emitted" --ms-per-unit nan
expect 2 "--timeout: expected a number in 0.001..1000000, got \`nan\`" run "$spec" --timeout nan
expect 2 "--hidden: expected an integer in 1..4096, got \`0\`" build "$spec" -o "$dir/exe" --hidden 0
expect 2 "--fault: expected \`drop-send=RANK\` or \`throw=RANK\` with RANK in 0..7, got \`throw=8\`" \
  run "$spec" --fault throw=8
[ -e "$dir/emitted" ] && fail "emit with a bad flag wrote $dir/emitted"

# ---- outputs: a folder as the output is refused with the reason, and nothing is left behind ----
mkdir "$dir/outdir"
expect 1 "cannot write \`$dir/outdir\`: it is a directory" schedule --family 1f1b --pp 2 -m 2 -o "$dir/outdir"
[ -z "$(ls -A "$dir/outdir")" ] || fail "a refused output left files in the folder"
ls "$dir"/*.schedc-tmp > /dev/null 2>&1 && fail "a refused output left a temporary file beside it"

# a symlink as the output: the link stays, its target gets the schedule
echo old > "$dir/real.json"
ln -s real.json "$dir/link.json"
expect 0 "" schedule --family 1f1b --pp 2 -m 2 -o "$dir/link.json"
[ -L "$dir/link.json" ] || fail "-o through a symlink replaced the link"
grep -q '"format"' "$dir/real.json" || fail "-o through a symlink did not write its target"
# a stale temporary that is a symlink is removed, never written through
echo precious > "$dir/victim"
ln -s victim "$dir/fresh.json.schedc-tmp"
expect 0 "" schedule --family 1f1b --pp 2 -m 2 -o "$dir/fresh.json"
[ "$(cat "$dir/victim")" = precious ] || fail "a stale OUT.schedc-tmp symlink was written through"
[ -e "$dir/fresh.json.schedc-tmp" ] && fail "the temporary was left behind"
# devices and FIFOs are written in place, never replaced (as root, `-o /dev/null` replaced
# /dev/null; the test uses a null device of its own where it may make one, never /dev/null itself)
if mknod -m 666 "$dir/null" c 1 3 2> /dev/null; then
  expect 0 "" schedule --family 1f1b --pp 2 -m 2 -o "$dir/null"
  [ -c "$dir/null" ] || fail "-o DEVICE replaced the device"
fi
mkfifo "$dir/out.fifo"
(timeout 60 cat "$dir/out.fifo" > "$dir/from_fifo") &
reader=$!
expect 0 "" schedule --family 1f1b --pp 2 -m 2 -o "$dir/out.fifo"
wait $reader
[ -p "$dir/out.fifo" ] || fail "-o FIFO replaced the FIFO"
grep -q '"format"' "$dir/from_fifo" || fail "-o FIFO: the reader got no schedule"
# the input is never the output; a missing folder is named; standard output errors are not lost
cp "$spec" "$dir/self.sched"
expect 1 "cannot write \`$dir/self.sched\`: it is also the input" schedule "$dir/self.sched" -o "$dir/self.sched"
cmp -s "$spec" "$dir/self.sched" || fail "-o INPUT changed the input"
expect 1 "cannot write \`$dir/nope/out.json\`: its folder \`$dir/nope\` does not exist" \
  schedule --family 1f1b --pp 2 -m 2 -o "$dir/nope/out.json"
if [ -w /dev/full ]; then
  timeout 60 "$schedc" schedule --family 1f1b --pp 2 -m 2 > /dev/full 2> "$dir/err"
  rc=$?
  [ "$rc" -ne 0 ] || fail "schedule > /dev/full exited 0"
  grep -qF "cannot write to standard output: No space left on device" "$dir/err" || fail "schedule > /dev/full: no message"
fi

if [ "$failures" -ne 0 ]; then
  echo "input_limits: $failures failures" >&2
  exit 1
fi
echo "input_limits: ok"
