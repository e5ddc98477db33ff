/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What vsock-perf reports: the reference figures, the summary table with medians and
 * paired ratios per variant, and the JSON records.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_cycles.h>

#include "perf.h"
#include "perf_report.h"
#include "perf_stats.h"

/* Median of field @p f over the reps of one (variant, case). */
static double med(const struct perf_run *run, unsigned int v, const struct result *k, size_t f)
{
	double vals[256];
	unsigned int i, n = 0;

	for (i = 0; i < run->nb_results && n < 256; i++) {
		const struct result *r = &run->results[i];

		if (r->variant == v && r->mode == k->mode && r->payload == k->payload &&
		    r->burst == k->burst && r->conns == k->conns && r->ok &&
		    !isnan(*(const double *)((const char *)r + f)))
			vals[n++] = *(const double *)((const char *)r + f);
	}
	return perf_median(vals, n);
}

static bool same_case(const struct result *a, const struct result *b)
{
	return a->mode == b->mode && a->payload == b->payload && a->burst == b->burst &&
	       a->conns == b->conns;
}

/* Whether result @p i is the first repetition of the first variant in its case. */
static bool first_of_case(const struct perf_run *run, unsigned int i)
{
	const struct result *k = &run->results[i];
	unsigned int j;

	if (k->variant != 0 || k->rep != 0)
		return false;
	for (j = 0; j < i; j++)
		if (same_case(&run->results[j], k) && run->results[j].variant == 0)
			return false;
	return true;
}

static double field(const struct result *r, size_t f)
{
	return *(const double *)((const char *)r + f);
}

/*
 * Median over the repetitions of the second variant's field @p f over the first's in the
 * same repetition (run next to each other): the machine changes speed from one minute to
 * the next here, a pair mostly shares one state of it where the medians of each may not.
 */
static double paired_ratio(const struct perf_run *run, const struct result *k, size_t f)
{
	double vals[MAX_REPS];
	unsigned int i, j, n = 0;

	for (i = 0; i < run->nb_results; i++) {
		const struct result *a = &run->results[i];

		if (a->variant != 0 || !a->ok || !same_case(a, k))
			continue;
		for (j = 0; j < run->nb_results && n < RTE_DIM(vals); j++) {
			const struct result *b = &run->results[j];

			if (b->variant == 1 && b->rep == a->rep && b->ok && same_case(b, k))
				vals[n++] = field(b, f) / field(a, f);
		}
	}
	return perf_median(vals, n);
}

/* The worker's busy share under which a stream case measures the client, not the backend. */
#define BUSY_MIN 0.9

/*
 * Stream cases where the worker idled more than 1 - BUSY_MIN of the window (median over the
 * repetitions), every variant: there it waited for this process, so the rate is the client's
 * (the emulated guest and host end), and the cycles per packet are still the backend's.
 */
static void print_client_bound(const struct perf_run *run, FILE *f)
{
	unsigned int i, v;

	for (i = 0; i < run->nb_results; i++) {
		const struct result *k = &run->results[i];

		if (k->mode == M_RR || !first_of_case(run, i))
			continue;
		for (v = 0; v < run->plan.nb_variants; v++) {
			double busy = med(run, v, k, offsetof(struct result, busy));

			if (busy < BUSY_MIN)
				fprintf(f, "note: %s %u B burst %u conns %u, %s: the worker was busy "
					"%.1f%% of the window: the client is the bottleneck\n",
					mode_name[k->mode], k->payload, k->burst, k->conns,
					run->plan.variants[v].name, busy * 100);
		}
	}
}

