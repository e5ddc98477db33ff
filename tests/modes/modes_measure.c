/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What each wait mode costs when VMs are idle and what it costs the first packet after
 * idleness (doc/performance.md, "Wait modes"). Not a test: it prints a table.
 *
 *   VSOCK_APP=build/app/dpdk-vsock-app/dpdk-vsock-app build/tests/modes/modes-measure [S]
 *
 * Per mode (poll, notify, adaptive with the default --idle-us), one app with one VM and one
 * connection each way:
 * - idle CPU: the app's user + system time over S seconds (default 5) with no traffic;
 * - 64-byte round trips back to back (warm), and after 50 ms of idleness, started by the
 *   host (host -> guest -> host: the host socket wakes a sleeping worker) and by the guest
 *   (guest -> host -> guest: a kick wakes it).
 */
#include <stdio.h>
#include <stdlib.h>

#include "modes_util.h"

#define WARM 200
#define COLD 30
#define COLD_IDLE_US 50000
#define WAIT_MS 3000

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Median and 90th percentile of @p n round trips, in us, or -1 -1 if one failed. */
static void
rtts(struct md_env *m, bool from_host, unsigned int n, unsigned int idle_us, double *p50,
	double *p90)
{
	static int64_t ns[WARM];
	unsigned int i;

	*p50 = *p90 = -1;
	for (i = 0; i < n; i++) {
		if (idle_us)
			md_sleep_us(idle_us);
		ns[i] = md_round_trip(m, from_host, 64, WAIT_MS);
		if (ns[i] < 0) {
			fprintf(stderr, "round trip %u: %s\n", i, m->why);
			return;
		}
	}
	qsort(ns, n, sizeof(ns[0]), cmp_i64);
	*p50 = ns[n / 2] / 1e3;
	*p90 = ns[n * 9 / 10] / 1e3;
}

int
main(int argc, char **argv)
{
	static const char *const modes[] = { "poll", "notify", "adaptive" };
	unsigned int secs = argc > 1 ? (unsigned int)atoi(argv[1]) : 5, i;
	static struct md_env m;

	printf("| mode | idle CPU (%% of a core, %u s) | warm RTT p50 / p90 us | after 50 ms idle, "
	       "host first p50 / p90 us | guest first p50 / p90 us |\n|---|---|---|---|---|\n",
	       secs);
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		const char *extra[] = { "--wait-mode", modes[i], NULL };
		double cpu, w50, w90, h50, h90, g50, g90;

		if (md_start(&m, extra) < 0) {
			fprintf(stderr, "%s: %s\n", modes[i], m.why);
			md_stop(&m, true);
			return 1;
		}
		md_sleep_us(1000000);
		cpu = md_idle_cpu(&m, secs * 1000);
		rtts(&m, true, WARM, 0, &w50, &w90);
		rtts(&m, true, COLD, COLD_IDLE_US, &h50, &h90);
		rtts(&m, false, COLD, COLD_IDLE_US, &g50, &g90);
		printf("| %s | %.1f | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f |\n", modes[i],
		       cpu * 100, w50, w90, h50, h90, g50, g90);
		fflush(stdout);
		if (md_stop(&m, false) != 0)
			fprintf(stderr, "%s: the app did not exit cleanly\n", modes[i]);
	}
	return 0;
}
