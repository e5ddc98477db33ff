/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vsock-perf: throughput and latency of dpdk-vsock, driven through the userspace
 * vhost-user frontend (lib/vsock_frontend/), with one of two host ends:
 * - uds: dpdk-vsock-app in its own process, the host programs on its hybrid Unix sockets;
 * - native: the accelerator in this process (perf_native.c), the host program on the
 *   native poll-mode API (mbufs through rings, no syscall).
 *
 * This process plays both the guest and the host end on CPU 0: the guest driver polls its
 * rings (no interrupts, no kicks unless the backend asks for them), the host end uses
 * non-blocking sockets or the native calls. The backend's worker lcore has CPU 1 to
 * itself, so what is measured is the backend. Every byte is checked against the pattern at
 * its stream offset and both ends' checksums and byte counts are compared: a fast wrong run
 * fails.
 *
 * Variants (host end, ring layout and backend settings) run alternately, A B A B ..., each
 * as a fresh backend instance that runs every case; the summary gives medians per variant
 * and their ratios. See doc/performance.md.
 *
 * --isolation instead measures what a VM's flood costs its neighbour on one lcore (perf_iso.c),
 * --scale what idle VMs cost a worker lcore and the one VM on it that works (perf_scale.c).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "vsock_perf.h"

struct plan plan;
struct result results[MAX_RESULTS];
unsigned int nb_results;
struct ops_env env;
uint64_t *rtts;
struct pconn *pconns;
enum host cur_host;
unsigned int native_lost;
static bool native_up;

const char *const mode_name[M_NB] = { "g2h", "h2g", "rr" };
const char *const host_name[H_NB] = { "uds", "native" };
const char *const ring_name[R_NB] = { "split", "packed" };

/* A part that is its own run instead of the cases: its JSON, then its table. */
static int run_part(bool (*run)(void), void (*print)(FILE *f))
{
	bool ok = run();

	if (plan.json)
		perf_write_json(plan.json);
	print(stdout);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct rlimit nofile;
	unsigned int rep, v;

	perf_parse_args(argc, argv);
	/* The installed vsock-perf runs the app installed beside it unless told otherwise. */
	if (plan.hosts[H_UDS] && getenv("VSOCK_APP") == NULL &&
	    setenv("VSOCK_APP", VSOCK_APP_DEFAULT, 0) < 0) {
		fprintf(stderr, "vsock-perf: set VSOCK_APP to the dpdk-vsock-app binary\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	perf_pat_init();
	pconns = calloc(1024, sizeof(*pconns));
	rtts = calloc(RTT_MAX, sizeof(*rtts));
	if (pconns == NULL || rtts == NULL)
		return 1;
	signal(SIGPIPE, SIG_IGN);
	/* 1023 connections: a host socket each here, and as many in the app (our child). */
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	/* The isolation part (one app with two VMs) and the scale part (one app per VM count). */
	if (plan.scale)
		return run_part(perf_run_scale, perf_print_scale_table);
	if (plan.isolation)
		return run_part(perf_run_isolation, perf_print_iso_table);
	if (plan.refs)
		perf_measure_refs();
	/* After the references: they fork and pin, the EAL's threads should not see that. */
	if (plan.hosts[H_NATIVE]) {
		int rc = perf_native_init();

		if (rc < 0) {
			fprintf(stderr, "vsock-perf: EAL for the native host end: %s\n",
				strerror(-rc));
			return 1;
		}
		native_up = true;
		perf_pin(0);
	}
	/* A B A B ...: drift and neighbours' noise hit every variant alike. */
	for (rep = 0; rep < plan.reps; rep++)
		for (v = 0; v < plan.nb_variants; v++)
			if (!perf_run_variant(v, rep))
				fprintf(stderr, "vsock-perf: variant %s rep %u: the app did not "
					"exit cleanly\n", plan.variants[v].name, rep);
	if (native_up)
		perf_native_fini();
	if (plan.json)
		perf_write_json(plan.json);
	perf_print_table(stdout);
	for (v = 0; v < nb_results; v++)
		if (!results[v].ok)
			return 1;
	return 0;
}
