/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A variant's run: its backend started (the app, or the engine in this process), the
 * frontend attached, every case of the plan on it, and the backend stopped.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vsock_pmd.h>

#include "perf.h"
#include "perf_case.h"
#include "perf_variant.h"

/* @p field of the app's /proc status: "VmRSS:", or "RssAnon:" (without the guest's memory). */
static long app_rss_kib(const struct perf_run *run, const char *field)
{
	char path[64], line[128];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)perf_backend_pid(run));
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, strlen(field)) == 0)
			kib = atol(line + strlen(field));
	fclose(f);
	return kib;
}

/*
 * Not dp_attach_quiet(), which would take the layout from VFE_RING and print a TAP line per
 * attach. A VM labelled packed must run on packed rings: the JSON says so.
 */
int perf_attach(struct perf_run *run, struct dp_env *e, bool packed,
		const struct vfe_guest_conf *gc, char *err, size_t len)
{
	struct vfe_vsock_conf vc = { .ring_size = run->plan.ring, .mem = { .size = 64u << 20 },
				     .packed = packed };
	int rc = vfe_vsock_attach(&e->v, e->sock, &vc);

	if (rc < 0) {
		snprintf(err, len, "attach: %s: %.100s", strerror(-rc), e->v.conn.err);
		return rc;
	}
	rc = vfe_guest_init(&e->g, &e->v, gc);
	if (rc < 0) {
		snprintf(err, len, "guest driver: %s", strerror(-rc));
		vfe_guest_fini(&e->g);
		vfe_vsock_close(&e->v);
		return rc;
	}
	e->attached = true;
	if (e->v.vq[0].packed != packed ||
	    !!(e->v.features & (1ULL << VIRTIO_F_RING_PACKED)) != packed) {
		snprintf(err, len, "asked for %s rings, features %#llx", ring_name[packed],
			 (unsigned long long)e->v.features);
		dp_detach(e);
		return -EPROTO;
	}
	return 0;
}

/*
 * Until then a host connect is refused (a VM no worker polls has no guest to answer it), so
 * a case waits for it. In the process for the native host end (its one VM), through
 * telemetry for the app's.
 */
bool perf_vm_running(struct perf_run *run, unsigned int cid)
{
	struct vsock_pmd_vm_info info;
	char path[32];

	if (run->host == H_NATIVE)
		return vsock_pmd_vm_info_get(0, &info) == 0 && info.running;
	snprintf(path, sizeof(path), "%u.running", cid);
	return ops_tel_u64(&run->env, "/vsock/vms", path) == 1;
}

void perf_guest_polling(const struct perf_run *run, struct dp_env *e)
{
	unsigned int q;

	if (run->plan.guest_irq)
		return;
	/*
	 * A polling guest wants no interrupts. Split: used_event parked a full lap behind, so
	 * the app signals once per 65536 entries at most. Packed: the driver event structure
	 * says DISABLE, as Linux's virtqueue_disable_cb() does (an off_wrap behind would come
	 * round again every two laps of the ring).
	 */
	for (q = 0; q < VFE_VSOCK_NQ; q++) {
		struct vfe_vq *vq = &e->v.vq[q];

		vq->track_used_event = false;
		if (vq->packed)
			vfe_vq_set_no_interrupt(vq, true);
		else
			vfe_vq_set_used_event(vq, (uint16_t)(vq->last_used - 1));
	}
}

static void run_case(struct perf_run *run, struct result *r)
{
	struct dp_env *e = &run->env.dp;
	bool packed = run->plan.variants[r->variant].ring == R_PACKED;
	struct vfe_guest_conf gc = perf_guest_conf(r->mode, r->payload);
	char cmd[64];
	long rss0;
	int rc;

	snprintf(cmd, sizeof(cmd), "set burst %u", r->burst);
	if (run->host == H_NATIVE ? vsock_pmd_set_burst(r->burst) < 0 :
	    !ops_cmd(&run->env, cmd, "Burst size set", STEP_TIMEOUT_MS, NULL)) {
		snprintf(r->err, sizeof(r->err), "the app refused '%s'", cmd);
		return;
	}
	if (perf_attach(run, e, packed, &gc, r->err, sizeof(r->err)) < 0)
		return;
	/* The engine takes the device over asynchronously; connect refuses until then. */
	if (!DP_WAIT(e, perf_vm_running(run, DP_CID), STEP_TIMEOUT_MS)) {
		snprintf(r->err, sizeof(r->err), "the engine did not start polling the guest");
		dp_detach(e);
		return;
	}
	perf_guest_polling(run, e);
	/* Anonymous memory only: the guest's memory the app writes into is shared, not its own. */
	rss0 = app_rss_kib(run, "RssAnon:");
	rc = perf_open_conns(run, r->mode, r->conns);
	r->rss_per_conn = (double)(app_rss_kib(run, "RssAnon:") - rss0) * 1024 / r->conns;
	if (rc < 0) {
		snprintf(r->err, sizeof(r->err), "%u connections: %s", r->conns, strerror(-rc));
	} else if (r->mode == M_RR) {
		perf_run_rr(run, r);
	} else {
		perf_run_stream(run, r);
	}
	if (run->plan.callgrind && rc >= 0)
		perf_case_busy_only(run, r);
	perf_close_conns(run, r->conns);
	dp_detach(e);
}

