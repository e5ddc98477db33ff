/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The scale part (--scale): what a worker lcore's idle VMs cost it and the one VM that works.
 * For each count N of --vms, one app serves VMs 3 .. N + 2 (VM 3 with --vm, the others from a
 * --config file), every one polled by its one worker (lcore 1: checked in /vsock/lcores and
 * /vsock/config, not assumed), and this process attaches a userspace guest (the frontend and
 * its vfe_guest driver) to each. VM 3 is the active VM; the others stay attached, with no
 * connection and nothing posted but their rx buffers, and this thread never polls them.
 *
 * Each app, in this order:
 * - the idle window: every VM idle (VM 3 too, no connection open), this thread asleep for
 *   --time seconds on CPU 0; the worker's rounds and the TSC cycles spent inside them
 *   (record-core-cycles: the per-round timer around the loop over its VMs) read from
 *   /vsock/lcores before and after. Their quotient, over /vsock/config's tsc_hz, is the
 *   time of one idle round over N VMs; the window's wall time over its rounds is also kept
 *   (it adds the loop's own pause and mailbox check, and whatever preempted the worker).
 * - VM 3's 64 B ping-pong (the rr case of perf_case.c: host send to host receive, one
 *   connection), then its 64 KiB guest -> host stream (the g2h case, every byte checked).
 *
 * The cost per idle VM per round is the slope: (round time at N - round time at the smallest
 * count) / (N - that count), per repetition, then the median. It leaves out what a round
 * costs whatever the number of VMs (the loop, the timer's two TSC reads), which a plain round
 * time over N would spread over the VMs; the table shows that quotient too. The active VM's
 * figures are given against the smallest count's (the 1-VM figure with the default list),
 * also pair by pair within a repetition.
 *
 * Repetitions are the outer loop, the counts the inner one (1, 16, 64, 1, 16, 64, ...): the
 * machine changes speed from one minute to the next, and each count then sees every state.
 *
 * Resources: every VM of the app gets --mbufs SCALE_MBUFS payload mbufs, the same at every count
 * so that the figures compare: the default 8192 per VM would take 1.2 GiB at 64 VMs, over the
 * benchmark's -m 512 without hugepages; 256 leave VM 3's one connection more than its 256 KiB
 * of credit in 2 KiB mbufs, and 256 VMs fit in 512 MiB with them. Each guest's memory is a 64 MiB memfd, touched only where its rings and
 * buffers are (small buffers on the idle VMs). This process holds about a dozen fds per VM (its
 * vhost-user socket, memfd, kick and call eventfds); the app budgets its own, for which the
 * idle VMs take SCALE_IDLE_CONNS connections each. One app serves at most VSOCK_PMD_MAX_VMS VMs (include/vsock_pmd.h, 256): the engine's VM table,
 * and each worker's, are that long; --vms refuses larger counts.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_common.h>

#include "perf.h"
#include "perf_case.h"
#include "perf_scale.h"
#include "perf_stats.h"
#include "perf_variant.h"

/* Payload mbufs per VM, as an app option. */
#define SCALE_MBUFS "256"
/*
 * Connections of each idle VM, which opens none: the app budgets max-connections + 32
 * descriptors per VM and refuses to start beyond its hard limit, which the default 1023 would
 * pass at 256 VMs (about 270,000) on most machines.
 */
#define SCALE_IDLE_CONNS 16
/* Before the idle window: the attaches' last control work done. */
#define SCALE_SETTLE_US 100000
/* The guests' attaches and the engine's takeovers, all of them: longer than one's. */
#define SCALE_ATTACH_MS (4 * STEP_TIMEOUT_MS)

/* What the part runs its apps with. */
struct scale {
	/* Where the VMs' vhost-user sockets and the --config file go. */
	char dir[64];
	/* The idle VMs of the app running now: VMs 4 .. N + 2, in idle[0 .. N - 2]. */
	struct dp_env *idle;
	unsigned int nb_idle;
};

static void vm_path(const struct scale *sc, unsigned int cid, const char *what, char *buf,
		    size_t len)
{
	snprintf(buf, len, "%s/vm%u.%s", sc->dir, cid, what);
}

/* The --config file naming the idle VMs of an app of @p n VMs. 0 or -errno. */
static int write_config(const struct scale *sc, unsigned int n, char *path, size_t len)
{
	unsigned int cid;
	FILE *f;

	snprintf(path, len, "%s/scale.conf", sc->dir);
	f = fopen(path, "w");
	if (f == NULL)
		return -errno;
	for (cid = DP_CID + 1; cid < DP_CID + n; cid++) {
		char sock[96], uds[96];

		vm_path(sc, cid, "sock", sock, sizeof(sock));
		vm_path(sc, cid, "vsock", uds, sizeof(uds));
		fprintf(f, "vm cid=%u,socket=%s,uds=%s,max-connections=%u\n", cid, sock, uds,
			SCALE_IDLE_CONNS);
	}
	return fclose(f) == 0 ? 0 : -errno;
}

/* What is left of an app in the directory: the config, sockets it did not remove. */
static void clean_dir(const struct scale *sc, unsigned int n)
{
	char path[96];
	unsigned int cid;

	for (cid = DP_CID + 1; cid < DP_CID + n; cid++) {
		vm_path(sc, cid, "sock", path, sizeof(path));
		unlink(path);
		vm_path(sc, cid, "vsock", path, sizeof(path));
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/scale.conf", sc->dir);
	unlink(path);
}

/* Every VM on worker lcore 1, the only worker: the point of the part, so it is checked. */
static bool one_lcore(const struct perf_run *run, unsigned int n, char *err, size_t len)
{
	char json[OPS_TEL_MAX];
	uint64_t nb_lcores = 0, nb_vms = 0;

	if (ops_tel(&run->env, "/vsock/config", json, sizeof(json)) < 0 ||
	    ops_json_u64(json, "nb_lcores", &nb_lcores) < 0 ||
	    ops_tel(&run->env, "/vsock/lcores", json, sizeof(json)) < 0 ||
	    ops_json_u64(json, "1.nb_vms", &nb_vms) < 0) {
		snprintf(err, len, "no /vsock/config or /vsock/lcores reply");
		return false;
	}
	if (nb_lcores != 1 || nb_vms != n) {
		snprintf(err, len, "%llu worker lcores, %llu of the %u VMs polled by lcore 1",
			 (unsigned long long)nb_lcores, (unsigned long long)nb_vms, n);
		return false;
	}
	return true;
}

static bool all_polled(const struct perf_run *run, unsigned int n)
{
	return ops_tel_u64(&run->env, "/vsock/lcores", "1.nb_vms") == n;
}

/* The worker's rounds, busy rounds and cycles inside rounds; false if unread. */
static bool worker_rounds(const struct perf_run *run, uint64_t *rounds, uint64_t *busy,
			  uint64_t *cycles)
{
	char json[OPS_TEL_MAX];

	return ops_tel(&run->env, "/vsock/lcores", json, sizeof(json)) == 0 &&
	       ops_json_u64(json, "1.polls", rounds) == 0 &&
	       ops_json_u64(json, "1.busy_polls", busy) == 0 &&
	       ops_json_u64(json, "1.cycles", cycles) == 0;
}

/* The idle window (see the top): the worker's rounds with every VM idle. */
static bool idle_window(const struct perf_run *run, struct scale_result *r, char *err,
			size_t len)
{
	uint64_t hz = ops_tel_u64(&run->env, "/vsock/config", "tsc_hz");
	uint64_t n0, b0, c0, n1, b1, c1, t0, t1;

	usleep(SCALE_SETTLE_US);
	if (hz == UINT64_MAX || hz == 0 || !worker_rounds(run, &n0, &b0, &c0)) {
		snprintf(err, len, "the worker's counters could not be read");
		return false;
	}
	t0 = perf_now_ns();
	usleep((useconds_t)(run->plan.secs * 1e6));
	/*
	 * A loaded machine may not have run the worker at all in a short window: the window
	 * goes on until it counted a round, as a stream case's goes on until a byte arrives.
	 */
	do {
		t1 = perf_now_ns();
		if (!worker_rounds(run, &n1, &b1, &c1) || c1 < c0) {
			snprintf(err, len, "the worker's counters could not be read again");
			return false;
		}
		if (n1 > n0)
			break;
		usleep(1000);
	} while (t1 - t0 < STALL_TIMEOUT_NS);
	if (n1 <= n0) {
		snprintf(err, len, "the worker counted no round in %llu s",
			 (unsigned long long)(STALL_TIMEOUT_NS / 1000000000u));
		return false;
	}
	r->rounds = n1 - n0;
	r->busy_rounds = b1 - b0;
	r->round_ns = (double)(c1 - c0) / (double)r->rounds * 1e9 / (double)hz;
	r->wall_round_ns = (double)(t1 - t0) / (double)r->rounds;
	if (c1 == c0) {
		snprintf(err, len, "no cycles counted (record-core-cycles refused?)");
		return false;
	}
	return true;
}

/* One of VM 3's cases on one connection (perf_case.c), its failure in @p err. */
static bool active_case(struct perf_run *run, struct result *k, enum mode m, uint32_t payload,
			char *err, size_t len)
{
	int rc;

	memset(k, 0, sizeof(*k));
	/* Nothing open yet: what the closing below finds unset, it leaves alone. */
	memset(&run->pconns[0], 0, sizeof(run->pconns[0]));
	run->pconns[0].fd = -1;
	run->pconns[0].h = -1;
	k->mode = m;
	k->payload = payload;
	k->burst = run->plan.bursts[0];
	k->conns = 1;
	rc = perf_open_conns(run, m, 1);
	if (rc < 0)
		snprintf(k->err, sizeof(k->err), "VM 3's %s connection: %s", mode_name[m],
			 strerror(-rc));
	else if (m == M_RR)
		perf_run_rr(run, k);
	else
		perf_run_stream(run, k);
	perf_close_conns(run, 1);
	if (!k->ok)
		snprintf(err, len, "%s %u B: %.120s", mode_name[m], payload, k->err);
	return k->ok;
}

/* The part between the app's start and stop: attach every guest, measure. */
static bool measure(struct perf_run *run, struct scale *sc, struct scale_result *r, char *err,
		    size_t len)
{
	bool packed = run->plan.variants[0].ring == R_PACKED;
	/* VM 3 runs both cases on one attach: 64 B rx buffers, 64 KiB tx packets. */
	struct vfe_guest_conf ga = perf_guest_conf(M_RR, SCALE_PING);
	struct vfe_guest_conf gi = perf_guest_conf(M_RR, SCALE_PING);
	struct result k;
	unsigned int i;

	ga.tx_max_payload = SCALE_STREAM;
	if (perf_attach(run, &run->env.dp, packed, &ga, err, len) < 0)
		return false;
	for (i = 0; i < sc->nb_idle; i++) {
		struct dp_env *e = &sc->idle[i];

		vm_path(sc, DP_CID + 1 + i, "sock", e->sock, sizeof(e->sock));
		/* The app makes the sockets one after the other; it waited for VM 3's only. */
		if (!DP_WAIT(&run->env.dp, access(e->sock, F_OK) == 0, STEP_TIMEOUT_MS)) {
			snprintf(err, len, "no vhost-user socket %s", e->sock);
			return false;
		}
		if (perf_attach(run, e, packed, &gi, err, len) < 0)
			return false;
	}
	/* The engine takes each device over asynchronously; connect refuses until then. */
	if (!DP_WAIT(&run->env.dp, perf_vm_running(run, DP_CID) && all_polled(run, r->vms),
		     SCALE_ATTACH_MS)) {
		snprintf(err, len, "the engine did not start polling all %u guests", r->vms);
		return false;
	}
	if (!one_lcore(run, r->vms, err, len))
		return false;
	perf_guest_polling(run, &run->env.dp);
	for (i = 0; i < sc->nb_idle; i++)
		perf_guest_polling(run, &sc->idle[i]);
	if (!idle_window(run, r, err, len) ||
	    !active_case(run, &k, M_RR, SCALE_PING, err, len))
		return false;
	r->round_trips = k.msgs;
	r->p50 = k.p50;
	r->p99 = k.p99;
	if (!active_case(run, &k, M_G2H, SCALE_STREAM, err, len))
		return false;
	r->bytes = k.bytes;
	r->gbps = k.gbps;
	return true;
}

/* One app of @p r->vms VMs: started, measured, stopped. Whether all went well. */
static bool one_count(struct perf_run *run, struct scale *sc, struct scale_result *r)
{
	const struct variant *var = &run->plan.variants[0];
	char cfg[96], burst[16], err[160] = "";
	const char *extra[16] = { "--config", cfg, "--mbufs", SCALE_MBUFS, "--burst", burst };
	unsigned int i, n = 6;
	bool ok = false;
	int rc;

	snprintf(burst, sizeof(burst), "%u", run->plan.bursts[0]);
	for (i = 0; var->args[i] && n < RTE_DIM(extra) - 1; i++)
		extra[n++] = var->args[i];
	extra[n] = NULL;
	sc->nb_idle = r->vms - 1;
	sc->idle = calloc(RTE_MAX(sc->nb_idle, 1u), sizeof(*sc->idle));
	rc = sc->idle ? write_config(sc, r->vms, cfg, sizeof(cfg)) : -ENOMEM;
	if (rc < 0) {
		snprintf(err, sizeof(err), "the idle VMs' config: %s", strerror(-rc));
		goto out;
	}
	run->host = H_UDS;
	if (ops_start(&run->env, false, true, extra) < 0) {
		snprintf(err, sizeof(err), "the app did not start with %u VMs", r->vms);
		goto out;
	}
	perf_pin(0);
	if (!ops_cmd(&run->env, "set record-core-cycles on", "record-core-cycles on",
		     STEP_TIMEOUT_MS, NULL))
		fprintf(stderr, "vsock-perf: record-core-cycles refused\n");
	ok = measure(run, sc, r, err, sizeof(err));
	for (i = 0; i < sc->nb_idle; i++)
		dp_detach(&sc->idle[i]);
	if (ops_stop(&run->env) < 0 && ok) {
		ok = false;
		snprintf(err, sizeof(err), "the app did not exit cleanly");
	}
out:
	clean_dir(sc, r->vms);
	free(sc->idle);
	sc->idle = NULL;
	r->ok = ok;
	snprintf(r->err, sizeof(r->err), "%s", err);
	return ok;
}

bool perf_scale_run(struct perf_run *run)
{
	const struct plan *plan = &run->plan;
	struct perf_scale *ps = &run->scale;
	struct scale sc = { .idle = NULL };
	unsigned int rep, c;
	bool ok = true;

	snprintf(sc.dir, sizeof(sc.dir), "/tmp/vsock-scale-XXXXXX");
	ps->results = calloc((size_t)plan->reps * plan->nb_vm_counts, sizeof(*ps->results));
	if (ps->results == NULL || mkdtemp(sc.dir) == NULL) {
		fprintf(stderr, "vsock-perf: --scale: %s\n", strerror(errno));
		return false;
	}
	for (rep = 0; rep < plan->reps; rep++)
		for (c = 0; c < plan->nb_vm_counts; c++) {
			struct scale_result *r = &ps->results[ps->nb++];

			r->vms = plan->vm_counts[c];
			r->rep = rep;
			ok &= one_count(run, &sc, r);
			fprintf(stderr, "  scale %3u VMs rep %u: rr p50 %.2f us p99 %.2f us, g2h "
				"%.2f Gbit/s, idle round %.1f ns (%.1f wall)%s%s\n", r->vms, rep,
				r->p50, r->p99, r->gbps, r->round_ns, r->wall_round_ns,
				r->ok ? "" : "  FAILED: ", r->err);
		}
	rmdir(sc.dir);
	return ok;
}

/* ---- the report ---- */

static const struct scale_result *find(const struct perf_run *run, unsigned int vms,
				       unsigned int rep)
{
	const struct perf_scale *ps = &run->scale;
	unsigned int i;

	for (i = 0; i < ps->nb; i++)
		if (ps->results[i].vms == vms && ps->results[i].rep == rep && ps->results[i].ok)
			return &ps->results[i];
	return NULL;
}

/* The count the others are compared with: the smallest (1 with the default list). */
static unsigned int base_vms(const struct plan *plan)
{
	unsigned int i, b = UINT32_MAX;

	for (i = 0; i < plan->nb_vm_counts; i++)
		b = RTE_MIN(b, plan->vm_counts[i]);
	return b;
}

/* What one count's repetition gives against the base count's in the same repetition. */
enum pair { P_P50, P_GBPS, P_SLOPE, P_NB };

static double paired(const struct perf_run *run, const struct scale_result *r, enum pair p)
{
	const struct scale_result *b = find(run, base_vms(&run->plan), r->rep);

	if (b == NULL || !r->ok)
		return NAN;
	switch (p) {
	case P_P50:
		return r->p50 / b->p50;
	case P_GBPS:
		return r->gbps / b->gbps;
	default:
		return r->vms > b->vms ? (r->round_ns - b->round_ns) / (r->vms - b->vms) : NAN;
	}
}

/* Median over the repetitions of count @p vms: of field @p f, or of pair @p p if f < 0. */
static double med(const struct perf_run *run, unsigned int vms, long f, enum pair p)
{
	double v[MAX_REPS];
	unsigned int rep, n = 0;

	for (rep = 0; rep < run->plan.reps && n < MAX_REPS; rep++) {
		const struct scale_result *r = find(run, vms, rep);
		double x;

		if (r == NULL)
			continue;
		x = f >= 0 ? *(const double *)((const char *)r + f) : paired(run, r, p);
		if (!isnan(x))
			v[n++] = x;
	}
	return perf_median(v, n);
}

#define F(x) ((long)offsetof(struct scale_result, x))

void perf_scale_print(const struct perf_run *run, FILE *f)
{
	const struct plan *plan = &run->plan;
	const struct perf_scale *ps = &run->scale;
	const struct variant *var = &plan->variants[0];
	unsigned int i, b = base_vms(plan), top = 0;

	if (ps->nb == 0)
		return;
	fprintf(f, "\nscale: VM 3 active, the other VMs attached and idle, all on worker lcore 1;"
		"\nVM 3's %u B ping-pong and %u KiB g2h stream, and a window with every VM idle;\n"
		"%u repetition%s of each count alternated, %.2f s per window (variant %s, %s "
		"rings,\nring %u, --mbufs %s per VM)\n", SCALE_PING, SCALE_STREAM / 1024,
		plan->reps, plan->reps == 1 ? "" : "s", plan->secs, var->name,
		ring_name[var->ring], plan->ring, SCALE_MBUFS);
	fprintf(f, "%5s | %8s %8s %9s | %10s %9s | %9s %9s %9s %10s\n", "VMs", "p50 us",
		"p99 us", "p50/base", "g2h Gbit/s", "Gb/base", "round ns", "wall ns",
		"round/VMs", "ns/idle VM");
	for (i = 0; i < plan->nb_vm_counts; i++) {
		unsigned int n = plan->vm_counts[i];
		const struct scale_result *fail = NULL;
		unsigned int k;

		for (k = 0; k < ps->nb && fail == NULL; k++)
			if (ps->results[k].vms == n && !ps->results[k].ok)
				fail = &ps->results[k];
		top = RTE_MAX(top, n);
		fprintf(f, "%5u | %8.2f %8.2f %8.2fx | %10.2f %8.2fx | %9.1f %9.1f %9.2f %10.2f"
			"%s%s\n", n, med(run, n, F(p50), 0), med(run, n, F(p99), 0),
			med(run, n, -1, P_P50), med(run, n, F(gbps), 0), med(run, n, -1, P_GBPS),
			med(run, n, F(round_ns), 0), med(run, n, F(wall_round_ns), 0),
			med(run, n, F(round_ns), 0) / n, med(run, n, -1, P_SLOPE),
			fail ? "  FAILED: " : "", fail ? fail->err : "");
	}
	fprintf(f, "(base: %u VM%s; ratios and ns/idle VM are medians of each repetition's pair "
		"with it;\n round ns: the worker's time inside one round with every VM idle (TSC); "
		"wall ns:\n the window over its rounds; ns/idle VM: (round ns - the base's) / (VMs - "
		"the base's))\n", b, b == 1 ? "" : "s");
	/* The targets, for the reader; this part only measures. */
	if (top > b)
		fprintf(f, "(targets: at most 50 ns per idle VM per round: %.2f ns at %u VMs; "
			"VM 3's p50 at %u VMs\n within 2x its %u-VM figure: %.2fx)\n",
			med(run, top, -1, P_SLOPE), top, top, b, med(run, top, -1, P_P50));
}

void perf_scale_write_json(const struct perf_run *run, FILE *f, bool *first)
{
	const struct plan *plan = &run->plan;
	const struct perf_scale *ps = &run->scale;
	const struct variant *var = &plan->variants[0];
	unsigned int i;

	for (i = 0; i < ps->nb; i++) {
		const struct scale_result *r = &ps->results[i];

		perf_json_next(f, first);
		fprintf(f, "    {\"part\": \"scale\", \"vms\": %u, \"base_vms\": %u, \"rep\": %u, "
			"\"variant\": \"%s\", \"host\": \"%s\", \"ring\": \"%s\", \"active_cid\": "
			"%d, \"worker_lcore\": 1, \"mbufs_per_vm\": %s, \"ok\": %s, \"error\": "
			"\"%s\", \"rr_payload\": %u, \"round_trips\": %llu, ", r->vms,
			base_vms(plan), r->rep, var->name, host_name[var->host],
			ring_name[var->ring], DP_CID, SCALE_MBUFS, r->ok ? "true" : "false", r->err,
			SCALE_PING, (unsigned long long)r->round_trips);
		perf_json_num(f, "rtt_p50_us", r->p50, true);
		perf_json_num(f, "rtt_p99_us", r->p99, true);
		perf_json_num(f, "p50_over_base", paired(run, r, P_P50), true);
		fprintf(f, "\"stream_direction\": \"g2h\", \"stream_payload\": %u, "
			"\"stream_bytes\": %llu, ", SCALE_STREAM, (unsigned long long)r->bytes);
		perf_json_num(f, "gbps", r->gbps, true);
		perf_json_num(f, "gbps_over_base", paired(run, r, P_GBPS), true);
		fprintf(f, "\"idle_seconds\": %g, \"idle_rounds\": %llu, \"idle_busy_rounds\": "
			"%llu, ", plan->secs, (unsigned long long)r->rounds,
			(unsigned long long)r->busy_rounds);
		perf_json_num(f, "idle_round_ns", r->round_ns, true);
		perf_json_num(f, "idle_round_wall_ns", r->wall_round_ns, true);
		perf_json_num(f, "idle_ns_per_vm", paired(run, r, P_SLOPE), false);
		fprintf(f, "}");
	}
}
