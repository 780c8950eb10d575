#!/bin/sh
# The closed loop's first divergence: record hackbench (one group, 20
# loops) on vm-2 with noise off, replay it, and print where the two
# sequences of sched_switch, sched_wakeup and sched_wakeup_new lines first differ (which
# task, which CPU), with the lines around it side by side (recorded | replayed).
# Usage: scripts/closed-loop-divergence.sh BIN SEED [FLAGS...]
set -eu
b=$1 seed=$2
shift 2
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
common="--machine vm-2 --seed $seed --set noise.enabled=false"
"$b" run $common -w hackbench:groups=1,loops=20 --trace "$d/r.txt" --trace-syscalls -q "$@" >/dev/null
"$b" replay "$d/r.txt" $common --trace "$d/p.txt" -q "$@" >/dev/null 2>&1
for f in r p; do
    grep -E "sched_switch|sched_wakeup" "$d/$f.txt" |
        sed -E 's/^ *(\S+) +\[(...)\] .... +([0-9.]+): (sched_\w+): (.*)/\3 \2 \4 \5/' |
        sed -E 's/(prev|next)_comm=\S+ //g; s/(prev|next)_prio=[0-9]+ ?//g; s/comm=\S+ //; s/prio=[0-9]+ //' >"$d/$f.sw"
    cut -d' ' -f2- "$d/$f.sw" >"$d/$f.k"
done
n=$(cmp "$d/r.k" "$d/p.k" | grep -o 'line [0-9]*' | cut -d' ' -f2 || true)
if [ -z "$n" ]; then
    echo "no divergence: $(wc -l <"$d/r.k") lines identical"
    exit 0
fi
echo "first divergence at line $n"
from=$((n > 4 ? n - 4 : 1))
sed -n "$from,$((n + 6))p" "$d/r.sw" | cut -c1-75 >"$d/a"
sed -n "$from,$((n + 6))p" "$d/p.sw" | cut -c1-75 >"$d/b"
paste -d'|' "$d/a" "$d/b"
