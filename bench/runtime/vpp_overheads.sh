#!/usr/bin/env bash
# vpp_overheads.sh SCHEDC [BACKEND...]: the cost of fine interleaving, measured against simulated
# (issue 14, part 3). For vpp 1, 2 and 4 the same model (one rank's share per microbatch F = 200us,
# B = 200us, W = 100us, split evenly over the rank's stages) on pp 2, m 8 with the synthetic stage:
# `schedc profile` measures comm and the executor's overheads, the solve orders the stated work
# with them, and `schedc run --steps 5` measures the orders. Printed per row: the
# measured makespan (median of 5 steps), the simulated makespan of the same orders with the
# overhead terms and without them, and measured / simulated for both. pp 2 keeps one rank per core
# on a 2-core machine (the synthetic stage busy-waits).
set -euo pipefail
schedc=$1
shift
backends=("${@:-threads}")
[ $# -eq 0 ] && backends=(threads mpi)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf '%-8s %4s %10s %10s %10s %10s %10s %9s %9s\n' backend vpp measured sim+ovh sim-ovh ratio+ ratio- ovh/act ovh/msg
for backend in "${backends[@]}"; do
  for v in 1 2 4; do
    spec="$dir/v$v.sched"
    f=$(awk -v v="$v" 'BEGIN { print 200 / v }')
    w=$(awk -v v="$v" 'BEGIN { print 100 / v }')
    printf 'ranks = 2\nstages_per_rank = %s\nmicrobatches = 8\nbackward = split\n' "$v" > "$spec"
    printf 'cost { F = %sus  B = %sus  W = %sus }\n' "$f" "$f" "$w" >> "$spec"
    printf 'schedule = solve { time_limit = 5  deterministic = true }\nruntime { stage = synthetic }\n' >> "$spec"
    # The work stays as stated (it is what the synthetic stage holds); comm and the overheads are
    # the profiler's, comm less the message's cost at its two ends (as `profile --write` does).
    "$schedc" profile "$spec" --backend "$backend" --format json > "$dir/p$v.json" 2> /dev/null
    read -r comm ao mo < <(python3 -c 'import json, sys
p = json.load(open(sys.argv[1]))
mo = p["message_overhead"] or 0
print(max(0.0, (p["comm"] or 0) - 2 * mo), p["action_overhead"], mo)' "$dir/p$v.json")
    cost="comm=${comm}us,action_overhead=${ao}us,message_overhead=${mo}us"
    "$schedc" schedule "$spec" --cost "$cost" -o "$dir/s$v.json" 2> /dev/null
    with=$("$schedc" simulate "$dir/s$v.json" --format json 2> /dev/null | sed -n 's/^{"makespan": \([0-9.e+-]*\),.*/\1/p')
    without=$("$schedc" simulate "$dir/s$v.json" --cost action_overhead=0,message_overhead=0 --format json 2> /dev/null |
      sed -n 's/^{"makespan": \([0-9.e+-]*\),.*/\1/p')
    measured=$("$schedc" run "$dir/s$v.json" --backend "$backend" --stage synthetic --steps 5 --format json 2> /dev/null |
      python3 -c 'import json, statistics, sys; print(statistics.median(json.load(sys.stdin)["step_makespans_s"]) * 1e6)')
    awk -v b="$backend" -v v="$v" -v m="$measured" -v w="$with" -v o="$without" -v ao="$ao" -v mo="$mo" \
      'BEGIN { printf "%-8s %4d %10.1f %10.1f %10.1f %10.3f %10.3f %9.3g %9.3g\n", b, v, m, w, o, m / w, m / o, ao, mo }'
  done
done
