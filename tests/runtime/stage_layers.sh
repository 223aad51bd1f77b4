#!/usr/bin/env bash
# stage_layers.sh SCHEDC CACHE_DIR BLOCK_CPP: the spec's `model` partition reaches the stages.
# `model { layers = 8  partition = [1, 3, 2, 2] }` on 4 ranks: the executor's stages get those
# counts (its report says so), the block stage of examples/stages builds that many blocks (the
# bytes of each stage's weight gradient, as the ranks hand them back, are 840 doubles a block at
# hidden 8), and --check still passes; through 1F1B, ZB-V (8 stages, one of 0 layers) and
# DualPipe (two replicas), from `schedc run` and from a built executor; `--layers N` puts N on
# every stage instead. The stages also learn that the model has an embedding and no head.
set -u
schedc=$1
cache=$2
block=$3
. "$(dirname "$0")/../common/prelude.sh"
export SCHEDC_CACHE_DIR=$cache
cat > "$tmp/p.sched" <<'SPEC'
ranks = 4
microbatches = 8
model { layers = 8  partition = [1, 3, 2, 2] }
layer { F = 1  B = 1  W = 1 }
embedding { F = 1  B = 1  W = 1 }
schedule = family 1f1b
runtime { stage = block  hidden = 8  batch = 4 }
SPEC
kb=6720  # one block's weight gradient at hidden 8: 840 doubles

# run_json NAME ARGS...: `schedc run ARGS --check --format json` into $tmp/NAME, which must be ok.
run_json() {
  local name=$1
  shift
  "$schedc" run "$@" --stage-source "$block" --check --format json > "$tmp/$name" 2> "$tmp/err" ||
    { cat "$tmp/err" "$tmp/$name" >&2; fail "\`schedc run $*\` failed"; }
  grep -q '"ok": true' "$tmp/$name" || { cat "$tmp/$name" >&2; fail "$name: --check is not ok"; }
}
# has FILE TEXT: FILE contains TEXT (a fixed string).
has() { grep -qF -- "$2" "$1" || { cat "$1" >&2; fail "$1 lacks \`$2\`"; }; }

"$schedc" check "$tmp/p.sched" --format json > "$tmp/check" || fail "schedc check failed"
has "$tmp/check" '"layers_per_stage": [1, 3, 2, 2]'

run_json 1f1b "$tmp/p.sched"
has "$tmp/1f1b" '"layers_per_stage": [1, 3, 2, 2]'
has "$tmp/1f1b" '"embedding": true, "head": false'  # the model has an embedding, no head
has "$tmp/1f1b" "\"gradient_bytes_per_stage\": [$kb, $((3 * kb)), $((2 * kb)), $((2 * kb))]"

run_json dualpipe "$tmp/p.sched" --family dualpipe
has "$tmp/dualpipe" '"layers_per_stage": [1, 3, 2, 2]'
has "$tmp/dualpipe" "\"gradient_bytes_per_stage\": [$kb, $((3 * kb)), $((2 * kb)), $((2 * kb))]"

sed -e 's/^ranks = 4$/ranks = 4\nstages_per_rank = 2/' -e 's/layers = 8  partition = \[1, 3, 2, 2\]/layers = 10  partition = [0, 2, 1, 1, 1, 1, 2, 2]/' \
  -e 's/family 1f1b/family zb-v/' "$tmp/p.sched" > "$tmp/v.sched"
run_json zb-v "$tmp/v.sched"
has "$tmp/zb-v" '"layers_per_stage": [0, 2, 1, 1, 1, 1, 2, 2]'
has "$tmp/zb-v" "\"gradient_bytes_per_stage\": [0, $((2 * kb)), $kb, $kb, $kb, $kb, $((2 * kb)), $((2 * kb))]"

# --layers: the same count on every stage, from schedc and from the executor's own flag.
run_json flag "$tmp/p.sched" --layers 2
has "$tmp/flag" '"layers_per_stage": [2, 2, 2, 2]'
has "$tmp/flag" "\"gradient_bytes_per_stage\": [$((2 * kb)), $((2 * kb)), $((2 * kb)), $((2 * kb))]"

# A built executor carries the partition; its text report shows it.
"$schedc" build "$tmp/p.sched" --stage-source "$block" -o "$tmp/ex" 2> "$tmp/err" || { cat "$tmp/err" >&2; fail "schedc build failed"; }
"$tmp/ex" --check > "$tmp/text" 2>&1 || { cat "$tmp/text" >&2; fail "the built executor failed --check"; }
has "$tmp/text" 'stage block (fp64, hidden 8, layers [1, 3, 2, 2], batch 4)'
has "$tmp/text" ': ok'
"$tmp/ex" --check --layers 1 --format json > "$tmp/ex1" || { cat "$tmp/ex1" >&2; fail "the executor's --layers 1 failed"; }
has "$tmp/ex1" "\"gradient_bytes_per_stage\": [$kb, $kb, $kb, $kb]"
echo "stage_layers: ok"
