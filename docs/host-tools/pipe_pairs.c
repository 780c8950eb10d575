/* pipe_pairs: N writer/reader pairs passing a byte through two pipes,
 * every task pinned to CPU 0, `loops` round trips per pair (the loop of
 * `perf bench sched pipe`, perf 6.1). Each task reads its own
 * /proc/self/sched at the end; the sums say how often writers and readers
 * were switched out runnable (involuntary: preempted by a wakee) or
 * blocked (voluntary). No tracer runs, so nothing perturbs the split.
 * Compare with
 *   schedlab run --machine FILE.toml --set kernel.preempt=none \
 *     -w pipe:loops=20000,variant=pingpong,cpu=0   (once per pair)
 * and its tasks' nr_(in)voluntary_switches in --json.
 * Usage: ./pipe_pairs PAIRS LOOPS     Build: cc -O2 -o pipe_pairs pipe_pairs.c */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Shared counters: writer voluntary, involuntary; reader the same. */
static long *sums;

static void pin_cpu0(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* Adds this task's switch counts from /proc/self/sched to sums[at..at+1]. */
static void add_switches(int at)
{
	char line[256];
	long vol = 0, invol = 0;
	FILE *f = fopen("/proc/self/sched", "r");

	while (f && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (!colon)
			continue;
		if (strstr(line, "nr_voluntary_switches"))
			vol = atol(colon + 1);
		else if (strstr(line, "nr_involuntary_switches"))
			invol = atol(colon + 1);
	}
	if (f)
		fclose(f);
	__sync_fetch_and_add(&sums[at], vol);
	__sync_fetch_and_add(&sums[at + 1], invol);
}

static void run_pair(int loops)
{
	int a[2], b[2];
	char c = 'x';

	if (pipe(a) || pipe(b))
		exit(1);
	if (fork() == 0) {
		for (int i = 0; i < loops; i++)
			if (read(a[0], &c, 1) != 1 || write(b[1], &c, 1) != 1)
				exit(1);
		add_switches(2);
		exit(0);
	}
	for (int i = 0; i < loops; i++)
		if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1)
			exit(1);
	add_switches(0);
	wait(NULL);
	exit(0);
}

static double pct(long part, long whole)
{
	return whole ? 100.0 * part / whole : 0.0;
}

int main(int argc, char **argv)
{
	int pairs = argc > 1 ? atoi(argv[1]) : 1;
	int loops = argc > 2 ? atoi(argv[2]) : 100000;
	struct timespec t0, t1;

	sums = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sums == MAP_FAILED)
		return 1;
	pin_cpu0();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int k = 0; k < pairs; k++)
		if (fork() == 0)
			run_pair(loops);
	while (wait(NULL) > 0)
		;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	long all = sums[0] + sums[1] + sums[2] + sums[3];
	printf("pairs %d: %.2f usecs per round trip per pair; involuntary: writers %.1f %%, "
	       "readers %.1f %%, all %.1f %%\n",
	       pairs, secs * 1e6 / loops, pct(sums[1], sums[0] + sums[1]),
	       pct(sums[3], sums[2] + sums[3]), pct(sums[1] + sums[3], all));
	return 0;
}
