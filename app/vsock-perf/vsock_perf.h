/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vsock-perf's run (vsock_perf.c and the perf_*.c files beside it): the plan the command
 * line makes, the connections of a case, the results, and each file's calls. One process,
 * one thread: the state below is the run's, shared by the files that carry it out.
 */
#ifndef APP_VSOCK_PERF_VSOCK_PERF_H
#define APP_VSOCK_PERF_VSOCK_PERF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "ops_env.h"
#include "perf.h"

struct rte_mbuf;

#define PORT_G2H 5000
#define PORT_H2G 6000
#define PORT_RR 7000
/*
 * How long a control step may take: a console command's answer, a connection's handshake
 * or close, a vhost-user socket appearing, the engine taking a guest over.
 */
#define STEP_TIMEOUT_MS 5000
#define MAX_LIST 16
#define MAX_VARIANTS 8
#define MAX_RESULTS 4096
/* Isolation: slices of each condition, at most (--reps). */
#define MAX_SLICES 100
#define RTT_MAX (1u << 21)
#define RECV_BUF PERF_PAT_RUN
/*
 * How long data may stand still before a transfer has stalled: a round trip, what was in
 * flight after a window, a window in which no byte arrived, the flood's drain.
 */
#define STALL_TIMEOUT_NS 5000000000ull
/* Native host end: mbufs per send or receive call, payload bytes per mbuf. */
#define NATIVE_BURST 32
/*
 * mbufs a send fills before it hands them over (16 KiB): the worker copies them into the
 * guest while the next ones are filled, as a reader of a Unix socket takes the first part
 * of a large send() while the kernel still copies the rest, where a whole burst filled
 * first would make a round trip wait for all of it.
 */
#define NATIVE_FILL 8
#define NATIVE_SEG 2048u


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

struct result {
	unsigned int variant, rep;
	enum mode mode;
	uint32_t payload;
	unsigned int burst, conns;
	bool ok;
	char err[160];
	double secs;
	uint64_t bytes, msgs;
	double mpps, gbps;
	double p50, p99, p999;		/* rr: microseconds */
	uint64_t vq_pkts;		/* used entries both rings, in the window */
	uint64_t idx;			/* used->idx stores both rings, in the window */
	double cyc_pkt, idx_pkt, irq_pkt, kick_pkt;
	double busy;			/* the worker's busy share of the window; NAN: unknown */
	double sys_pkt;			/* other than epoll_wait; -1: not measured */
	double csys_pkt;		/* this process's thread (guest + host end); -1: same */
	long csys;			/* the same, in the whole window */
	double epoll_pkt;		/* epoll_wait (idle rounds included); -1: not measured */
	/*
	 * Callgrind (-1: none): instructions per packet in the rounds that moved something,
	 * of vsock_dev_poll and of the virtqueue code alone; of every round in the window;
	 * of one round that found nothing. From the window's dump: its instructions, rounds
	 * (calls of vsock_dev_poll), and the busy ones among them (the worker's counter).
	 */
	double ir_pkt, ring_ir_pkt, ir_all_pkt, idle_round_ir;
	double cg_ir, cg_ring, cg_rounds;
	uint64_t busy_rounds;
	double rss_per_conn;		/* app RSS growth per connection opened, bytes */
};

/* One connection of a case: both ends, and each direction's stream as checked. */
struct pconn {
	struct vfe_guest_conn *gc;
	int fd;			/* uds host end */
	int h;			/* native host end: connection handle */
	int herr;		/* native: the first error a data call returned */
	/* Native: mbufs filled and offered, not taken yet (the ring was full). */
	struct rte_mbuf *held[NATIVE_BURST];
	uint16_t held_len[NATIVE_BURST];
	uint16_t nb_held, held_off;
	uint64_t base;		/* pattern offset of this connection's stream */
	uint64_t sent, rcvd;	/* bytes handed to the transport, checked at the other end */
	struct perf_csum rx_sum;
	uint64_t bad_at;	/* UINT64_MAX: every byte matched */
};

/* The isolation part: VM 5's ping (bytes each way), VM 3's flood packets (bytes). */
#define ISO_PEER_CID 5
#define ISO_PING 64u
#define ISO_FLOOD_PAYLOAD 65536u
#define ISO_SLOW_US 1000

/* The isolation part's two conditions: VM 3 idle, VM 3 flooding. */
enum iso_cond { ISO_QUIET, ISO_FLOOD, ISO_NB };
extern const char *const iso_cond_name[ISO_NB];

/* The neighbour's (VM 5's) round trips in one condition, over all its slices. */
struct iso_result {
	bool ok;
	char err[160];
	unsigned int slices;
	double secs;			/* measured, the slices together */
	uint64_t round_trips;
	double p50, p99, p999, max;	/* microseconds */
	/* Over ISO_SLOW_US: stalls, counted as such; a percentile of few round trips hides them. */
	uint64_t slow;
	double slice_p50[MAX_SLICES];	/* each slice's own median, microseconds */
	uint64_t flood_bytes;		/* VM 3's bytes the host readers took in the slices */
	/* The fewest in one slice: whether both VMs moved in every one. */
	uint64_t min_slice_rtts, min_slice_flood_bytes;
	double flood_gbps;
	double busy;			/* the worker's busy share of the slices; NAN: unknown */
	double p50_ratio, p99_ratio;	/* over the quiet condition's */
};