/* The backend of variant @p v: the app in its process, or the engine in this one. */
static bool backend_start(struct perf_run *run, const struct variant *var)
{
	int rc;

	run->host = var->host;
	if (run->host == H_NATIVE) {
		memset(&run->env, 0, sizeof(run->env));
		rc = perf_native_start(&run->native, DP_CID, run->plan.bursts[0], var->per_entry,
				       var->notify, run->env.dp.sock, sizeof(run->env.dp.sock));
		if (rc < 0) {
			fprintf(stderr, "vsock-perf: vsock_pmd_start: %s\n", strerror(-rc));
			return false;
		}
		return true;
	}
	if (ops_start(&run->env, false, true, var->args) < 0)
		return false;
	perf_pin(0);
	if (!ops_cmd(&run->env, "set record-core-cycles on", "record-core-cycles on",
		     STEP_TIMEOUT_MS, NULL))
		fprintf(stderr, "vsock-perf: no cycle counts (record-core-cycles refused)\n");
	return true;
}

static bool backend_stop(struct perf_run *run)
{
	if (run->host == H_NATIVE) {
		unsigned int lost = perf_native_stop(&run->native);

		if (lost)
			fprintf(stderr, "vsock-perf: %u host mbufs did not come back\n", lost);
		run->native_lost += lost;
		return lost == 0;
	}
	return ops_stop(&run->env) >= 0;
}

bool perf_run_variant(struct perf_run *run, unsigned int v, unsigned int rep)
{
	/* The round trips first, beside the floors measured just before them. */
	static const enum mode order[M_NB] = { M_RR, M_G2H, M_H2G };
	const struct plan *plan = &run->plan;
	const unsigned int cl_rounds = plan->smoke ? 2000 : 20000;
	double floor_us[MAX_LIST], cl_before;
	unsigned int i, p, b, c, first = run->nb_results;
	bool stopped;

	/*
	 * --refs with rr cases: each payload's Unix ping-pong floor again, so that a round trip
	 * is compared with the machine of its minute (it moved from 2.5 to 4.4 us at 64 B between
	 * runs of one evening). Before the backend starts: its worker would share CPU 1 with the
	 * floor's reader.
	 */
	for (p = 0; p < plan->nb_payloads; p++)
		floor_us[p] = plan->refs && plan->modes[M_RR] ?
			perf_ref_unix_rtt_us(plan->payloads[p], plan->smoke ? 200 : 20000) : NAN;
	/*
	 * How far apart the two CPUs are, before and after the cases, for the same reason: the
	 * host moves them, and this machine's cache-line round trip goes from 60-140 ns to
	 * 345-440 ns and back within a minute, its compute speed unchanged. What crosses
	 * between the worker and the guest costs what the distance costs. A few ms each; the
	 * thread on CPU 1 would share it with the backend's worker.
	 */
	cl_before = perf_ref_cacheline_rtt_ns(cl_rounds);
	if (!backend_start(run, &plan->variants[v])) {
		fprintf(stderr, "vsock-perf: cannot start the backend for variant %s\n",
			plan->variants[v].name);
		return false;
	}
	/* The app's own figure: the native host end's process is the benchmark too. */
	if (v == 0 && rep == 0 && run->host == H_UDS)
		run->rss_default_kib = app_rss_kib(run, "VmRSS:");
	for (i = 0; i < M_NB; i++) {
		const enum mode m = order[i];

		if (!plan->modes[m])
			continue;
		for (p = 0; p < plan->nb_payloads; p++)
			for (b = 0; b < plan->nb_bursts; b++)
				for (c = 0; c < plan->nb_conns && run->nb_results < MAX_RESULTS;
				     c++) {
					struct result *r = &run->results[run->nb_results++];

					memset(r, 0, sizeof(*r));
					r->variant = v;
					r->rep = rep;
					r->mode = m;
					r->payload = plan->payloads[p];
					r->burst = plan->bursts[b];
					r->conns = plan->conns[c];
					r->floor_p50 = m == M_RR ? floor_us[p] : NAN;
					r->cl_before = cl_before;
					r->cl_after = NAN;
					r->sys_pkt = -1;
					r->csys_pkt = -1;
					r->csys = -1;
					r->epoll_pkt = -1;
					r->ir_pkt = -1;
					r->ring_ir_pkt = -1;
					r->ir_all_pkt = -1;
					r->idle_round_ir = -1;
					r->cg_ir = -1;
					r->cg_ring = -1;
					r->cg_rounds = -1;
					run_case(run, r);
					fprintf(stderr, "  %-9s rep %u %-3s %6u B burst %3u "
						"conns %4u: %8.3f Mpps %7.2f Gbit/s%s%s\n",
						plan->variants[v].name, rep, mode_name[m],
						r->payload, r->burst, r->conns, r->mpps, r->gbps,
						r->ok ? "" : "  FAILED: ", r->ok ? "" : r->err);
				}
	}
	if (v == 0 && rep == 0 && run->host == H_UDS && run->rss_default_kib >= 0) {
		long now = app_rss_kib(run, "VmRSS:");

		if (now > run->rss_default_kib)
			run->rss_default_kib = now;
	}
	stopped = backend_stop(run);
	if (stopped) {
		double cl_after = perf_ref_cacheline_rtt_ns(cl_rounds);

		for (i = first; i < run->nb_results; i++)
			run->results[i].cl_after = cl_after;
		fprintf(stderr, "  %-9s rep %u: cache line round trip CPU0<->CPU1 %.0f ns before, "
			"%.0f ns after\n", plan->variants[v].name, rep, cl_before, cl_after);
	}
	return stopped;
}
