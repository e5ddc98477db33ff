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
 * its stream offset and both ends' byte counts are compared: a fast wrong run fails.
 *
 * Variants (host end, ring layout and backend settings) run alternately, A B A B ..., each
 * as a fresh backend instance that runs every case; the summary gives medians per variant
 * and their ratios. See doc/performance.md.
 *
 * --isolation instead measures what a VM's flood costs its neighbour on one lcore (perf_iso.c),
 * --scale what idle VMs cost a worker lcore and the one VM on it that works (perf_scale.c).
 *
 * The files, each using only those listed after it: vsock_perf.c (this one: main), the
 * report (perf_report.c), the parts (perf_iso.c, perf_scale.c), a variant's run
 * (perf_variant.c), a case's window (perf_case.c), its connections (perf_conn.c), the
 * backend's counters (perf_probe.c), the engine in this process (perf_native.c), the
 * pattern, clock and reference limits (perf_refs.c), the figures drawn from samples
 * (perf_stats.c), the command line (perf_args.c). The run's context is perf.h's struct
 * perf_run, which main() hands down by pointer.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "perf.h"
#include "perf_iso.h"
#include "perf_native.h"
#include "perf_refs.h"
#include "perf_report.h"
#include "perf_scale.h"
#include "perf_variant.h"

/* A part that is its own run instead of the cases: its JSON, then its table. */
static int run_part(struct perf_run *run, bool (*part)(struct perf_run *run),
		    void (*print)(const struct perf_run *run, FILE *f))
{
	bool ok = part(run);

	if (run->plan.json)
		perf_report_write_json(run, run->plan.json);
	print(run, stdout);
	return ok ? 0 : 1;
}

/* Every variant's cases, A B A B ...; their JSON, then the table. The exit status. */
static int run_cases(struct perf_run *run)
{
	const struct plan *plan = &run->plan;
	bool native_up = false;
	unsigned int rep, v;

	if (plan->refs)
		perf_refs_measure(plan, run->pat, &run->refs);
	/* After the references: they fork and pin, the EAL's threads should not see that. */
	if (plan->hosts[H_NATIVE]) {
		int rc = perf_native_init(&run->native);

		if (rc < 0) {
			fprintf(stderr, "vsock-perf: EAL for the native host end: %s\n",
				strerror(-rc));
			return 1;
		}
		native_up = true;
		perf_pin(0);
	}
	/* A B A B ...: drift and neighbours' noise hit every variant alike. */
	for (rep = 0; rep < plan->reps; rep++)
		for (v = 0; v < plan->nb_variants; v++)
			if (!perf_run_variant(run, v, rep))
				fprintf(stderr, "vsock-perf: variant %s rep %u: the app did not "
					"exit cleanly\n", plan->variants[v].name, rep);
	if (native_up)
		perf_native_fini(&run->native);
	if (plan->json)
		perf_report_write_json(run, plan->json);
	perf_report_print(run, stdout);
	for (v = 0; v < run->nb_results; v++)
		if (!run->results[v].ok)
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	struct perf_run *run = calloc(1, sizeof(*run));
	uint8_t *pat = perf_pat_new();
	struct rlimit nofile;
	int rc;

	if (run == NULL || pat == NULL)
		return 1;
	run->pat = pat;
	run->rss_default_kib = -1;
	perf_parse_args(argc, argv, &run->plan);
	/* The installed vsock-perf runs the app installed beside it unless told otherwise. */
	if (run->plan.hosts[H_UDS] && getenv("VSOCK_APP") == NULL &&
	    setenv("VSOCK_APP", VSOCK_APP_DEFAULT, 0) < 0) {
		fprintf(stderr, "vsock-perf: set VSOCK_APP to the dpdk-vsock-app binary\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	run->pconns = calloc(MAX_CONNS, sizeof(*run->pconns));
	run->rtts = calloc(RTT_MAX, sizeof(*run->rtts));
	if (run->pconns == NULL || run->rtts == NULL)
		return 1;
	signal(SIGPIPE, SIG_IGN);
	/* 1023 connections: a host socket each here, and as many in the app (our child). */
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	/* The isolation part (one app with two VMs) and the scale part (one app per VM count). */
	if (run->plan.scale)
		rc = run_part(run, perf_scale_run, perf_scale_print);
	else if (run->plan.isolation)
		rc = run_part(run, perf_iso_run, perf_iso_print);
	else
		rc = run_cases(run);
	free(run->scale.results);
	free(run->rtts);
	free(run->pconns);
	free(pat);
	free(run);
	return rc;
}