/*
 * The scale part: one (VM count, repetition) of it. VM 3 is the active VM; the figures
 * are its 64 B round trips and its 64 KiB g2h stream with the others idle, and the worker's
 * rounds in a window where every VM is idle.
 */
#define SCALE_PING 64u
#define SCALE_STREAM 65536u
struct scale_result {
	unsigned int vms, rep;
	bool ok;
	char err[160];
	uint64_t round_trips;
	double p50, p99;		/* microseconds */
	uint64_t bytes;			/* the stream's, checked */
	double gbps;
	uint64_t rounds, busy_rounds;	/* the worker's, in the idle window */
	double round_ns;		/* TSC time inside one idle round */
	double wall_round_ns;		/* the window's time over its rounds */
};

/* The reference figures (--refs): what the machine does without the backend. */
struct refs {
	double cl_rtt_ns;
	double unix_rtt_us[MAX_LIST];
	double memcpy_gbps[MAX_LIST];
	double unix_gbps[MAX_LIST];
};

/* The run's state (vsock_perf.c; refs: perf_report.c). */
extern struct refs refs;
extern struct plan plan;
extern struct result results[MAX_RESULTS];
extern unsigned int nb_results;
/* The app under test and the frontend attached to it (uds host end). */
extern struct ops_env env;
/* Round-trip times of the rr case running now. */
extern uint64_t *rtts;
extern struct pconn *pconns;
/* The host end of the variant running now. */
extern enum host cur_host;
/* Native host mbufs that did not come back to their pool, over every native run. */
extern unsigned int native_lost;
/* The isolation part's results, once it ran (nb_iso: conditions measured, 0 or ISO_NB). */
extern struct iso_result iso_results[ISO_NB];
extern unsigned int nb_iso;

/* perf_args.c: the command line */
void perf_parse_args(int argc, char **argv);

/* perf_probe.c: the backend's counters, perf stat of its syscalls, callgrind */
/* The threads perf stat counts the syscalls of: the backend's worker, this one. */
enum { PS_WORKER, PS_CLIENT, PS_NB };
pid_t perf_backend_pid(void);
void perf_counters_read(struct perf_counters *c);
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
double perf_per(uint64_t a, uint64_t b);
void perf_syscalls_start(void);
long perf_syscalls_stop(unsigned int i, long *epolls);
void perf_cg_cmd(const char *opt);
void perf_cg_read_ir(double *poll, double *ring, double *rounds);
void perf_cg_busy_only(struct result *r);

/* perf_conn.c: the connections of a case, both ends of each */
struct vfe_guest_conf perf_guest_conf(enum mode m, uint32_t payload);
bool perf_stream_check(struct pconn *pc, const uint8_t *buf, size_t n);
uint64_t perf_sent_csum(const struct pconn *pc);
long perf_host_send(struct pconn *pc, uint64_t at, uint64_t len);
long perf_host_recv(struct pconn *pc, uint64_t max);
int perf_open_conns(enum mode m, unsigned int n);
void perf_close_conns(unsigned int n);
bool perf_all_received(unsigned int n);
uint64_t perf_total_rcvd(unsigned int n);

/* perf_case.c: one measured window of the stream and round-trip cases */
void perf_run_stream(struct result *r);
void perf_run_rr(struct result *r);
/* Sort @p n round trips (ns); percentile @p p (0..1) of the sorted ones, in us (0: none). */
void perf_rtt_sort(uint64_t *ns, uint64_t n);
double perf_rtt_pct(const uint64_t *sorted, uint64_t n, double p);

/* perf_run.c: one variant's backend and every case on it */
/* The app's RSS with its default options, KiB (-1: not measured). */
extern long rss_default_kib;
bool perf_run_variant(unsigned int v, unsigned int rep);
int perf_attach(struct dp_env *e, bool packed, const struct vfe_guest_conf *gc, char *err,
		size_t len);
bool perf_vm_running(unsigned int cid);
/* No interrupts for a polling guest (unless --guest-irq). */
void perf_guest_polling(struct dp_env *e);

/* perf_iso.c: the isolation part; whether it went well and the app exited cleanly */
bool perf_run_isolation(void);

/* perf_scale.c: the scale part; whether every count ran and its app exited cleanly */
extern struct scale_result *scale_results;
extern unsigned int nb_scale;
bool perf_run_scale(void);
void perf_print_scale_table(FILE *f);
/* Its records for the JSON's "cases", each followed by ",\n" but the last. */
void perf_write_scale_json(FILE *f);

/* perf_report.c: the references, the summary table and the JSON records */
void perf_measure_refs(void);
void perf_print_table(FILE *f);
void perf_print_iso_table(FILE *f);
void perf_write_json(const char *path);
/* Median of @p v (sorted in place; NAN if empty); a JSON number, null if not finite. */
double perf_median(double *v, unsigned int n);
void perf_json_num(FILE *f, const char *k, double v, bool comma);

#endif /* APP_VSOCK_PERF_VSOCK_PERF_H */
