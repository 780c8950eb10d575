// throttle_read: reads MB megabytes from /dev/zero per call (a kernel-mode
// copy) for 3 s and prints each read()'s wall time, from user space to
// user space. Run it in a cpu cgroup with a 10 ms quota per 100 ms
// (cgroup v1: cpu.cfs_quota_us = 10000, cpu.cfs_period_us = 100000) with
// MB = 256 (11.2 ms of CPU per read here, just over the quota):
//   sh -c 'echo $$ > /sys/fs/cgroup/cpu/thr/tasks; exec taskset -c 0 ./throttle_read 256'
// Under 6.18's task-based throttling a read finishes in the kernel and the
// task is throttled on its way back to user space: every read takes one
// period, two when the accumulated overrun costs one. Under whole-group
// throttling (v6.15, and schedlab) the copy stops where the quota runs out
// and resumes in the next period, so reads straddle periods.
// Build: cc -O2 -o throttle_read throttle_read.c
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "proc_sched.h"
int main(int argc,char**argv){
  long sz=(argc>1?atol(argv[1]):32)<<20; char*b=malloc(sz); int fd=open("/dev/zero",O_RDONLY);
  for(long i=0;i<sz;i+=4096)b[i]=1;
  long end=now_ns()+3000000000L; int n=0;
  while(now_ns()<end){ long t0=now_ns(); if(read(fd,b,sz)!=sz)return 1; long t1=now_ns(); printf("%.2f\n",(t1-t0)/1e6); n++; }
  return 0;
}
