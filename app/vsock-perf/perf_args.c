/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vsock-perf's command line: the options, the lists, and the plan they cross into.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <vsock_pmd.h>

#include "perf_args.h"

const char *const mode_name[M_NB] = { "g2h", "h2g", "rr" };
const char *const host_name[H_NB] = { "uds", "native" };
const char *const ring_name[R_NB] = { "split", "packed" };

/* What every variant is run with, in this order. */
static const struct variant known_variants[] = {
	{ "batch", { NULL }, false, false, H_UDS, R_SPLIT },
	{ "per-entry", { "--used-publish", "per-entry", NULL }, true, false, H_UDS, R_SPLIT },
	{ "poll", { NULL }, false, false, H_UDS, R_SPLIT },
	{ "notify", { "--wait-mode", "notify", NULL }, false, true, H_UDS, R_SPLIT },
};

#define NB_KNOWN (sizeof(known_variants) / sizeof(known_variants[0]))

/* --scale's VM counts (issue 14). */
static const unsigned int scale_default[] = { 1, 16, 64, 256 };

static void usage(void)
{
	printf("Usage: vsock-perf [options]   (VSOCK_APP names dpdk-vsock-app, default "
	       VSOCK_APP_DEFAULT ")\n"
	       "  --host LIST       host ends, crossed with the variants and run alternately:\n"
	       "                    uds (the app's Unix sockets, default), native (the engine\n"
	       "                    in this process, the native poll-mode API on lcore 0)\n"
	       "  --modes LIST      g2h,h2g,rr (default all)\n"
	       "  --payloads LIST   bytes per packet or message\n"
	       "                    (default 64,256,1024,4096,16384,65536)\n"
	       "  --bursts LIST     app burst sizes, 1..256 (default 32)\n"
	       "  --conns LIST      connections, 1..1023 (default 1)\n"
	       "  --rings LIST      ring layouts the guest asks for, crossed with the variants\n"
	       "                    and host ends and run alternately: split (default), packed\n"
	       "  --variants LIST   app variants run alternately: batch, per-entry, poll, notify\n"
	       "                    (default batch); the ratio columns are 2nd/1st, of the\n"
	       "                    medians and the median of each repetition's pair\n"
	       "  --reps N          repetitions of every variant (default 3)\n"
	       "  --time S          seconds per measured case (default 1)\n"
	       "  --ring N          entries per ring (default 128, QEMU's)\n"
	       "  --refs            measure the reference limits first\n"
	       "  --syscalls        count the worker's and this thread's syscalls (perf stat)\n"
	       "  --callgrind       the app runs under callgrind (VSOCK_PERF_CG_DIR): instructions\n"
	       "                    per packet in the rounds that moved packets, of the whole\n"
	       "                    poll and of the virtqueue code; the native host end's engine\n"
	       "                    is this process: run it under valgrind --tool=callgrind\n"
	       "                    --toggle-collect=dp_dev_poll\n"
	       "  --guest-irq       the guest asks for an interrupt per used entry, as Linux's\n"
	       "                    driver; default: a polling guest that asks for none\n"
	       "  --json FILE       one record per case\n"
	       "  --smoke           seconds-long figures, for the CI check (tests/bench)\n"
	       "  --isolation       instead of the cases: VMs 3 and 5 on one worker lcore,\n"
	       "                    VM 3 streaming 64 KiB g2h packets to fast host readers\n"
	       "                    while VM 5 ping-pongs 64 B; VM 5's round trips with the\n"
	       "                    flood and without it, in alternate slices: --reps slices\n"
	       "                    of each condition (default 10), --time seconds per slice\n"
	       "                    (default 0.2), --conns the flood's connections (default 4);\n"
	       "                    the first variant and ring layout, the uds host end\n"
	       "  --scale           instead of the cases: N VMs on one worker lcore, VM 3\n"
	       "                    active (64 B ping-pong, 64 KiB g2h stream), the others\n"
	       "                    attached and idle; the worker's cost per idle VM per round\n"
	       "  --vms LIST        --scale: VM counts, 1..%d (default 1,16,64,256 up to %d)\n",
	       VSOCK_PMD_MAX_VMS, VSOCK_PMD_MAX_VMS);
}

static unsigned int parse_list(const char *s, unsigned int *out, unsigned int lo,
			       unsigned int hi)
{
	char buf[256], *save, *t;
	unsigned int n = 0;

	snprintf(buf, sizeof(buf), "%s", s);
	for (t = strtok_r(buf, ",", &save); t && n < MAX_LIST; t = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long v = strtoul(t, &end, 0);

		if (*end == 'k' || *end == 'K') {
			v *= 1024;
			end++;
		}
		if (*end || v < lo || v > hi) {
			fprintf(stderr, "vsock-perf: '%s' is not in %u..%u\n", t, lo, hi);
			exit(2);
		}
		out[n++] = (unsigned int)v;
	}
	return n;
}

