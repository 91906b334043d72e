// SPDX-License-Identifier: GPL-2.0
/*
 * cpu_spin: a CPU-bound program for the GSIM benchmark. For SECONDS it
 * repeats a fixed unit of integer work and prints how many units per
 * second it completed, as JSON: its throughput on a CPU it shares with
 * interrupts tells how much of that CPU they leave it.
 *
 * usage: cpu_spin SECONDS
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One unit: a thousand dependent multiply-adds the compiler cannot drop. */
static uint64_t unit(uint64_t x)
{
	int i;

	for (i = 0; i < 1000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

int main(int argc, char **argv)
{
	double secs, start, end;
	uint64_t units = 0, x = 1;

	secs = argc == 2 ? atof(argv[1]) : 0;
	if (secs <= 0) {
		fprintf(stderr, "usage: %s SECONDS\n", argv[0]);
		return 2;
	}
	start = now_s();
	do {
		x = unit(x);
		units++;
		end = now_s();
	} while (end - start < secs);
	printf("{\"units_per_s\": %.1f, \"seconds\": %.3f, \"check\": %llu}\n",
	       units / (end - start), end - start,
	       (unsigned long long)(x & 0xff));
	return 0;
}
