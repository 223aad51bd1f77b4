#!/usr/bin/env bash
# mpi_launch.sh SCHEDC CACHE_DIR: two MPI processes, one per GPU; MPI broadcasts the NCCL id.
set -euo pipefail
schedc=$1
export SCHEDC_CACHE_DIR=$2
. "$(dirname "$0")/../common/prelude.sh"
"$schedc" build --family 1f1b --pp 2 --microbatches 4 -o "$tmp/exe"
root=()
[ "$(id -u)" -ne 0 ] || root=(--allow-run-as-root)
out=$(timeout 120 mpirun -np 2 "${root[@]}" --oversubscribe "$tmp/exe" --backend cuda --dtype fp32 --hidden 256 --batch 32 \
  --check --format json --timeout 60)
echo "$out"
grep -q '"ok": true' <<< "$out" || { echo "mpi_launch: the report is not ok" >&2; exit 1; }