/* Which of @p names the words of @p arg are: @p on[i] for names[i], the others false. */
static void parse_names(const char *arg, const char *const *names, unsigned int nb, bool *on,
			const char *what)
{
	char buf[256], *save, *t;
	unsigned int i;

	memset(on, 0, nb * sizeof(*on));
	snprintf(buf, sizeof(buf), "%s", arg);
	for (t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < nb && strcmp(t, names[i]); i++)
			;
		if (i == nb) {
			fprintf(stderr, "vsock-perf: unknown %s '%s'\n", what, t);
			exit(2);
		}
		on[i] = true;
	}
}

/*
 * Every variant with every host end and ring layout, the ring layouts adjacent and then the
 * host ends (split, packed, split, packed ... or uds, native, uds, native ... when
 * alternated): the ratio column is then packed over split, or native over uds. A name says
 * what varies: "native/batch", "packed", "uds/packed".
 */
static void cross_axes(struct plan *plan)
{
	struct variant base[MAX_VARIANTS];
	unsigned int i, h, k, nb = plan->nb_variants, nb_hosts = 0, nb_rings = 0;

	for (h = 0; h < H_NB; h++)
		nb_hosts += plan->hosts[h];
	for (k = 0; k < R_NB; k++)
		nb_rings += plan->rings[k];
	memcpy(base, plan->variants, sizeof(base));
	plan->nb_variants = 0;
	for (i = 0; i < nb; i++) {
		for (h = 0; h < H_NB; h++) {
			if (!plan->hosts[h])
				continue;
			/*
			 * A sleeping worker wakes on guest kicks and host sockets only, not on
			 * the native API's rings: it would see the host program every 10 ms.
			 */
			if (h == H_NATIVE && base[i].notify) {
				fprintf(stderr, "vsock-perf: the native host end runs with a polling "
					"worker\n");
				exit(2);
			}
			for (k = 0; k < R_NB; k++) {
				struct variant *v = &plan->variants[plan->nb_variants];
				char what[24] = "";

				if (!plan->rings[k])
					continue;
				if (plan->nb_variants == MAX_VARIANTS) {
					fprintf(stderr, "vsock-perf: at most %d variants with host ends "
						"and ring layouts\n", MAX_VARIANTS);
					exit(2);
				}
				*v = base[i];
				v->host = (enum host)h;
				v->ring = (enum ring)k;
				if (nb_hosts > 1 && nb > 1)
					snprintf(what, sizeof(what), "%.6s/%.16s", host_name[h],
						 base[i].name);
				else if (nb_hosts > 1)
					snprintf(what, sizeof(what), "%s", host_name[h]);
				else if (nb > 1 || nb_rings == 1)
					snprintf(what, sizeof(what), "%.23s", base[i].name);
				if (nb_rings > 1)
					snprintf(v->name, sizeof(v->name), "%s%s%s", what,
						 what[0] ? "/" : "", ring_name[k]);
				else
					snprintf(v->name, sizeof(v->name), "%s", what);
				plan->nb_variants++;
			}
		}
	}
}

