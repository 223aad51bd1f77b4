#!/usr/bin/env bash
# executor_flags.sh SCHEDC CACHE_DIR: a generated executor's own command line (CLI11, like
# schedc's): `--flag=value` and `--flag value` alike, the last of a repeated flag wins, --help,
# and bad values, unknown options and --check without a sequential reference are refused with
# exit code 2 and the same messages as before.
set -u
schedc=$1
cache=$2
. "$(dirname "$0")/../common/prelude.sh"
printf 'ranks = 2\nmicrobatches = 4\nschedule = family 1f1b\nruntime { hidden = 16 }\n' > "$tmp/s.sched"
SCHEDC_CACHE_DIR=$cache "$schedc" build "$tmp/s.sched" -o "$tmp/ex" || fail "schedc build failed"

# ok ARGS...: exits 0, and its text report (stdout) is in $tmp/out.
ok() {
  "$tmp/ex" "$@" > "$tmp/out" 2> "$tmp/err" || { cat "$tmp/err" >&2; fail "\`executor $*\` exited $?"; }
}
# refused CODE MESSAGE ARGS...: exits CODE with MESSAGE (a fixed string) on stderr.
refused() { expect_exit "$1" "$2" "$tmp/ex" "${@:3}"; }

ok --hidden=32 --layers 1 --check
grep -q 'hidden 32, layers 1' "$tmp/out" || fail "--hidden=32 --layers 1 not applied: $(cat "$tmp/out")"
grep -q 'max rel diff 0' "$tmp/out" || fail "--check did not compare: $(cat "$tmp/out")"
ok --hidden 32 --hidden=24 --format=json --stage=mlp
grep -q '"stage": "mlp"' "$tmp/out" || fail "--format=json not applied"
ok --format text
grep -q 'hidden 16,' "$tmp/out" || fail "the runtime block's hidden = 16 is not the default"
ok --help
grep -q -- '--hidden' "$tmp/out" || fail "--help does not list --hidden"

refused 2 'schedrt: error: --hidden needs an integer in 1..4096, got `5000`' --hidden=5000
refused 2 'schedrt: error: --hidden needs an integer in 1..4096, got `5000`' --hidden 5000
refused 2 'schedrt: error: --hidden needs an integer in 1..4096, got `x`' --hidden=x
refused 2 'schedrt: error: --seed needs an integer in 0..' --seed=-1
refused 2 'schedrt: error: --ms-per-unit needs a number in 0..100000, got `-1`' --ms-per-unit=-1
refused 2 'schedrt: error: --seed needs an integer in 0..9007199254740992, got `9007199254740993`' --seed=9007199254740993
refused 2 'schedrt: error: --trace needs a file path, got ``' --trace ''
refused 2 'schedrt: error: --backend needs one of `threads`, `mpi`, `cuda`, got `gpu`' --backend=gpu
refused 2 'schedrt: error: unknown option `--bogus` (see --help)' --bogus
refused 2 'schedrt: error: unknown option `stray` (see --help)' stray
refused 2 'schedrt: error: --hidden' --hidden
refused 2 'schedrt: error: --fault needs `drop-send=RANK` or `throw=RANK`, got `x`' --fault=x
refused 2 'schedrt: error: --check needs a stage with a sequential reference (`mlp`); stage `synthetic` has none' \
  --stage=synthetic --check
refused 2 'schedrt: error: dtype `bf16` needs backend `cuda` (only the GPU stage computes in bf16)' --dtype=bf16
refused 2 'schedrt: error: --profile runs no program' --profile="$tmp/p.json" --check
echo "executor_flags: ok"
