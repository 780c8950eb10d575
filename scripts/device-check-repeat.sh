#!/bin/bash
# Issue 32, the third device run of 2026-11-27 (the 16-CPU host), as the check.sh of
# ../shared/tools/host-kit.sh's kit: after `../shared/tools/host-kit.sh`,
#   cp scripts/device-check-repeat.sh target/devkit/check.sh
# then run `bash target/devkit/check.sh` there with carry ["target/devkit"];
# everything lands in $OUT/h16.tgz. About 3 minutes.
# 1. calibrate three more times: the spread of the mix lines (writers taking turns
#    against one writer), whose two first runs differed by up to 4 lines;
# 2. validate bench live on the last calibration (the model with the mix lines),
#    messaging at 1, 4 and 16 groups against issue 32's targets, waiting for an idle host.
cd "$(dirname "$0")"; K=$PWD; R=$OUT/h16; mkdir -p $R; export PATH=$K/bin:$PATH
{ date -u; uname -a; nproc; cat /proc/loadavg; schedlab --version; } > $R/host.txt 2>&1
step() { echo "$(date +%s) $*" >> $R/steps.txt; }
for i in 3 4 5; do step calibrate$i; timeout 90 schedlab calibrate --output $R/host$i.toml > $R/calibrate$i.txt 2>&1; done
step validate; timeout 200 schedlab validate bench --machine $R/host5.toml --groups 1,4,16 --targets host16 \
    --wait-idle 5 --json $R/vb.json > $R/vb.txt 2>&1
step done
cd $OUT && tar czf h16.tgz h16 && rm -rf h16
