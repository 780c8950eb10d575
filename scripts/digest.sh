#!/bin/sh
# Results digest: run representative scenarios with --json, drop the
# wall-clock fields, hash the rest. Identical digests before and after a
# refactoring mean identical results.
# Usage: scripts/digest.sh [path/to/schedlab]   (default target/release/schedlab)
set -eu
bin=${1:-target/release/schedlab}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
n=0
case_() {
    n=$((n + 1))
    "$bin" "$@" -q --json "$dir/$n.json" >/dev/null
    # Strip wall-clock fields (sim.wall_ns and any *wall* key) and meta
    # (build, command line, date), sort keys.
    python3 -c '
import json, sys
def clean(x):
    if isinstance(x, dict):
        return {k: clean(v) for k, v in x.items() if "wall" not in k and k != "meta"}
    if isinstance(x, list):
        return [clean(v) for v in x]
    return x
print(json.dumps(clean(json.load(open(sys.argv[1]))), sort_keys=True))
' "$dir/$n.json" | sha256sum | cut -c1-16 | sed "s|^|$n |"
}
case_ run --machine xeon-8269cy --workload hackbench:groups=2,loops=200 --seed 1
case_ run --machine vm-2 --workload pipe:loops=20000
case_ run --machine xeon-8269cy --workload schbench:m=2,t=8 --duration 1s
case_ run --cgroup /a:weight=300 --cgroup '/b:max=20000 100000' \
    -w periodic:tasks=4,run=2ms,sleep=1ms,cgroup=/a -w periodic:tasks=4,cgroup=/b --duration 1s
case_ run --machine power10-96 -w stress-ng:cpu=24,cpu-load=50 --duration 1s
case_ run scenarios/seed-003-completion/forky.toml --set kernel.completion='"swait-defer"'
case_ run scenarios/seed-003-completion/irq-complete-64.toml --duration 500ms
case_ run scenarios/cyclictest-preempt.toml --duration 500ms
case_ run --machine smp:cpus=4 --workload kthread:count=20 --workload kernbench:jobs=4,files=20
for t in tests/data/*.perf.txt; do
    case_ replay "$t" --machine smp:cpus=4
done
case_ run --machine vm-2 --workload rtapp:tests/data/rtapp-example.json --duration 1s
# Output files other than the JSON: the trace writers and schedstat.
file_() {
    n=$((n + 1))
    out=$1
    shift
    "$bin" "$@" -q >/dev/null
    sha256sum "$out" | cut -c1-16 | sed "s|^|$n |"
}
file_ "$dir/t.txt" run --machine vm-2 --workload hackbench:groups=1,loops=50 --trace "$dir/t.txt"
file_ "$dir/t.json" run --machine vm-2 --workload hackbench:groups=1,loops=50 \
    --trace "$dir/t.json" --trace-format chrome --trace-pelt 1
file_ "$dir/s.txt" run --machine power10-96 -w stress-ng:cpu=24 --duration 200ms --schedstat "$dir/s.txt"
