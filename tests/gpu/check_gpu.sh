#!/usr/bin/env bash
# check_gpu.sh SCHEDC CACHE_DIR ARGS...: `schedc run ARGS --backend cuda --check` on the GPU (mlp,
# hidden 256, batch 32) must report ok: gradients and loss within the dtype's tolerance of the CPU
# reference in fp64 (docs/runtime.md, "The cuda backend").
set -u
schedc=$1
cache=$2
shift 2
out=$(SCHEDC_CACHE_DIR=$cache timeout 200 "$schedc" run --backend cuda --hidden 256 --batch 32 "$@" --check --format json)
code=$?
echo "$out"
if [ $code -ne 0 ]; then
  echo "check_gpu: \`schedc run --backend cuda $* --check\` exited with $code" >&2
  exit 1
fi
if ! grep -q '"ok": true' <<< "$out" || ! grep -q '"backend": "cuda"' <<< "$out"; then
  echo "check_gpu: the report is not ok on cuda" >&2
  exit 1
fi
rel=$(sed -n 's/.*"max_rel_grad_diff": \([^,]*\),.*/\1/p' <<< "$out")
tol=$(sed -n 's/.*"tolerance": \([^,]*\),.*/\1/p' <<< "$out")
echo "check_gpu: max relative gradient difference $rel (tolerance $tol)"
