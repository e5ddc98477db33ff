/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vsock-perf's command line (perf_args.c): the words of its lists and the plan they cross
 * into, which every part of the run reads and none changes.
 */
#ifndef APP_VSOCK_PERF_PERF_ARGS_H
#define APP_VSOCK_PERF_PERF_ARGS_H

#include <stdbool.h>
#include <stdint.h>

/* Entries of a list option (--payloads, --bursts, --conns, --vms). */
#define MAX_LIST 16
/* Variants once crossed with the host ends and ring layouts. */
#define MAX_VARIANTS 8
/* Repetitions (--reps), and so the isolation part's slices of each condition. */
#define MAX_REPS 100

/* The words of --modes, --host and --rings, in the order of their enums. */
enum mode { M_G2H, M_H2G, M_RR, M_NB };
extern const char *const mode_name[M_NB];

enum host { H_UDS, H_NATIVE, H_NB };
extern const char *const host_name[H_NB];

/* The virtqueue layout the guest asks for; the backend offers both. */
enum ring { R_SPLIT, R_PACKED, R_NB };
extern const char *const ring_name[R_NB];

struct variant {
	char name[32];
	const char *args[6];	/* the app's options (uds host end) */
	bool per_entry, notify;	/* the same, for the engine this process runs (native) */
	enum host host;
	enum ring ring;
};

struct plan {
	bool modes[M_NB];
	uint32_t payloads[MAX_LIST];
	unsigned int nb_payloads;
	unsigned int bursts[MAX_LIST];
	unsigned int nb_bursts;
	unsigned int conns[MAX_LIST];
	unsigned int nb_conns;
	struct variant variants[MAX_VARIANTS];
	unsigned int nb_variants;
	bool hosts[H_NB];	/* host ends, each crossed with every variant */
	bool rings[R_NB];	/* ring layouts, each crossed with every variant and host end */
	unsigned int reps;
	double secs;
	uint16_t ring;
	bool refs;
	bool smoke;		/* seconds-long figures for the CI check (tests/bench) */
	bool syscalls;		/* perf stat the worker's syscalls in each window */
	bool callgrind;		/* the app runs under callgrind: zero, dump around windows */
	bool guest_irq;		/* the guest wants an interrupt per used entry (Linux) */
	bool isolation;		/* the isolation part (perf_iso.c) instead of the cases */
	unsigned int flood_conns;	/* isolation: VM 3's flood connections */
	bool scale;		/* the scale part (perf_scale.c) instead of the cases */
	unsigned int vm_counts[MAX_LIST];	/* scale: VMs on the one worker lcore */
	unsigned int nb_vm_counts;
	const char *json;
};

/* Fill @p plan from the command line; exits 2 on a bad one, 0 after --help. */
void perf_parse_args(int argc, char **argv, struct plan *plan);

#endif /* APP_VSOCK_PERF_PERF_ARGS_H */
