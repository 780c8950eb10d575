#!/bin/bash
# The next device run for issue 32 (a 16-CPU host), as the check.sh of
# ../shared/tools/host-kit.sh's kit: after `../shared/tools/host-kit.sh`,
#   cp scripts/device-check.sh target/devkit/check.sh
#   cc -O2 -pthread -o target/devkit/bin/xcpu docs/host-tools/xcpu.c
#   cc -O2 -o target/devkit/bin/timer_cputime docs/host-tools/timer_cputime.c
# then run `bash target/devkit/check.sh` there with carry ["target/devkit"];
# everything lands in $OUT/h16.tgz. About 7 minutes on the 16-CPU host.
# 1. calibrate with the cross-CPU streams, the N-writer streams and the
#    all-CPUs-at-once streams (`*_stream_100_all`: the all-core cost that
#    docs/model.md names as a lead for messaging's remaining gap);
# 2. validate bench on that calibration at 1, 2, 4, 8 and 16 groups against
#    issue 32's targets (2 and 8 were kept back from the fit);
# 3. the messaging runs recorded in --real-from's layout for 2 and 8 groups;
# 4. where a message's CPU goes (issue 32's remaining gap: ~0.8 µs of CPU per
#    socket message at every group count, flat, so not contention): kernel
#    symbols of messaging, sockets at 1 and 16 groups and pipes at 4, sampled
#    with cpu-clock (a KVM guest may have no hardware counters), and of xcpu's
#    one-writer stream for comparison;
# 5. pipe switches (the model's pipe receivers sleep half as often): perf sched
#    of pipes at 4 groups, for reads per wakeup and wait per switch; and of
#    sockets at 16 groups (the model's socket switches rise with groups);
# 6. cycles and instructions of a socket message (if the guest has a PMU);
# 7. issue 32 part 6 on this host: a task woken by its own timer
#    (timer_cputime) against `periodic:tasks=1,run=1ms,sleep=9ms` simulated.
# steps.txt has each step's start time, to size the next run.
cd "$(dirname "$0")"; K=$PWD; R=$OUT/h16; mkdir -p $R/raw; export PATH=$K/bin:$PATH
{ date -u; uname -a; nproc; cat /proc/loadavg; schedlab --version; } > $R/host.txt 2>&1
step() { echo "$(date +%s) $*" >> $R/steps.txt; }
step calibrate
timeout 120 schedlab calibrate --output $R/host.toml > $R/calibrate.txt 2>&1
step validate; timeout 270 schedlab validate bench --machine $R/host.toml --groups 1,2,4,8,16 --targets host16 \
    --wait-idle 5 --json $R/vb.json > $R/vb.txt 2>&1
step messaging; for g in 2 8; do l=$((3000 / g)); for v in "" "-p" "-t" "-p -t"; do n=$(echo "s$v" | tr -d ' -')
  for rep in 1 2 3 4 5; do timeout 20 perf stat -x, -e context-switches,cpu-migrations,task-clock -- \
      perf bench sched messaging $v -g $g -l $l >> $R/raw/${n}_g${g}_l${l}.txt 2>&1; done
done; done
prof() { timeout 60 perf record -q -e cpu-clock -a -g -o $R/p.data -- "$@" > /dev/null 2>&1
  timeout 120 perf report -i $R/p.data --no-children --stdio --sort sym -g none 2>/dev/null | grep -v '^$' | head -150; rm -f $R/p.data; }
step profiles; prof perf bench sched messaging -g 1 -l 3000 > $R/prof_s_g1.txt
prof perf bench sched messaging -g 16 -l 188 > $R/prof_s_g16.txt
prof perf bench sched messaging -p -g 4 -l 750 > $R/prof_sp_g4.txt
[ -x $K/bin/xcpu ] && prof $K/bin/xcpu unix 0 8 300000 > $R/prof_xcpu_unix_1.txt
sched() { n=$1; shift; timeout 60 perf sched record -q -o $R/s.data -- "$@" > /dev/null 2>&1
  timeout 60 perf sched latency -i $R/s.data > $R/sched_latency_$n.txt 2>&1
  timeout 60 perf sched timehist -i $R/s.data -s 2>&1 | tail -1000 > $R/sched_timehist_$n.txt
  timeout 60 perf script -i $R/s.data -F comm,pid,cpu,time,event,trace 2>/dev/null | gzip > $R/sched_$n.txt.gz
  rm -f $R/s.data; }
step sched; sched sp_g4 perf bench sched messaging -p -g 4 -l 750
sched s_g16 perf bench sched messaging -g 16 -l 188
step pmu; timeout 30 perf stat -e cycles,instructions,cache-misses -- perf bench sched messaging -g 1 -l 3000 > $R/pmu_s_g1.txt 2>&1
[ -x $K/bin/xcpu ] && timeout 30 perf stat -e cycles,instructions,cache-misses -- $K/bin/xcpu unix 0 8 300000 > $R/pmu_xcpu_unix_1.txt 2>&1
step timer; [ -x $K/bin/timer_cputime ] && for rep in 1 2 3; do timeout 10 $K/bin/timer_cputime 1; done > $R/timer_cputime.txt 2>&1
timeout 60 schedlab run --machine $R/host.toml -w periodic:tasks=1,run=1ms,sleep=9ms --duration 2s --json $R/timer_sim.json > $R/timer_sim.txt 2>&1
step done
cd $OUT && tar czf h16.tgz h16 && rm -rf h16