void perf_report_print(const struct perf_run *run, FILE *f)
{
	const struct plan *plan = &run->plan;
	unsigned int i, v;

	fprintf(f, "\n%-4s %7s %5s %5s", "mode", "payload", "burst", "conns");
	for (v = 0; v < plan->nb_variants; v++)
		fprintf(f, " | %-9s %8s %8s %7s %7s", plan->variants[v].name, "Mpps", "Gbit/s",
			"p50us", "p99us");
	if (plan->nb_variants > 1)
		fprintf(f, " | %s/%s, pairs", plan->variants[1].name, plan->variants[0].name);
	for (v = 0; v < plan->nb_variants && v < 2; v++)
		fprintf(f, " | %6s %5s %6s %6s %6s %6s %6s%s", "cyc/pk", "busy%", "idx/pk",
			"irq/pk", "sys/pk", "epl/pk", "csys",
			plan->callgrind ? "    Ir/pk ringIr/pk" : "");
	if (plan->callgrind && plan->nb_variants > 1)
		fprintf(f, " | Ir 2nd/1st, ring");
	fprintf(f, "\n");
	for (i = 0; i < run->nb_results; i++) {
		const struct result *k = &run->results[i];

		if (!first_of_case(run, i))
			continue;
		fprintf(f, "%-4s %7u %5u %5u", mode_name[k->mode], k->payload, k->burst, k->conns);
		for (v = 0; v < plan->nb_variants; v++)
			fprintf(f, " | %-9s %8.3f %8.2f %7.2f %7.2f", "",
				med(run, v, k, offsetof(struct result, mpps)),
				med(run, v, k, offsetof(struct result, gbps)),
				k->mode == M_RR ? med(run, v, k, offsetof(struct result, p50)) : NAN,
				k->mode == M_RR ? med(run, v, k, offsetof(struct result, p99)) : NAN);
		if (plan->nb_variants > 1) {
			bool rr = k->mode == M_RR;
			size_t fld = rr ? offsetof(struct result, p50) :
					  offsetof(struct result, mpps);
			double a = med(run, 0, k, fld), b = med(run, 1, k, fld);

			/* Second variant over first: rate, or for rr the p50 RTT. */
			fprintf(f, " | %6.2fx %6.2fx%s", b / a, paired_ratio(run, k, fld),
				rr ? " rtt" : "");
		}
		for (v = 0; v < plan->nb_variants && v < 2; v++) {
			fprintf(f, " | %6.0f %5.1f %6.3f %6.3f %6.3f %6.3f %6.3f",
				med(run, v, k, offsetof(struct result, cyc_pkt)),
				med(run, v, k, offsetof(struct result, busy)) * 100,
				med(run, v, k, offsetof(struct result, idx_pkt)),
				med(run, v, k, offsetof(struct result, irq_pkt)),
				med(run, v, k, offsetof(struct result, sys_pkt)),
				med(run, v, k, offsetof(struct result, epoll_pkt)),
				med(run, v, k, offsetof(struct result, csys_pkt)));
			if (plan->callgrind)
				fprintf(f, " %8.0f %9.0f", med(run, v, k, offsetof(struct result, ir_pkt)),
					med(run, v, k, offsetof(struct result, ring_ir_pkt)));
		}
		/* Instructions are what callgrind measures steadily: their ratios too. */
		if (plan->callgrind && plan->nb_variants > 1)
			fprintf(f, " | %9.3fx %6.3fx",
				med(run, 1, k, offsetof(struct result, ir_pkt)) /
				med(run, 0, k, offsetof(struct result, ir_pkt)),
				med(run, 1, k, offsetof(struct result, ring_ir_pkt)) /
				med(run, 0, k, offsetof(struct result, ring_ir_pkt)));
		fprintf(f, "\n");
	}
	fprintf(f, "(per packet, first and second variant: busy-round cycles, then the worker's "
		"busy share of\n the window (busy%%, not per packet), used->idx stores (packed: "
		"used publications), guest\n interrupts, worker syscalls other than epoll_wait, "
		"epoll_waits with idle rounds, syscalls of\n the client thread (guest driver and "
		"host end)%s; -1: not measured)\n",
		plan->callgrind ? ", instructions of dp_dev_poll and of the\n virtqueue code "
		"alone (callgrind)" : "");
	print_client_bound(run, f);
	if (plan->nb_variants > 1)
		fprintf(f, "(ratios: of the medians, then the median of each repetition's pair)\n");
	if (plan->refs) {
		const struct refs *refs = &run->refs;

		fprintf(f, "\nreference limits (same run, app stopped): cache line round trip "
			"CPU0<->CPU1 %.0f ns\n", refs->cl_rtt_ns);
		fprintf(f, "%8s %14s %16s %20s\n", "payload", "memcpy Gbit/s", "unix raw Gbit/s",
			"unix ping-pong p50 us");
		for (i = 0; i < plan->nb_payloads; i++)
			fprintf(f, "%8u %14.1f %16.2f %20.2f\n", plan->payloads[i],
				refs->memcpy_gbps[i], refs->unix_gbps[i], refs->unix_rtt_us[i]);
	}
	if (run->rss_default_kib >= 0)
		fprintf(f, "app RSS, default configuration, after the first variant's cases: "
			"%ld KiB\n", run->rss_default_kib);
}

