// NI_RANDOM probe: CPU 1 holds two spinners pinned to it (the root domain
// is overloaded, nothing can be pulled), CPU 0 a task that sleeps 200 us at
// a time (it goes newly idle ~5,000 times a second; every newidle balance
// fails). After WARM seconds the parent widens spinner A's affinity to
// CPUs 0-1; A then reports how long it took to run on CPU 0. Without
// NI_RANDOM the next newidle balance (within ~200 us) pulls it; with it,
// the failures have driven the domain's success ratio to ~0 and the pull
// waits for a periodic or nohz idle balance, which refuses the cache-hot
// spinner until enough of them failed (tens of ms either way).
// Simulated: docs/host-tools/ni_probe.json (the same three tasks; task a's
// first phase ends after 1.5 s of CPU, about 3 s in), with --trace, and the
// first switch to a on CPU 0 after that.
// Build: cc -O2 -o ni_probe ni_probe.c    Usage: ./ni_probe [WARM_SECONDS]
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "proc_sched.h"
static void pin(pid_t p,int a,int b){cpu_set_t s;CPU_ZERO(&s);CPU_SET(a,&s);if(b>=0)CPU_SET(b,&s);sched_setaffinity(p,sizeof s,&s);}
int main(int argc,char**argv){
  double warm=argc>1?atof(argv[1]):3.0;
  volatile long *widened=mmap(0,4096,PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0);
  *widened=0;
  pid_t a=fork(); if(!a){pin(0,1,-1); for(;;){ long w=*widened; if(w && sched_getcpu()==0){printf("%.1f\n",(now_ns()-w)/1e3);fflush(stdout);_exit(0);} } }
  pid_t b=fork(); if(!b){pin(0,1,-1); for(;;); }
  pid_t c=fork(); if(!c){pin(0,0,-1); struct timespec ts={0,200000}; for(;;){ spin(20000); nanosleep(&ts,0);} }
  usleep((long)(warm*1e6));
  *widened=now_ns(); pin(a,0,1);
  int st; waitpid(a,&st,0);
  kill(b,9); kill(c,9); waitpid(b,0,0); waitpid(c,0,0);
  return 0;
}
