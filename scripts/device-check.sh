#!/bin/bash
# The next device run for issue 32 (a 16-CPU host), as the check.sh of
# ../shared/tools/host-kit.sh's kit: after `../shared/tools/host-kit.sh`,
#   cp scripts/device-check.sh target/devkit/check.sh
# then run `bash target/devkit/check.sh` there with carry ["target/devkit"];
# everything lands in $OUT/h16.tgz. About 5 minutes on the 16-CPU host.
# 1. calibrate with the cross-CPU streams, the N-writer streams and the
#    all-CPUs-at-once streams (`*_stream_100_all`: the all-core cost that
#    docs/model.md names as a lead for messaging's remaining gap);
# 2. validate bench on that calibration at 1, 2, 4, 8 and 16 groups against
#    issue 32's targets (2 and 8 were kept back from the fit);
# 3. the messaging runs recorded in --real-from's layout for 2 and 8 groups.
cd "$(dirname "$0")"; K=$PWD; R=$OUT/h16; mkdir -p $R/raw; export PATH=$K/bin:$PATH
{ date -u; uname -a; nproc; cat /proc/loadavg; } > $R/host.txt 2>&1
timeout 120 schedlab calibrate --output $R/host.toml > $R/calibrate.txt 2>&1
timeout 300 schedlab validate bench --machine $R/host.toml --groups 1,2,4,8,16 --targets host16 \
    --wait-idle 5 --json $R/vb.json > $R/vb.txt 2>&1
for g in 2 8; do l=$((3000 / g)); for v in "" "-p" "-t" "-p -t"; do n=$(echo "s$v" | tr -d ' -')
  for rep in 1 2 3 4 5; do timeout 20 perf stat -x, -e context-switches,cpu-migrations,task-clock -- \
      perf bench sched messaging $v -g $g -l $l >> $R/raw/${n}_g${g}_l${l}.txt 2>&1; done
done; done
cd $OUT && tar czf h16.tgz h16 && rm -rf h16
