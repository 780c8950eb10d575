#!/bin/bash
# Issue 32's next device run (prepared 2026-11-27, twelfth session, not yet run), as the check.sh of
# ../shared/tools/host-kit.sh's kit: after `../shared/tools/host-kit.sh`,
#   cc -O2 -o target/devkit/bin/timer_sleep_lengths docs/host-tools/timer_sleep_lengths.c
#   cc -O2 -o target/devkit/bin/timer_cputime docs/host-tools/timer_cputime.c
#   cp scripts/device-check-gated.sh target/devkit/check.sh
# then run `bash target/devkit/check.sh` there with carry ["target/devkit"];
# everything lands in $OUT/h16.tgz. About 5 minutes (each calibrate about 80 s there).
# 1. calibrate three times: the writers held back in user space (`*_gated_*`:
#    N writers at once into one reader, the buffer never full, so no EAGAIN
#    retries) against the turn-taking streams (`*_rotate_*`) say what contending
#    for one pipe's mutex or one socket's locks costs, which messaging's pipe
#    senders pay and the model may lack (docs/model.md, "Pipes: switches short");
#    three runs give the spread of that difference;
# 2. the sleeper's CPU time by sleep length (docs/host-measurements.md §22) and
#    timer_cputime, for issue 32 part 6's residue on a second host;
# 3. pipe messaging recorded at G = 1, 4, 16 (5 runs each, L = 3000/G) in
#    validate bench's --real-from layout, to compare offline with the model.
cd "$(dirname "$0")"; K=$PWD; R=$OUT/h16; mkdir -p $R/raw; export PATH=$K/bin:$PATH
{ date -u; uname -a; nproc; cat /proc/loadavg; schedlab --version; } > $R/host.txt 2>&1
step() { echo "$(date +%s) $*" >> $R/steps.txt; }
for i in 1 2 3; do step calibrate$i; timeout 100 schedlab calibrate --output $R/host$i.toml > $R/calibrate$i.txt 2>&1; done
step timer
[ -x $K/bin/timer_sleep_lengths ] && timeout 30 $K/bin/timer_sleep_lengths 1 > $R/timer_sleep_lengths.txt 2>&1
[ -x $K/bin/timer_cputime ] && for rep in 1 2; do timeout 10 $K/bin/timer_cputime 1; done > $R/timer_cputime.txt 2>&1
step messaging
for g in 1 4 16; do l=$((3000 / g)); for v in "-p" "-p -t"; do n=$(echo "s$v" | tr -d ' -')
  for rep in 1 2 3 4 5; do timeout 20 perf stat -x, -e context-switches,cpu-migrations,task-clock -- \
      perf bench sched messaging $v -g $g -l $l >> $R/raw/${n}_g${g}_l${l}.txt 2>&1; done
done; done
echo "16-CPU host (device run prepared 2026-11-27, twelfth session), pipe messaging, 5 runs each" > $R/raw/README.md
step done
cd $OUT && tar czf h16.tgz h16 && rm -rf h16
