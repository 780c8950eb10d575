#!/bin/bash
# Issue 32's second device run of 2026-11-27 (the 16-CPU host), as the check.sh of
# ../shared/tools/host-kit.sh's kit: after `../shared/tools/host-kit.sh`,
#   cp scripts/device-check-mix.sh target/devkit/check.sh
# then run `bash target/devkit/check.sh` there with carry ["target/devkit"];
# everything lands in $OUT/h16.tgz. About 2 minutes.
# 1. calibrate twice (the run-to-run spread), now with the writers taking turns
#    (`*_rotate_*`: messages from mixed CPUs without contention) and the mix lines
#    derived from them;
# 2. the messaging curve and perf bench sched pipe recorded in validate bench's
#    --real-from layout (5 runs each, G = 1, 2, 4, 8, 16, L = 3000/G), so the model
#    with and without the mix lines is compared offline against the same real runs.
cd "$(dirname "$0")"; K=$PWD; R=$OUT/h16; mkdir -p $R/raw; export PATH=$K/bin:$PATH
{ date -u; uname -a; nproc; cat /proc/loadavg; schedlab --version; } > $R/host.txt 2>&1
step() { echo "$(date +%s) $*" >> $R/steps.txt; }
step calibrate1; timeout 90 schedlab calibrate --output $R/host1.toml > $R/calibrate1.txt 2>&1
step calibrate2; timeout 90 schedlab calibrate --output $R/host.toml > $R/calibrate.txt 2>&1
step messaging
for g in 1 2 4 8 16; do l=$((3000 / g)); for v in "" "-p" "-t" "-p -t"; do n=$(echo "s$v" | tr -d ' -')
  for rep in 1 2 3 4 5; do timeout 20 perf stat -x, -e context-switches,cpu-migrations,task-clock -- \
      perf bench sched messaging $v -g $g -l $l >> $R/raw/${n}_g${g}_l${l}.txt 2>&1; done
done; done
step pipe
for rep in 1 2 3 4 5; do
  timeout 20 perf stat -x, -e context-switches,cpu-migrations,task-clock -- perf bench sched pipe -l 100000 >> $R/raw/unpinned_l100000.txt 2>&1
  timeout 20 perf stat -x, -e context-switches,cpu-migrations,task-clock -- taskset -c 0 perf bench sched pipe -l 100000 >> $R/raw/pinned_l100000.txt 2>&1
done
echo "16-CPU host (device run of 2026-11-27, second), messaging and pipe, 5 runs each" > $R/raw/README.md
step done
cd $OUT && tar czf h16.tgz h16 && rm -rf h16