void perf_parse_args(int argc, char **argv, struct plan *plan)
{
	static const struct option opts[] = {
		{ "modes", 1, NULL, 'm' }, { "payloads", 1, NULL, 'p' },
		{ "bursts", 1, NULL, 'b' }, { "conns", 1, NULL, 'c' },
		{ "variants", 1, NULL, 'v' }, { "reps", 1, NULL, 'r' },
		{ "time", 1, NULL, 't' }, { "ring", 1, NULL, 'R' }, { "refs", 0, NULL, 'f' },
		{ "syscalls", 0, NULL, 's' }, { "callgrind", 0, NULL, 'g' },
		{ "json", 1, NULL, 'j' }, { "guest-irq", 0, NULL, 'I' },
		{ "smoke", 0, NULL, 'S' }, { "host", 1, NULL, 'H' }, { "rings", 1, NULL, 'L' },
		{ "isolation", 0, NULL, 'i' }, { "scale", 0, NULL, 'x' },
		{ "vms", 1, NULL, 'n' }, { "help", 0, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	/* The options without a value: each sets its flag of the plan. */
	bool *const flags[128] = {
		['f'] = &plan->refs, ['s'] = &plan->syscalls, ['g'] = &plan->callgrind,
		['I'] = &plan->guest_irq, ['S'] = &plan->smoke, ['i'] = &plan->isolation,
		['x'] = &plan->scale,
	};
	unsigned int i, ring = 128, reps = 3;
	bool reps_set = false, time_set = false, conns_set = false;
	char buf[256], *save, *t;
	int o;

	plan->modes[M_G2H] = plan->modes[M_H2G] = plan->modes[M_RR] = true;
	plan->nb_payloads = parse_list("64,256,1024,4096,16384,65536", plan->payloads, 1, 65536);
	plan->nb_bursts = parse_list("32", plan->bursts, 1, 256);
	plan->nb_conns = parse_list("1", plan->conns, 1, 1023);
	plan->variants[0] = known_variants[0];
	plan->nb_variants = 1;
	plan->hosts[H_UDS] = true;
	plan->rings[R_SPLIT] = true;
	plan->secs = 1;
	/* The counts; the engine's table holds them all (VSOCK_PMD_MAX_VMS). */
	RTE_BUILD_BUG_ON(256 > VSOCK_PMD_MAX_VMS);
	for (i = 0; i < RTE_DIM(scale_default); i++)
		plan->vm_counts[plan->nb_vm_counts++] = scale_default[i];
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (o > 0 && o < (int)RTE_DIM(flags) && flags[o] != NULL) {
			*flags[o] = true;
			continue;
		}
		switch (o) {
		case 'm':
			parse_names(optarg, mode_name, M_NB, plan->modes, "mode");
			break;
		case 'p':
			plan->nb_payloads = parse_list(optarg, plan->payloads, 1, 65536);
			break;
		case 'b':
			plan->nb_bursts = parse_list(optarg, plan->bursts, 1, 256);
			break;
		case 'c':
			plan->nb_conns = parse_list(optarg, plan->conns, 1, 1023);
			conns_set = true;
			break;
		case 'v':
			plan->nb_variants = 0;
			snprintf(buf, sizeof(buf), "%s", optarg);
			for (t = strtok_r(buf, ",", &save); t && plan->nb_variants < MAX_VARIANTS;
			     t = strtok_r(NULL, ",", &save)) {
				for (i = 0; i < NB_KNOWN &&
				     strcmp(t, known_variants[i].name); i++)
					;
				if (i == NB_KNOWN) {
					fprintf(stderr, "vsock-perf: unknown variant '%s'\n", t);
					exit(2);
				}
				plan->variants[plan->nb_variants++] = known_variants[i];
			}
			break;
		case 'r':
			reps = (unsigned int)atoi(optarg);
			reps_set = true;
			break;
		case 't':
			plan->secs = atof(optarg);
			time_set = true;
			break;
		case 'R':
			ring = (unsigned int)atoi(optarg);
			break;
		case 'j':
			plan->json = optarg;
			break;
		case 'H':
			parse_names(optarg, host_name, H_NB, plan->hosts, "host end");
			break;
		case 'L':
			parse_names(optarg, ring_name, R_NB, plan->rings, "ring layout");
			break;
		case 'n':
			plan->nb_vm_counts = parse_list(optarg, plan->vm_counts, 1, 1u << 20);
			for (i = 0; i < plan->nb_vm_counts; i++)
				if (plan->vm_counts[i] > VSOCK_PMD_MAX_VMS) {
					fprintf(stderr, "vsock-perf: --vms %u: one app serves at most "
						"%d VMs (VSOCK_PMD_MAX_VMS, the length of the engine's "
						"VM table)\n", plan->vm_counts[i], VSOCK_PMD_MAX_VMS);
					exit(2);
				}
			break;
		case 'h':
			usage();
			exit(0);
		default:
			usage();
			exit(2);
		}
	}
	/* Isolation: many short slices of each condition, a flood deep enough to last a trip. */
	if (plan->isolation) {
		reps = reps_set ? reps : 10;
		plan->secs = time_set ? plan->secs : 0.2;
		plan->flood_conns = conns_set ? plan->conns[0] : 4;
	}
	if (ring < 2 || ring > 1024 || (ring & (ring - 1)) || reps < 1 || reps > MAX_REPS ||
	    !(plan->secs > 0) || plan->nb_variants == 0) {
		fprintf(stderr, "vsock-perf: bad --ring, --reps, --time or --variants\n");
		exit(2);
	}
	plan->ring = (uint16_t)ring;
	plan->reps = reps;
	cross_axes(plan);
	if (plan->nb_variants == 0) {
		fprintf(stderr, "vsock-perf: no host end or no ring layout\n");
		exit(2);
	}
	if (plan->isolation && plan->scale) {
		fprintf(stderr, "vsock-perf: --isolation or --scale, not both\n");
		exit(2);
	}
	/*
	 * The isolation part (one app with two VMs) and the scale part (one app per VM count)
	 * are each measured as one thing: nothing to cross them with.
	 */
	if ((plan->isolation || plan->scale) &&
	    (plan->nb_variants > 1 || plan->variants[0].host != H_UDS || plan->refs ||
	     plan->syscalls || plan->callgrind)) {
		fprintf(stderr, "vsock-perf: --%s runs one variant and ring layout on the uds host "
			"end, without --refs, --syscalls or --callgrind\n",
			plan->isolation ? "isolation" : "scale");
		exit(2);
	}
}
