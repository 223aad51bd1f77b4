#!/usr/bin/env bash
# env_launch.sh SCHEDC CACHE_DIR: two processes, one per GPU, started the way torchrun or a Slurm
# script would (RANK, WORLD_SIZE, LOCAL_RANK, SCHEDC_NCCL_ID_FILE): NCCL between them, --check ok.
set -euo pipefail
schedc=$1
export SCHEDC_CACHE_DIR=$2
. "$(dirname "$0")/../common/prelude.sh"
"$schedc" build --family 1f1b --pp 2 --microbatches 4 -o "$tmp/exe"
for r in 0 1; do
  RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r SCHEDC_NCCL_ID_FILE="$tmp/nccl-id" timeout 120 \
    "$tmp/exe" --backend cuda --dtype fp32 --hidden 256 --batch 32 --check --format json --timeout 60 > "$tmp/out$r" 2>&1 &
done
status=0
wait %1 || status=1
wait %2 || status=1
cat "$tmp/out0" "$tmp/out1"
[ $status -eq 0 ] || { echo "env_launch: a rank failed" >&2; exit 1; }
grep -q '"ok": true' "$tmp/out0" || { echo "env_launch: rank 0's report is not ok" >&2; exit 1; }
[ ! -e "$tmp/nccl-id" ] || { echo "env_launch: rank 0 left the NCCL id file behind" >&2; exit 1; }
