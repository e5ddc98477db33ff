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

#include "vsock_perf.h"

struct refs refs;

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double perf_median(double *v, unsigned int n)
{
	if (n == 0)
		return NAN;
	qsort(v, n, sizeof(*v), cmp_dbl);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Median of field @p f over the reps of one (variant, case). */
static double med(unsigned int v, const struct result *k, size_t f)
{
	double vals[256];
	unsigned int i, n = 0;

	for (i = 0; i < nb_results && n < 256; i++) {
		const struct result *r = &results[i];

		if (r->variant == v && r->mode == k->mode && r->payload == k->payload &&
		    r->burst == k->burst && r->conns == k->conns && r->ok &&
		    !isnan(*(const double *)((const char *)r + f)))
			vals[n++] = *(const double *)((const char *)r + f);
	}
	return perf_median(vals, n);
}

void perf_measure_refs(void)
{
	unsigned int i;
	double secs = plan.smoke ? 0.05 : 0.3;

	refs.cl_rtt_ns = perf_ref_cacheline_rtt_ns(plan.smoke ? 10000 : 200000);
	for (i = 0; i < plan.nb_payloads; i++) {
		refs.memcpy_gbps[i] = perf_ref_memcpy_gbps(plan.payloads[i], secs);
		refs.unix_gbps[i] = perf_ref_unix_gbps(plan.payloads[i], secs);
		refs.unix_rtt_us[i] = perf_ref_unix_rtt_us(plan.payloads[i],
							   plan.smoke ? 200 : 20000);
	}
	perf_pin(0);
}

static bool same_case(const struct result *a, const struct result *b)
{
	return a->mode == b->mode && a->payload == b->payload && a->burst == b->burst &&
	       a->conns == b->conns;
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
static double paired_ratio(const struct result *k, size_t f)
{
	double vals[100];
	unsigned int i, j, n = 0;

	for (i = 0; i < nb_results; i++) {
		const struct result *a = &results[i];

		if (a->variant != 0 || !a->ok || !same_case(a, k))
			continue;
		for (j = 0; j < nb_results && n < RTE_DIM(vals); j++) {
			const struct result *b = &results[j];

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
static void print_client_bound(FILE *f)
{
	unsigned int i, j, v;

	for (i = 0; i < nb_results; i++) {
		const struct result *k = &results[i];
		bool seen = false;

		if (k->mode == M_RR || k->variant != 0 || k->rep != 0)
			continue;
		for (j = 0; j < i; j++)
			seen |= same_case(&results[j], k) && results[j].variant == 0;
		if (seen)
			continue;
		for (v = 0; v < plan.nb_variants; v++) {
			double busy = med(v, k, offsetof(struct result, busy));

			if (busy < BUSY_MIN)
				fprintf(f, "note: %s %u B burst %u conns %u, %s: the worker was busy "
					"%.1f%% of the window: the client is the bottleneck\n",
					mode_name[k->mode], k->payload, k->burst, k->conns,
					plan.variants[v].name, busy * 100);
		}
	}
}

void perf_print_table(FILE *f)
{
	unsigned int i, j, v;

	fprintf(f, "\n%-4s %7s %5s %5s", "mode", "payload", "burst", "conns");
	for (v = 0; v < plan.nb_variants; v++)
		fprintf(f, " | %-9s %8s %8s %7s %7s", plan.variants[v].name, "Mpps", "Gbit/s",
			"p50us", "p99us");
	if (plan.nb_variants > 1)
		fprintf(f, " | %s/%s, pairs", plan.variants[1].name, plan.variants[0].name);
	for (v = 0; v < plan.nb_variants && v < 2; v++)
		fprintf(f, " | %6s %5s %6s %6s %6s %6s %6s%s", "cyc/pk", "busy%", "idx/pk",
			"irq/pk", "sys/pk", "epl/pk", "csys",
			plan.callgrind ? "    Ir/pk ringIr/pk" : "");
	if (plan.callgrind && plan.nb_variants > 1)
		fprintf(f, " | Ir 2nd/1st, ring");
	fprintf(f, "\n");
	for (i = 0; i < nb_results; i++) {
		const struct result *k = &results[i];
		bool seen = false;

		if (k->variant != 0 || k->rep != 0)
			continue;
		for (j = 0; j < i; j++)
			seen |= same_case(&results[j], k) && results[j].variant == 0;
		if (seen)
			continue;
		fprintf(f, "%-4s %7u %5u %5u", mode_name[k->mode], k->payload, k->burst, k->conns);
		for (v = 0; v < plan.nb_variants; v++)
			fprintf(f, " | %-9s %8.3f %8.2f %7.2f %7.2f", "",
				med(v, k, offsetof(struct result, mpps)),
				med(v, k, offsetof(struct result, gbps)),
				k->mode == M_RR ? med(v, k, offsetof(struct result, p50)) : NAN,
				k->mode == M_RR ? med(v, k, offsetof(struct result, p99)) : NAN);
		if (plan.nb_variants > 1) {
			bool rr = k->mode == M_RR;
			size_t fld = rr ? offsetof(struct result, p50) :
					  offsetof(struct result, mpps);
			double a = med(0, k, fld), b = med(1, k, fld);

			/* Second variant over first: rate, or for rr the p50 RTT. */
			fprintf(f, " | %6.2fx %6.2fx%s", b / a, paired_ratio(k, fld),
				rr ? " rtt" : "");
		}
		for (v = 0; v < plan.nb_variants && v < 2; v++) {
			fprintf(f, " | %6.0f %5.1f %6.3f %6.3f %6.3f %6.3f %6.3f",
				med(v, k, offsetof(struct result, cyc_pkt)),
				med(v, k, offsetof(struct result, busy)) * 100,
				med(v, k, offsetof(struct result, idx_pkt)),
				med(v, k, offsetof(struct result, irq_pkt)),
				med(v, k, offsetof(struct result, sys_pkt)),
				med(v, k, offsetof(struct result, epoll_pkt)),
				med(v, k, offsetof(struct result, csys_pkt)));
			if (plan.callgrind)
				fprintf(f, " %8.0f %9.0f", med(v, k, offsetof(struct result, ir_pkt)),
					med(v, k, offsetof(struct result, ring_ir_pkt)));
		}
		/* Instructions are what callgrind measures steadily: their ratios too. */
		if (plan.callgrind && plan.nb_variants > 1)
			fprintf(f, " | %9.3fx %6.3fx",
				med(1, k, offsetof(struct result, ir_pkt)) /
				med(0, k, offsetof(struct result, ir_pkt)),
				med(1, k, offsetof(struct result, ring_ir_pkt)) /
				med(0, k, offsetof(struct result, ring_ir_pkt)));
		fprintf(f, "\n");
	}
	fprintf(f, "(per packet, first and second variant: busy-round cycles, then the worker's "
		"busy share of\n the window (busy%%, not per packet), used->idx stores (packed: "
		"used publications), guest\n interrupts, worker syscalls other than epoll_wait, "
		"epoll_waits with idle rounds, syscalls of\n the client thread (guest driver and "
		"host end)%s; -1: not measured)\n",
		plan.callgrind ? ", instructions of vsock_dev_poll and of the\n virtqueue code "
		"alone (callgrind)" : "");
	print_client_bound(f);
	if (plan.nb_variants > 1)
		fprintf(f, "(ratios: of the medians, then the median of each repetition's pair)\n");
	if (plan.refs) {
		fprintf(f, "\nreference limits (same run, app stopped): cache line round trip "
			"CPU0<->CPU1 %.0f ns\n", refs.cl_rtt_ns);
		fprintf(f, "%8s %14s %16s %20s\n", "payload", "memcpy Gbit/s", "unix raw Gbit/s",
			"unix ping-pong p50 us");
		for (i = 0; i < plan.nb_payloads; i++)
			fprintf(f, "%8u %14.1f %16.2f %20.2f\n", plan.payloads[i],
				refs.memcpy_gbps[i], refs.unix_gbps[i], refs.unix_rtt_us[i]);
	}
	if (rss_default_kib >= 0)
		fprintf(f, "app RSS, default configuration, after the first variant's cases: "
			"%ld KiB\n", rss_default_kib);
}

/* The isolation part (perf_iso.c): VM 5's round trips in each condition. */
void perf_print_iso_table(FILE *f)
{
	const struct variant *var = &plan.variants[0];
	const struct iso_result *q = &iso_results[ISO_QUIET], *fl = &iso_results[ISO_FLOOD];
	unsigned int c, s;

	if (nb_iso == 0)
		return;
	fprintf(f, "\nisolation: VM %d ping-pongs %u B while VM %d streams %u KiB g2h on %u "
		"connections,\nboth on one worker lcore; quiet and flood slices alternated, %u of "
		"each, %.2f s each\n(variant %s, %s rings, ring %u)\n", ISO_PEER_CID, ISO_PING,
		DP_CID, ISO_FLOOD_PAYLOAD / 1024, plan.flood_conns, plan.reps, plan.secs,
		var->name, ring_name[var->ring], plan.ring);
	fprintf(f, "%-9s %11s %8s %8s %9s %7s %12s %11s %9s %9s\n", "condition",
		"round trips", "p50 us", "p99 us", "max us", ">1 ms", "flood Gbit/s",
		"worker busy", "p50/quiet", "p99/quiet");
	for (c = 0; c < ISO_NB; c++) {
		const struct iso_result *r = &iso_results[c];

		fprintf(f, "%-9s %11llu %8.2f %8.2f %9.2f %7llu %12.2f %10.1f%% %8.2fx "
			"%8.2fx%s%s\n", iso_cond_name[c], (unsigned long long)r->round_trips,
			r->p50, r->p99, r->max, (unsigned long long)r->slow, r->flood_gbps,
			r->busy * 100, r->p50_ratio, r->p99_ratio,
			r->ok ? "" : "  FAILED: ", r->ok ? "" : r->err);
	}
	for (c = 0; c < ISO_NB; c++) {
		const struct iso_result *r = &iso_results[c];

		fprintf(f, "%s slices, p50 us:", iso_cond_name[c]);
		for (s = 0; s < r->slices && s < MAX_SLICES; s++)
			fprintf(f, " %.1f", r->slice_p50[s]);
		fprintf(f, "\n");
	}
	/* The targets, for the reader; this part only measures. */
	fprintf(f, "(targets: flood p50 within 2x the quiet one: %.2fx; flood p99 under 100 us: "
		"%.2f us)\n(>1 ms: round trips over %d us, stalls; worker busy: its cycles in "
		"rounds that moved packets, of the slices' time)\n", fl->p50 / q->p50, fl->p99,
		ISO_SLOW_US);
}

void perf_json_num(FILE *f, const char *k, double v, bool comma)
{
	if (isnan(v) || isinf(v))
		fprintf(f, "\"%s\": null%s", k, comma ? ", " : "");
	else
		fprintf(f, "\"%s\": %.6g%s", k, v, comma ? ", " : "");
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

void perf_write_json(const char *path)
{
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
		"\"guest_irq\": %s, \"variants\": [", plan.secs, plan.reps, plan.ring,
		plan.guest_irq ? "true" : "false");
	for (v = 0; v < plan.nb_variants; v++)
		fprintf(f, "%s\"%s\"", v ? ", " : "", plan.variants[v].name);
	fprintf(f, "], \"hosts\": [");
	for (v = 0; v < plan.nb_variants; v++)
		fprintf(f, "%s\"%s\"", v ? ", " : "", host_name[plan.variants[v].host]);
	fprintf(f, "], \"rings\": [");
	for (v = 0; v < plan.nb_variants; v++)
		fprintf(f, "%s\"%s\"", v ? ", " : "", ring_name[plan.variants[v].ring]);
	fprintf(f, "], \"used_publish\": [");
	for (v = 0; v < plan.nb_variants; v++)
		fprintf(f, "%s\"%s\"", v ? ", " : "",
			plan.variants[v].per_entry ? "per-entry" : "batch");
	fprintf(f, "]},\n  \"rss_default_kib\": %ld,\n", rss_default_kib);
	/* Whether the engine in this process gave back every mbuf of its host program. */
	if (plan.hosts[H_NATIVE])
		fprintf(f, "  \"native_mbufs_lost\": %u,\n", native_lost);
	if (plan.refs) {
		fprintf(f, "  \"refs\": {\"cacheline_rtt_ns\": %.1f, \"by_payload\": [",
			refs.cl_rtt_ns);
		for (i = 0; i < plan.nb_payloads; i++)
			fprintf(f, "%s{\"payload\": %u, \"memcpy_gbps\": %.2f, "
				"\"unix_gbps\": %.3f, "
				"\"unix_rtt_p50_us\": %.3f}", i ? ", " : "", plan.payloads[i],
				refs.memcpy_gbps[i], refs.unix_gbps[i], refs.unix_rtt_us[i]);
		fprintf(f, "]},\n");
	}
	fprintf(f, "  \"cases\": [\n");
	for (i = 0; i < nb_results; i++) {
		const struct result *r = &results[i];

		fprintf(f, "    {\"variant\": \"%s\", \"host\": \"%s\", \"ring\": \"%s\", "
			"\"rep\": %u, \"direction\": \"%s\", \"payload\": %u, \"burst\": %u, "
			"\"conns\": %u, \"ok\": %s, ", plan.variants[r->variant].name,
			host_name[plan.variants[r->variant].host],
			ring_name[plan.variants[r->variant].ring], r->rep, mode_name[r->mode],
			r->payload, r->burst, r->conns, r->ok ? "true" : "false");
		fprintf(f, "\"error\": \"%s\", \"seconds\": %.4f, \"bytes\": %llu, ",
			r->ok ? "" : r->err, r->secs, (unsigned long long)r->bytes);
		perf_json_num(f, "mpps", r->mpps, true);
		perf_json_num(f, "gbps", r->gbps, true);
		perf_json_num(f, "rtt_p50_us", r->mode == M_RR ? r->p50 : NAN, true);
		perf_json_num(f, "rtt_p99_us", r->mode == M_RR ? r->p99 : NAN, true);
		perf_json_num(f, "rtt_p999_us", r->mode == M_RR ? r->p999 : NAN, true);
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
		fprintf(f, "}%s\n", i + 1 < nb_results || nb_iso || nb_scale ? "," : "");
	}
	/* The isolation part: one record per condition, VM 5's round trips ("direction"). */
	for (i = 0; i < nb_iso; i++) {
		const struct iso_result *r = &iso_results[i];

		fprintf(f, "    {\"part\": \"isolation\", \"condition\": \"%s\", \"variant\": "
			"\"%s\", \"host\": \"%s\", \"ring\": \"%s\", \"direction\": \"rr\", "
			"\"payload\": %u, \"cid\": %d, \"flood_cid\": %d, "
			"\"flood_direction\": \"g2h\", \"flood_payload\": %u, \"flood_conns\": %u, "
			"\"flood\": %s, \"ok\": %s, \"error\": \"%s\", \"slices\": %u, "
			"\"slice_seconds\": %g, \"seconds\": %.4f, \"round_trips\": %llu, ",
			iso_cond_name[i], plan.variants[0].name, host_name[plan.variants[0].host],
			ring_name[plan.variants[0].ring], ISO_PING, ISO_PEER_CID, DP_CID,
			ISO_FLOOD_PAYLOAD, plan.flood_conns, i == ISO_FLOOD ? "true" : "false",
			r->ok ? "true" : "false", r->ok ? "" : r->err, r->slices, plan.secs,
			r->secs, (unsigned long long)r->round_trips);
		perf_json_num(f, "rtt_p50_us", r->p50, true);
		perf_json_num(f, "rtt_p99_us", r->p99, true);
		perf_json_num(f, "rtt_p999_us", r->p999, true);
		perf_json_num(f, "rtt_max_us", r->max, true);
		/* ISO_SLOW_US is 1000. */
		fprintf(f, "\"rtt_over_1ms\": %llu, \"flood_bytes\": %llu, "
			"\"min_slice_round_trips\": %llu, \"min_slice_flood_bytes\": %llu, ",
			(unsigned long long)r->slow, (unsigned long long)r->flood_bytes,
			(unsigned long long)r->min_slice_rtts,
			(unsigned long long)r->min_slice_flood_bytes);
		perf_json_num(f, "flood_gbps", r->flood_gbps, true);
		perf_json_num(f, "worker_busy_share", r->busy, true);
		perf_json_num(f, "p50_over_quiet", r->p50_ratio, true);
		perf_json_num(f, "p99_over_quiet", r->p99_ratio, true);
		fprintf(f, "\"slice_p50_us\": [");
		for (v = 0; v < r->slices && v < MAX_SLICES; v++)
			fprintf(f, "%s%.3f", v ? ", " : "", r->slice_p50[v]);
		fprintf(f, "]}%s\n", i + 1 < nb_iso || nb_scale ? "," : "");
	}
	perf_write_scale_json(f);
	fprintf(f, "  ]\n}\n");
	fclose(f);
}
