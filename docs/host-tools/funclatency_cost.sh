#!/bin/bash
# funclatency's cost per call (docs/host-measurements.md §23): 3 rounds on
# vCPU $CPU of 1M getppid calls bare, then with funclatency_cost.bt
# attached (bpftrace 0.17, Debian's); prints each round's ns per call,
# the difference, and the in-window average and median the probes saw.
# Needs: gcc -O2 -o funclatency_cost funclatency_cost.c; run as root.
set -e
cd "$(dirname "$0")"
CPU=${CPU:-1}
N=${N:-1000000}
for r in 1 2 3; do
  off=$(taskset -c "$CPU" ./funclatency_cost "$N")
  out=$(mktemp)
  bpftrace funclatency_cost.bt > "$out" 2>/dev/null &
  bp=$!
  until grep -q Attaching "$out"; do sleep 0.2; done
  sleep 0.5
  on=$(taskset -c "$CPU" ./funclatency_cost "$N")
  kill -INT $bp
  wait $bp || true
  avg=$(awk '/^@avg/ {print $2}' "$out")
  med=$(awk -F'[][,) ]+' '/^\[/ {lo[++m]=$2; c[m]=$4; n+=$4} END {for (j=1;j<=m;j++) {s+=c[j]; if (2*s>=n) {print lo[j]; exit}}}' "$out")
  echo "cpu $CPU round $r off_ns $off on_ns $on diff_ns $(echo "$on - $off" | bc) in_window_avg_ns $avg median_bucket_ns $med load $(cut -d' ' -f1 /proc/loadavg)"
  rm -f "$out"
done
