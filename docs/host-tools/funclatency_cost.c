/*
 * funclatency's cost per call (docs/host-measurements.md §23): time N
 * getppid() system calls and print the ns per call (CLOCK_MONOTONIC).
 * Run it bare, then with funclatency_cost.bt attached; the difference is
 * the probes' round trip per call, the .bt's @avg and @h what funclatency
 * would report for the call (the in-window part).
 *   gcc -O2 -o funclatency_cost funclatency_cost.c
 *   taskset -c 1 ./funclatency_cost 1000000
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.1f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
	return 0;
}
