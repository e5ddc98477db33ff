/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vsock-perf's run: the one context every part of it works on, passed by pointer (main()
 * in vsock_perf.c owns it). One process, one thread: what the command line asked for, the
 * backend under test and the guest attached to it, the connections of the case running,
 * and the results of each part.
 */
#ifndef APP_VSOCK_PERF_PERF_H
#define APP_VSOCK_PERF_PERF_H

#include <stdint.h>

#include "ops_env.h"
#include "perf_args.h"
#include "perf_case.h"
#include "perf_conn.h"
#include "perf_iso.h"
#include "perf_native.h"
#include "perf_probe.h"
#include "perf_refs.h"
#include "perf_scale.h"

/*
 * How long a control step may take: a console command's answer, a connection's handshake
 * or close, a vhost-user socket appearing, the engine taking a guest over.
 */
#define STEP_TIMEOUT_MS 5000
/*
 * How long data may stand still before a transfer has stalled: a round trip, what was in
 * flight after a window, a window in which no byte arrived, the flood's drain.
 */
#define STALL_TIMEOUT_NS 5000000000ull
/* Cases of one run, at most. */
#define MAX_RESULTS 4096
/* Round trips kept per case (rr) or condition (isolation). */
#define RTT_MAX (1u << 21)

struct perf_run {
	struct plan plan;
	const uint8_t *pat;		/* what every stream carries (perf_pat_new()) */
	/* The host end of the backend running now. */
	enum host host;
	/* The app under test (uds host end) and the frontend attached to it (either end). */
	struct ops_env env;
	/* The engine in this process (native host end). */
	struct perf_native native;
	struct perf_probe probe;
	/* The connections of the case running now, and its round trips (rr). */
	struct pconn *pconns;		/* MAX_CONNS */
	uint64_t *rtts;			/* RTT_MAX */
	/* What a Unix socket host end reads into before it checks it. */
	uint8_t rbuf[PERF_PAT_RUN];

	/* The cases' results, and what the report prints beside them. */
	struct result results[MAX_RESULTS];
	unsigned int nb_results;
	struct refs refs;
	/* The app's RSS with its default options, KiB (-1: not measured). */
	long rss_default_kib;
	/* Native host mbufs that did not come back to their pool, over every native run. */
	unsigned int native_lost;
	/* The parts run instead of the cases. */
	struct perf_iso iso;
	struct perf_scale scale;
};

#endif /* APP_VSOCK_PERF_PERF_H */
