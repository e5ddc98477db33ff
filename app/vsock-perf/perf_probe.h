/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The backend's counters as vsock-perf reads them (perf_probe.c): its statistics over
 * telemetry or the native API, perf stat of the worker's and this thread's syscalls in a
 * window, and the instructions callgrind counts in it.
 */
#ifndef APP_VSOCK_PERF_PERF_PROBE_H
#define APP_VSOCK_PERF_PERF_PROBE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <vsock_pmd.h>

struct perf_run;

/* The backend's counters over a measured window, however they are read. */
struct perf_counters {
	uint64_t vq_pkts;	/* used entries, both rings */
	uint64_t idx, irq, kicks;	/* used->idx stores, guest interrupts, guest kicks */
	uint64_t busy_cycles, cycles_pkts;	/* the worker's busy rounds, what they moved */
	uint64_t busy_rounds;	/* the worker's rounds that moved something */
	uint64_t from_guest, to_guest;	/* vsock packets */
	bool ok;		/* every counter was read */
};

/* The threads perf stat counts the syscalls of: the backend's worker, this one. */
enum { PS_WORKER, PS_CLIENT, PS_NB };

/* What the probe keeps between the start and the stop of a window. */
struct perf_probe {
	pid_t perf_pid[PS_NB];		/* perf stat of each thread; -1: none running */
	int perf_ctl[PS_NB], perf_ack[PS_NB];	/* its control fifo and ack fifo */
	int perf_pidfd[PS_NB];		/* readable once it has exited */
	char perf_out[PS_NB][128];	/* where it writes */
	/* The native host end's statistics, read in place (8 KiB of burst histograms). */
	struct vsock_pmd_vm_stats vm_stats;
};

/* The process whose worker is measured: the app, or this one. */
pid_t perf_backend_pid(const struct perf_run *run);
void perf_counters_read(struct perf_run *run, struct perf_counters *c);

/*
 * The worker's busy share: its cycles in rounds that moved something (record-core-cycles),
 * over a span of the TSC, the client's timed loop between two counter reads (the window of
 * the rate beside it). Not over the worker's own round cycles: a sleeping worker (notify)
 * has none while it waits. Under 1, the worker waited for this process (the guest and host
 * end it plays). A part measuring in several spans adds them up.
 */
struct perf_busy {
	uint64_t busy, tsc;
	bool failed;		/* a counter read failed: no share */
};
void perf_busy_add(struct perf_busy *acc, const struct perf_counters *c0,
		   const struct perf_counters *c1, uint64_t tsc);
/* busy / tsc; NAN when unknown. */
double perf_busy_share(const struct perf_busy *acc);

/*
 * With --syscalls: perf stat of each thread from here to perf_syscalls_stop(), counting
 * from its return on (each perf enabled and acked through its control fifo).
 */
void perf_syscalls_start(struct perf_run *run);
/*
 * Syscalls of thread @p i in the window other than epoll_wait (in @p *epolls): an idle
 * worker round asks the kernel for socket events every time, so those count idleness, not
 * packets. Counting ends first (perf disabled and acked), then perf. -1: not measured.
 */
long perf_syscalls_stop(struct perf_run *run, unsigned int i, long *epolls);

/* callgrind_control @p opt on the app ("-z": zero, "-d": dump). */
void perf_cg_cmd(const struct perf_run *run, const char *opt);
/*
 * From the newest dump of the app: instructions under dp_dev_poll (inclusive) in
 * @p *poll, those of the virtqueue code alone in @p *ring, and the calls of dp_dev_poll
 * (worker rounds) in @p *rounds; -1 if absent.
 */
void perf_cg_read_ir(const struct perf_run *run, double *poll, double *ring, double *rounds);

#endif /* APP_VSOCK_PERF_PERF_PROBE_H */