/*
 * The TSC's rate, which the cycle figures count in (the app's record-core-cycles, the busy
 * share's span): a reader turns them into time, or a reference's time into cycles.
 */
static double tsc_hz(void)
{
	uint64_t ns = perf_now_ns(), tsc = rte_rdtsc();

	usleep(20000);
	return (double)(rte_rdtsc() - tsc) * 1e9 / (double)(perf_now_ns() - ns);
}

void perf_report_write_json(const struct perf_run *run, const char *path)
{
	const struct plan *plan = &run->plan;
	bool first = true;
	struct utsname u;
	FILE *f = fopen(path, "w");
	char cpu[128] = "unknown", line[256];
	FILE *ci = fopen("/proc/cpuinfo", "r");
	unsigned int i, v;

	if (f == NULL) {
		fprintf(stderr, "vsock-perf: cannot write %s: %s\n", path, strerror(errno));
		return;
	}
	while (ci && fgets(line, sizeof(line), ci)) {
		if (strncmp(line, "model name", 10) == 0) {
			char *c = strchr(line, ':');

			snprintf(cpu, sizeof(cpu), "%.100s", c ? c + 2 : line);
			cpu[strcspn(cpu, "\n")] = '\0';
			break;
		}
	}
	if (ci)
		fclose(ci);
	uname(&u);
	fprintf(f, "{\n  \"machine\": {\"cpu\": \"%s\", \"cpus\": %ld, \"kernel\": \"%s\", "
		"\"tsc_hz\": %.0f},\n", cpu, sysconf(_SC_NPROCESSORS_ONLN), u.release, tsc_hz());
	fprintf(f, "  \"config\": {\"seconds_per_case\": %g, \"reps\": %u, \"ring_size\": %u, "
		"\"guest_irq\": %s, \"variants\": [", plan->secs, plan->reps, plan->ring,
		plan->guest_irq ? "true" : "false");
	for (v = 0; v < plan->nb_variants; v++)
		fprintf(f, "%s\"%s\"", v ? ", " : "", plan->variants[v].name);
	fprintf(f, "], \"hosts\": [");
	for (v = 0; v < plan->nb_variants; v++)
		fprintf(f, "%s\"%s\"", v ? ", " : "", host_name[plan->variants[v].host]);
	fprintf(f, "], \"rings\": [");
	for (v = 0; v < plan->nb_variants; v++)
		fprintf(f, "%s\"%s\"", v ? ", " : "", ring_name[plan->variants[v].ring]);
	fprintf(f, "], \"used_publish\": [");
	for (v = 0; v < plan->nb_variants; v++)
		fprintf(f, "%s\"%s\"", v ? ", " : "",
			plan->variants[v].per_entry ? "per-entry" : "batch");
	fprintf(f, "]},\n  \"rss_default_kib\": %ld,\n", run->rss_default_kib);
	/* Whether the engine in this process gave back every mbuf of its host program. */
	if (plan->hosts[H_NATIVE])
		fprintf(f, "  \"native_mbufs_lost\": %u,\n", run->native_lost);
	if (plan->refs) {
		const struct refs *refs = &run->refs;

		fprintf(f, "  \"refs\": {\"cacheline_rtt_ns\": %.1f, \"by_payload\": [",
			refs->cl_rtt_ns);
		for (i = 0; i < plan->nb_payloads; i++)
			fprintf(f, "%s{\"payload\": %u, \"memcpy_gbps\": %.2f, "
				"\"unix_gbps\": %.3f, "
				"\"unix_rtt_p50_us\": %.3f}", i ? ", " : "", plan->payloads[i],
				refs->memcpy_gbps[i], refs->unix_gbps[i], refs->unix_rtt_us[i]);
		fprintf(f, "]},\n");
	}
	fprintf(f, "  \"cases\": [\n");
	for (i = 0; i < run->nb_results; i++) {
		const struct result *r = &run->results[i];

		perf_json_next(f, &first);
		fprintf(f, "    {\"variant\": \"%s\", \"host\": \"%s\", \"ring\": \"%s\", "
			"\"rep\": %u, \"direction\": \"%s\", \"payload\": %u, \"burst\": %u, "
			"\"conns\": %u, \"ok\": %s, ", plan->variants[r->variant].name,
			host_name[plan->variants[r->variant].host],
			ring_name[plan->variants[r->variant].ring], r->rep, mode_name[r->mode],
			r->payload, r->burst, r->conns, r->ok ? "true" : "false");
		fprintf(f, "\"error\": \"%s\", \"seconds\": %.4f, \"bytes\": %llu, ",
			r->ok ? "" : r->err, r->secs, (unsigned long long)r->bytes);
		perf_json_num(f, "mpps", r->mpps, true);
		perf_json_num(f, "gbps", r->gbps, true);
		perf_json_num(f, "rtt_p50_us", r->mode == M_RR ? r->p50 : NAN, true);
		perf_json_num(f, "rtt_p99_us", r->mode == M_RR ? r->p99 : NAN, true);
		perf_json_num(f, "rtt_p999_us", r->mode == M_RR ? r->p999 : NAN, true);
		perf_json_num(f, "floor_rtt_p50_us", r->mode == M_RR ? r->floor_p50 : NAN, true);
		perf_json_num(f, "cacheline_rtt_ns_before", r->cl_before, true);
		perf_json_num(f, "cacheline_rtt_ns_after", r->cl_after, true);
		fprintf(f, "\"ring_packets\": %llu, \"used_idx_stores\": %llu, ",
			(unsigned long long)r->vq_pkts, (unsigned long long)r->idx);
		perf_json_num(f, "cycles_per_packet", r->cyc_pkt, true);
		perf_json_num(f, "used_idx_stores_per_packet", r->idx_pkt, true);
		perf_json_num(f, "guest_interrupts_per_packet", r->irq_pkt, true);
		perf_json_num(f, "guest_kicks_per_packet", r->kick_pkt, true);
		perf_json_num(f, "worker_busy_share", r->busy, true);
		perf_json_num(f, "worker_syscalls_per_packet", r->sys_pkt >= 0 ? r->sys_pkt : NAN, true);
		perf_json_num(f, "worker_epoll_waits_per_packet", r->epoll_pkt >= 0 ? r->epoll_pkt : NAN,
			 true);
		perf_json_num(f, "client_syscalls_per_packet", r->csys_pkt >= 0 ? r->csys_pkt : NAN,
			 true);
		perf_json_num(f, "client_syscalls", r->csys >= 0 ? (double)r->csys : NAN, true);
		perf_json_num(f, "instructions_per_packet", r->ir_pkt >= 0 ? r->ir_pkt : NAN, true);
		perf_json_num(f, "ring_instructions_per_packet",
			 r->ring_ir_pkt >= 0 ? r->ring_ir_pkt : NAN, true);
		perf_json_num(f, "instructions_per_packet_all_rounds",
			 r->ir_all_pkt >= 0 ? r->ir_all_pkt : NAN, true);
		perf_json_num(f, "idle_round_instructions",
			 r->idle_round_ir >= 0 ? r->idle_round_ir : NAN, true);
		perf_json_num(f, "busy_rounds_per_packet", r->cg_rounds >= 0 ?
			 perf_per(r->busy_rounds, r->vq_pkts) : NAN, true);
		perf_json_num(f, "rounds_per_packet", r->cg_rounds >= 0 ?
			 r->cg_rounds / (double)RTE_MAX(r->vq_pkts, 1ull) : NAN, true);
		perf_json_num(f, "app_rss_bytes_per_conn", r->rss_per_conn, false);
		fprintf(f, "}");
	}
	perf_iso_write_json(run, f, &first);
	perf_scale_write_json(run, f, &first);
	fprintf(f, "%s  ]\n}\n", first ? "" : "\n");
	fclose(f);
}
