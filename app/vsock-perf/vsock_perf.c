/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vsock-perf: throughput and latency of dpdk-vsock, driven through the userspace
 * vhost-user frontend (tests/frontend), with one of two host ends:
 * - uds: dpdk-vsock-app in its own process, the host programs on its hybrid Unix sockets;
 * - native: the accelerator in this process (perf_native.c), the host program on the
 *   native poll-mode API (mbufs through rings, no syscall).
 *
 * This process plays both the guest and the host end on CPU 0: the guest driver polls its
 * rings (no interrupts, no kicks unless the backend asks for them), the host end uses
 * non-blocking sockets or the native calls. The backend's worker lcore has CPU 1 to
 * itself, so what is measured is the backend. Every byte is checked against the pattern at
 * its stream offset and both ends' checksums and byte counts are compared: a fast wrong run
 * fails.
 *
 * Variants (host end, ring layout and backend settings) run alternately, A B A B ..., each
 * as a fresh backend instance that runs every case; the summary gives medians per variant
 * and their ratios. See doc/performance.md.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dirent.h>

#include <rte_mbuf.h>

#include <vsock_pmd.h>
#include <vsock_pmd_native.h>

#include "ops_env.h"
#include "tap.h"
#include "perf.h"

#define PORT_G2H 5000
#define PORT_H2G 6000
#define PORT_RR 7000
#define MS 5000
#define MAX_LIST 16
#define MAX_VARIANTS 8
#define MAX_RESULTS 4096
#define RTT_MAX (1u << 21)
#define RECV_BUF PERF_PAT_RUN
#define DRAIN_NS 5000000000ull
/* Two counter reads, each up to one entry ahead of its store on each of the two queues. */
#define SMOKE_SKEW 4
/* Native host end: mbufs per send or receive call, payload bytes per mbuf. */
#define NATIVE_BURST 32
#define NATIVE_SEG 2048u
/* Syscalls perf's start and stop add to the client thread's count in a window, at most. */
#define NATIVE_MEASURE_SYSCALLS 16

enum mode { M_G2H, M_H2G, M_RR, M_NB };
static const char *const mode_name[M_NB] = { "g2h", "h2g", "rr" };

enum host { H_UDS, H_NATIVE, H_NB };
static const char *const host_name[H_NB] = { "uds", "native" };

/* The virtqueue layout the guest asks for; the backend offers both. */
enum ring { R_SPLIT, R_PACKED, R_NB };
static const char *const ring_name[R_NB] = { "split", "packed" };

struct variant {
	char name[32];
	const char *args[6];	/* the app's options (uds host end) */
	bool per_entry, notify;	/* the same, for the engine this process runs (native) */
	enum host host;
	enum ring ring;
};

/* What every variant is run with, in this order. */
static const struct variant known_variants[] = {
	{ "batch", { NULL }, false, false, H_UDS, R_SPLIT },
	{ "per-entry", { "--used-publish", "per-entry", NULL }, true, false, H_UDS, R_SPLIT },
	{ "poll", { NULL }, false, false, H_UDS, R_SPLIT },
	{ "notify", { "--wait-mode", "notify", NULL }, false, true, H_UDS, R_SPLIT },
};

#define NB_KNOWN (sizeof(known_variants) / sizeof(known_variants[0]))

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
	bool smoke;
	bool syscalls;		/* perf stat the worker's syscalls in each window */
	bool callgrind;		/* the app runs under callgrind: zero, dump around windows */
	bool guest_irq;		/* the guest wants an interrupt per used entry (Linux) */
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
	double cyc_pkt, idx_pkt, irq_pkt, kick_pkt;
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

static struct plan plan;
static struct result results[MAX_RESULTS];
static unsigned int nb_results;
static struct ops_env env;
static uint8_t rbuf[RECV_BUF];
static uint64_t *rtts;

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

static struct pconn *pconns;
/* The host end of the variant running now. */
static enum host cur_host;
/* Native host mbufs that did not come back to their pool, over every native run. */
static unsigned int native_lost;
static bool native_up;

/* The process whose worker is measured: the app, or this one. */
static pid_t backend_pid(void)
{
	return cur_host == H_NATIVE ? getpid() : env.dp.app.pid;
}

static const char *run_dir(void)
{
	return cur_host == H_NATIVE ? perf_native_dir() : env.dp.app.dir;
}

/* ---- the backend's counters ---- */

static uint64_t tel(const char *cmd, const char *path)
{
	return ops_tel_u64(&env, cmd, path);
}

static void counters_read(struct perf_counters *c)
{
	char cmd[32];
	char json[OPS_TEL_MAX];
	uint64_t v[8];
	unsigned int i;
	static const char *const keys[] = {
		"rx.packets", "tx.packets", "rx.used_idx_flushes", "tx.used_idx_flushes",
		"rx.interrupts", "tx.interrupts", "rx.kicks", "tx.kicks",
	};

	if (cur_host == H_NATIVE) {
		perf_native_counters(DP_CID, c);
		return;
	}
	memset(c, 0, sizeof(*c));
	snprintf(cmd, sizeof(cmd), "/vsock/stats,%d", DP_CID);
	if (ops_tel(&env, cmd, json, sizeof(json)) < 0)
		return;
	for (i = 0; i < 8; i++)
		if (ops_json_u64(json, keys[i], &v[i]) < 0)
			v[i] = 0;
	c->vq_pkts = v[0] + v[1];
	c->idx = v[2] + v[3];
	c->irq = v[4] + v[5];
	c->kicks = v[6] + v[7];
	if (ops_json_u64(json, "from_guest_pkts", &c->from_guest) < 0)
		c->from_guest = 0;
	if (ops_json_u64(json, "to_guest_pkts", &c->to_guest) < 0)
		c->to_guest = 0;
	c->busy_cycles = tel("/vsock/lcores", "1.busy_cycles");
	c->cycles_pkts = tel("/vsock/lcores", "1.cycles_pkts");
	c->busy_rounds = tel("/vsock/lcores", "1.busy_polls");
	/* tel() says UINT64_MAX when the app did not answer. */
	c->ok = c->busy_cycles != UINT64_MAX && c->cycles_pkts != UINT64_MAX &&
		c->busy_rounds != UINT64_MAX;
}

static double per(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0;
}

/* ---- syscalls of the worker and of this thread, counted by perf in the window ---- */

/* perf stat of the worker thread, of this (client) thread. */
enum { PS_WORKER, PS_CLIENT, PS_NB };
static pid_t perf_pid[PS_NB] = { -1, -1 };
static char perf_out[PS_NB][128];

static int worker_tid(void)
{
	char dir[64], path[320], comm[32];
	struct dirent *d;
	DIR *dp;
	int tid = -1;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)backend_pid());
	dp = opendir(dir);
	if (dp == NULL)
		return -1;
	while (tid < 0 && (d = readdir(dp)) != NULL) {
		FILE *f;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%.32s/comm", dir, d->d_name);
		f = fopen(path, "r");
		if (f == NULL)
			continue;
		if (fgets(comm, sizeof(comm), f) && strncmp(comm, "rte-worker-", 11) == 0)
			tid = atoi(d->d_name);
		fclose(f);
	}
	closedir(dp);
	return tid;
}

static void syscalls_start(void)
{
	int tids[PS_NB] = { worker_tid(), (int)getpid() };
	char not_epoll[32];
	unsigned int i;

	/*
	 * The syscalls other than epoll_wait in a counter of their own: subtracting a
	 * separate epoll_wait counter, enabled a moment apart, leaves thousands of an idle
	 * worker's epoll_waits in the difference when perf is slow to start both.
	 */
	snprintf(not_epoll, sizeof(not_epoll), "id != %d", (int)SYS_epoll_wait);
	for (i = 0; i < PS_NB; i++) {
		char tid[16];

		perf_pid[i] = -1;
		if (!plan.syscalls || tids[i] < 0)
			continue;
		snprintf(tid, sizeof(tid), "%d", tids[i]);
		snprintf(perf_out[i], sizeof(perf_out[i]), "%s/perf-syscalls-%u.txt", run_dir(),
			 i);
		perf_pid[i] = fork();
		if (perf_pid[i] == 0) {
			execlp("perf", "perf", "stat", "-x", ",", "-e", "raw_syscalls:sys_enter",
			       "--filter", not_epoll, "-e", "syscalls:sys_enter_epoll_wait", "-t",
			       tid, "-o", perf_out[i], (char *)NULL);
			_exit(127);
		}
	}
	/* perf needs a moment to attach; what it misses is the window's first instant. */
	if (perf_pid[PS_WORKER] > 0 || perf_pid[PS_CLIENT] > 0)
		usleep(50000);
}

/*
 * Syscalls of thread @p i in the window other than epoll_wait (in @p *epolls): an idle
 * worker round asks the kernel for socket events every time, so those count idleness, not
 * packets. -1: not measured.
 */
static long syscalls_stop(unsigned int i, long *epolls)
{
	char line[256];
	long n = -1;
	FILE *f;

	*epolls = -1;
	if (perf_pid[i] <= 0)
		return -1;
	kill(perf_pid[i], SIGINT);
	waitpid(perf_pid[i], NULL, 0);
	perf_pid[i] = -1;
	f = fopen(perf_out[i], "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, "raw_syscalls:sys_enter"))
			n = atol(line);
		else if (strstr(line, "sys_enter_epoll_wait"))
			*epolls = atol(line);
	}
	fclose(f);
	return n;
}

/* ---- callgrind: instructions per packet, of vsock_dev_poll and of the virtqueue code ---- */

static void cg_cmd(const char *opt)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "callgrind_control %s %d >/dev/null 2>&1", opt,
		 (int)env.dp.app.pid);
	if (system(cmd) != 0)
		fprintf(stderr, "vsock-perf: '%s' failed\n", cmd);
}

/*
 * Instructions of the virtqueue code in a function list of callgrind_annotate (self cost):
 * the functions of virtq*.c and what they inline (guest_mem.h's translation), and the code of
 * virtq*.h inlined into the data path (completions, the layout dispatch). The header and
 * payload copies out of a chain are not the ring's: the same on either layout.
 */
static bool cg_ring_code(const char *file, const char *fn)
{
	const char *base = strrchr(file, '/');

	base = base ? base + 1 : file;
	if (!strcmp(fn, "virtq_chain_read") || !strcmp(fn, "virtq_chain_write") ||
	    !strcmp(fn, "pieces_copy"))
		return false;
	return !strncmp(base, "virtq", 5) || !strncmp(fn, "virtq_", 6);
}

/* "1,234,567" -> 1234567 */
static double cg_num(const char *s)
{
	char num[32];
	unsigned int j = 0;

	for (; *s && j < sizeof(num) - 1; s++)
		if (*s != ',')
			num[j++] = *s;
	num[j] = '\0';
	return atof(num);
}

/*
 * From the newest dump of the app: instructions under vsock_dev_poll (inclusive) in
 * @p *poll, those of the virtqueue code alone (cg_ring_code()) in @p *ring, and the calls
 * of vsock_dev_poll (worker rounds) in @p *rounds; -1 if absent.
 */
static void cg_read_ir(double *poll, double *ring, double *rounds)
{
	char cmd[640], line[512];
	double calls = 0;
	FILE *p;

	*poll = *ring = *rounds = -1;
	snprintf(cmd, sizeof(cmd),
		 "f=$(ls -t ${VSOCK_PERF_CG_DIR:-.}/callgrind.out.%d* 2>/dev/null | head -1); "
		 "[ -n \"$f\" ] && { callgrind_annotate --inclusive=yes --tree=caller --auto=no "
		 "--threshold=100 \"$f\" | sed 's/^/I /'; callgrind_annotate --inclusive=no "
		 "--auto=no --threshold=100 \"$f\" | sed 's/^/S /'; } 2>/dev/null",
		 (int)env.dp.app.pid);
	p = popen(cmd, "r");
	if (p == NULL)
		return;
	/*
	 * "S <count> (<share>%)  <file>:<function> [<object>]": self cost. The caller tree
	 * ("I") has per function its callers, "<count> (<share>%)  < <file>:<caller> (<n>x)",
	 * then the function, "<count> (<share>%)  *  <file>:<function>": inclusive cost.
	 */
	while (fgets(line, sizeof(line), p)) {
		char num[32], mark[4], where[400], times[32], *fn;
		int k;

		k = sscanf(line + 2, "%31s (%*[^)]) %3s %399s (%31[0-9,]x)", num, mark, where,
			   times);
		if (k < 2 || num[0] < '0' || num[0] > '9')
			continue;
		if (line[0] == 'I' && k == 4 && !strcmp(mark, "<")) {
			calls += cg_num(times);
			continue;
		}
		if (line[0] == 'S') {
			/* No mark in the flat list: the word after the share is the place. */
			if (sscanf(line + 2, "%*s (%*[^)]) %399s", where) != 1)
				continue;
		} else if (k < 3 || strcmp(mark, "*")) {
			calls = 0;
			continue;
		}
		fn = strrchr(where, ':');
		if (fn == NULL) {
			calls = 0;
			continue;
		}
		*fn++ = '\0';
		if (line[0] == 'I' && *poll < 0 && !strcmp(fn, "vsock_dev_poll")) {
			*poll = cg_num(num);
			*rounds = calls;
		} else if (line[0] == 'S' && cg_ring_code(where, fn)) {
			*ring = (*ring < 0 ? 0 : *ring) + cg_num(num);
		}
		calls = 0;
	}
	pclose(p);
}

/*
 * After a case, its connections open and nothing moving: what a round that finds nothing
 * costs, from a dump of such rounds alone. The window's rounds that moved nothing (the
 * worker spins while this process waits for callgrind_control, or is descheduled) are then
 * taken out of its figures: what remains is the cost of moving packets.
 */
static void cg_busy_only(struct result *r)
{
	double ir, ring, rounds, idle;

	if (r->cg_ir < 0 || r->cg_rounds < 0 || r->vq_pkts == 0)
		return;
	r->ir_all_pkt = r->cg_ir / (double)r->vq_pkts;
	cg_cmd("-z");
	usleep(300000);
	cg_cmd("-d");
	cg_read_ir(&ir, &ring, &rounds);
	if (ir < 0 || rounds <= 0)
		return;
	idle = RTE_MAX(r->cg_rounds - (double)r->busy_rounds, 0.0);
	r->idle_round_ir = ir / rounds;
	r->ir_pkt = (r->cg_ir - idle * r->idle_round_ir) / (double)r->vq_pkts;
	if (r->cg_ring >= 0)
		r->ring_ir_pkt = (r->cg_ring - idle * RTE_MAX(ring, 0.0) / rounds) /
				 (double)r->vq_pkts;
}

/* ---- cases ---- */

static long app_rss_kib(const char *field);

static struct vfe_guest_conf guest_conf(enum mode m, uint32_t payload)
{
	struct vfe_guest_conf gc = { 0 };

	/* Guest -> host: one packet per payload. */
	gc.tx_max_payload = payload;
	/*
	 * Host -> guest: rx buffers of exactly one header and one payload, so the app must
	 * write one packet per payload: per-packet cost, not the host socket's coalescing.
	 */
	if (m != M_G2H)
		gc.rx_buf_len = VFE_GUEST_HDR_LEN + payload;
	return gc;
}

static bool stream_check(struct pconn *pc, const uint8_t *buf, size_t n)
{
	size_t i = 0;

	while (pc->bad_at == UINT64_MAX && i < n) {
		uint64_t off = pc->base + pc->rcvd + i;
		size_t run = n - i;

		if (run > PERF_PAT_RUN)
			run = PERF_PAT_RUN;
		if (memcmp(buf + i, perf_pat_at(off), run) != 0) {
			size_t k = 0;

			while (buf[i + k] == perf_pat_at(off)[k])
				k++;
			pc->bad_at = pc->rcvd + i + k;
		}
		i += run;
	}
	perf_csum_add(&pc->rx_sum, buf, n);
	pc->rcvd += n;
	return pc->bad_at == UINT64_MAX;
}

/* What the sender handed over is the pattern from its base: its checksum, computed apart. */
static uint64_t sent_csum(const struct pconn *pc)
{
	struct perf_csum c;
	uint64_t off = 0;

	perf_csum_init(&c);
	while (off < pc->sent) {
		uint64_t n = pc->sent - off < PERF_PAT_RUN ? pc->sent - off : PERF_PAT_RUN;

		perf_csum_add(&c, perf_pat_at(pc->base + off), n);
		off += n;
	}
	return perf_csum_value(&c);
}

/* ---- the host end: a Unix socket of the app, or the native API in this process ---- */

/*
 * Native: offer the guest @p len bytes of the pattern from @p at, in NATIVE_SEG-byte mbufs
 * (one burst at most). What the ring does not take stays held and is offered first next
 * time, so @p at must then be where the held bytes start. Returns bytes taken.
 */
static long native_send(struct pconn *pc, uint64_t at, uint64_t len)
{
	unsigned int i, k;
	long taken = 0;
	int n;

	if (pc->held_off == pc->nb_held) {
		unsigned int nb = (unsigned int)RTE_MIN((len + NATIVE_SEG - 1) / NATIVE_SEG,
							(uint64_t)NATIVE_BURST);

		pc->nb_held = pc->held_off = 0;
		if (nb == 0 || rte_pktmbuf_alloc_bulk(perf_native_pool(), pc->held, nb) != 0)
			return 0;
		for (i = 0; i < nb; i++) {
			uint16_t l = (uint16_t)RTE_MIN(len - (uint64_t)i * NATIVE_SEG,
						       (uint64_t)NATIVE_SEG);

			/* The host program's one copy: the pattern into the mbuf. */
			memcpy(rte_pktmbuf_mtod(pc->held[i], void *),
			       perf_pat_at(at + (uint64_t)i * NATIVE_SEG), l);
			pc->held[i]->data_len = l;
			pc->held[i]->pkt_len = l;
			pc->held_len[i] = l;
		}
		pc->nb_held = (uint16_t)nb;
	}
	n = vsock_native_send_burst(pc->h, pc->held + pc->held_off,
				    (uint16_t)(pc->nb_held - pc->held_off));
	if (n < 0) {
		if (pc->herr == 0)
			pc->herr = n;
		return 0;
	}
	/* Taken mbufs are the library's now: their lengths were noted before. */
	for (k = 0; k < (unsigned int)n; k++)
		taken += pc->held_len[pc->held_off + k];
	pc->held_off = (uint16_t)(pc->held_off + n);
	return taken;
}

/* Native: take and check whatever the guest sent. Returns bytes. */
static long native_recv(struct pconn *pc)
{
	struct rte_mbuf *m[NATIVE_BURST];
	long got = 0;
	int i, n;

	do {
		n = vsock_native_recv_burst(pc->h, m, NATIVE_BURST);
		for (i = 0; i < n; i++) {
			const struct rte_mbuf *seg;

			for (seg = m[i]; seg != NULL; seg = seg->next) {
				stream_check(pc, rte_pktmbuf_mtod(seg, const uint8_t *),
					     seg->data_len);
				got += seg->data_len;
			}
		}
		if (n > 0)
			rte_pktmbuf_free_bulk(m, (unsigned int)n);
	} while (n == NATIVE_BURST);
	if (n < 0 && pc->herr == 0)
		pc->herr = n;
	return got;
}

/* Host end -> guest: up to @p len pattern bytes from stream offset @p at. Bytes taken. */
static long host_send(struct pconn *pc, uint64_t at, uint64_t len)
{
	ssize_t w;

	if (cur_host == H_NATIVE)
		return native_send(pc, at, len);
	w = send(pc->fd, perf_pat_at(at), len, MSG_DONTWAIT | MSG_NOSIGNAL);
	return w > 0 ? w : 0;
}

/* Guest -> host end: read and check what arrived, at most @p max bytes. Bytes. */
static long host_recv(struct pconn *pc, uint64_t max)
{
	long got = 0;

	if (cur_host == H_NATIVE)
		return native_recv(pc);
	while ((uint64_t)got < max) {
		ssize_t r = recv(pc->fd, rbuf, RTE_MIN((uint64_t)sizeof(rbuf), max - (uint64_t)got),
				 MSG_DONTWAIT);

		if (r <= 0)
			break;
		stream_check(pc, rbuf, (size_t)r);
		got += r;
	}
	return got;
}

/*
 * Native: open one connection of a case. A guest's connect completes once we accept it,
 * ours once the guest accepts.
 */
static int native_open(struct pconn *pc, enum mode m, int listener)
{
	if (m == M_H2G) {
		pc->h = vsock_native_connect(DP_CID, PORT_H2G, VSOCK_NATIVE_STREAM);
		if (pc->h < 0)
			return pc->h;
		DP_WAIT(&env.dp, (pc->gc = vfe_guest_accept(&env.dp.g)) != NULL, MS);
		DP_WAIT(&env.dp, vsock_native_state(pc->h) == VSOCK_NATIVE_ESTABLISHED, MS);
	} else {
		pc->gc = vfe_guest_connect(&env.dp.g, m == M_G2H ? PORT_G2H : PORT_RR,
					   VIRTIO_VSOCK_TYPE_STREAM);
		if (pc->gc == NULL)
			return -ENOMEM;
		DP_WAIT(&env.dp, (pc->h = vsock_native_accept(listener)) != -EAGAIN, MS);
		if (pc->h < 0)
			return pc->h;
		DP_WAIT(&env.dp, pc->gc->state == VFE_GC_ESTABLISHED, MS);
	}
	return vsock_native_state(pc->h) == VSOCK_NATIVE_ESTABLISHED ? 0 : -ECONNREFUSED;
}

static int open_conns(enum mode m, unsigned int n)
{
	unsigned int i;
	int lfd = -1, nl = -1;

	if (cur_host == H_NATIVE && m != M_H2G) {
		nl = vsock_native_listen(DP_CID, m == M_G2H ? PORT_G2H : PORT_RR);
		if (nl < 0)
			return nl;
	} else if (cur_host == H_NATIVE) {
		vfe_guest_listen(&env.dp.g, PORT_H2G, true);
	} else if (m == M_G2H || m == M_RR) {
		lfd = dp_listen(&env.dp, m == M_G2H ? PORT_G2H : PORT_RR, SOCK_STREAM);
		if (lfd < 0)
			return lfd;
	} else {
		vfe_guest_listen(&env.dp.g, PORT_H2G, true);
	}
	for (i = 0; i < n; i++) {
		struct pconn *pc = &pconns[i];
		uint32_t hp;

		memset(pc, 0, sizeof(*pc));
		pc->fd = -1;
		pc->h = -1;
		pc->bad_at = UINT64_MAX;
		pc->base = (uint64_t)i * 7919;
		perf_csum_init(&pc->rx_sum);
		if (cur_host == H_NATIVE) {
			int rc = native_open(pc, m, nl);

			if (rc < 0 || pc->gc == NULL || pc->gc->state != VFE_GC_ESTABLISHED) {
				if (nl >= 0)
					vsock_native_listen_close(nl);
				return rc < 0 ? rc : -ECONNREFUSED;
			}
			continue;
		}
		if (m == M_H2G) {
			pc->fd = dp_host_to_guest(&env.dp, PORT_H2G, &pc->gc, &hp, MS);
		} else {
			pc->gc = dp_guest_connect(&env.dp, m == M_G2H ? PORT_G2H : PORT_RR,
						  VIRTIO_VSOCK_TYPE_STREAM, MS);
			if (pc->gc && pc->gc->state == VFE_GC_ESTABLISHED)
				pc->fd = dp_accept(&env.dp, lfd, MS);
		}
		if (pc->fd < 0 || pc->gc == NULL || pc->gc->state != VFE_GC_ESTABLISHED) {
			if (lfd >= 0)
				close(lfd);
			return -ECONNREFUSED;
		}
	}
	if (lfd >= 0)
		close(lfd);
	/* Connections accepted stay when their listener goes. */
	if (nl >= 0)
		vsock_native_listen_close(nl);
	return 0;
}

/* Take what is left and say whether the connection is over (the guest sent its RST). */
static bool guest_closed(struct vfe_guest_conn *c)
{
	vfe_guest_recv(&env.dp.g, c, NULL, vfe_guest_rx_avail(c));
	return c->state == VFE_GC_CLOSED;
}

static void close_conns(unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct pconn *pc = &pconns[i];

		if (pc->fd >= 0)
			close(pc->fd);
		pc->fd = -1;
		if (pc->h >= 0) {
			rte_pktmbuf_free_bulk(pc->held + pc->held_off,
					      (unsigned int)(pc->nb_held - pc->held_off));
			pc->nb_held = pc->held_off = 0;
			vsock_native_close(pc->h);
		}
		pc->h = -1;
	}
	/* Host closes end every connection; the guest answers and forgets them. */
	for (i = 0; i < n; i++) {
		struct vfe_guest_conn *c = pconns[i].gc;

		if (c == NULL)
			continue;
		DP_WAIT(&env.dp, guest_closed(c), MS);
		vfe_guest_release(&env.dp.g, c);
		pconns[i].gc = NULL;
	}
	vfe_guest_listen(&env.dp.g, PORT_H2G, false);
}

/* Guest -> host: the guest sends whole payloads within its credit; the host reads. */
static void g2h_round(uint32_t payload, unsigned int n, bool more)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct pconn *pc = &pconns[i];
		uint32_t credit = vfe_guest_credit(pc->gc);
		long w;

		if (!more)
			break;
		credit -= credit % payload;
		if (credit > PERF_PAT_RUN)
			credit = PERF_PAT_RUN - PERF_PAT_RUN % payload;
		if (credit == 0)
			continue;
		w = vfe_guest_send(&env.dp.g, pc->gc, perf_pat_at(pc->base + pc->sent), credit);
		if (w > 0)
			pc->sent += (uint64_t)w;
	}
	vfe_guest_poll(&env.dp.g);
	for (i = 0; i < n; i++)
		host_recv(&pconns[i], UINT64_MAX);
}

/* Host -> guest: the host writes what its socket takes; the guest checks in place. */
static void h2g_round(unsigned int n, bool more)
{
	unsigned int i;

	for (i = 0; i < n && more; i++) {
		struct pconn *pc = &pconns[i];

		pc->sent += (uint64_t)host_send(pc, pc->base + pc->sent, PERF_PAT_RUN);
	}
	vfe_guest_poll(&env.dp.g);
	for (i = 0; i < n; i++) {
		struct pconn *pc = &pconns[i];
		struct vfe_guest_conn *c = pc->gc;
		uint32_t avail = vfe_guest_rx_avail(c), off, first;

		if (avail == 0)
			continue;
		/* Checked where the driver put it (its receive queue), then consumed. */
		off = c->fwd_cnt % c->buf_alloc;
		first = c->buf_alloc - off < avail ? c->buf_alloc - off : avail;
		stream_check(pc, c->rxq + off, first);
		if (avail > first)
			stream_check(pc, c->rxq, avail - first);
		vfe_guest_recv(&env.dp.g, c, NULL, avail);
	}
}

static bool all_received(unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (pconns[i].rcvd < pconns[i].sent || pconns[i].bad_at != UINT64_MAX)
			return false;
	return true;
}

static uint64_t total_rcvd(unsigned int n)
{
	uint64_t t = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		t += pconns[i].rcvd;
	return t;
}

static void verify(struct result *r, unsigned int n)
{
	unsigned int i;

	r->ok = true;
	if (env.dp.g.errors) {
		r->ok = false;
		snprintf(r->err, sizeof(r->err), "guest saw a protocol breach: %.100s",
			 env.dp.g.err);
		return;
	}
	for (i = 0; i < n; i++) {
		const struct pconn *pc = &pconns[i];

		if (pc->herr) {
			r->ok = false;
			snprintf(r->err, sizeof(r->err), "conn %u: the native API returned %s", i,
				 strerror(-pc->herr));
			return;
		}
		if (pc->bad_at != UINT64_MAX || pc->rcvd != pc->sent ||
		    perf_csum_value(&pc->rx_sum) != sent_csum(pc)) {
			r->ok = false;
			snprintf(r->err, sizeof(r->err), "conn %u: sent %llu, received %llu, "
				 "first bad byte %lld, checksums %s", i,
				 (unsigned long long)pc->sent, (unsigned long long)pc->rcvd,
				 (long long)pc->bad_at,
				 perf_csum_value(&pc->rx_sum) == sent_csum(pc) ? "equal" :
				 "differ");
			return;
		}
	}
}

static void window_begin(struct perf_counters *c)
{
	counters_read(c);
	if (plan.callgrind)
		cg_cmd("-z");
	syscalls_start();
}

static void window_end(struct result *r, const struct perf_counters *c0)
{
	struct perf_counters c1;
	long epolls, cepolls, csys, sys;

	/*
	 * This thread's perf first, before it makes any other syscall: what it counts beyond
	 * the window is its own kill and wait (and the sleep that let perf attach).
	 */
	csys = syscalls_stop(PS_CLIENT, &cepolls);
	sys = syscalls_stop(PS_WORKER, &epolls);

	if (plan.callgrind)
		cg_cmd("-d");
	counters_read(&c1);
	if (!c0->ok || !c1.ok) {
		/* No per-packet figure rather than a wrong one: the medians skip it. */
		r->vq_pkts = 0;
		r->cyc_pkt = r->idx_pkt = r->irq_pkt = r->kick_pkt = NAN;
		fprintf(stderr, "vsock-perf: the backend's counters could not be read\n");
		return;
	}
	r->vq_pkts = c1.vq_pkts - c0->vq_pkts;
	r->cyc_pkt = per(c1.busy_cycles - c0->busy_cycles, c1.cycles_pkts - c0->cycles_pkts);
	r->idx_pkt = per(c1.idx - c0->idx, r->vq_pkts);
	r->irq_pkt = per(c1.irq - c0->irq, r->vq_pkts);
	r->kick_pkt = per(c1.kicks - c0->kicks, r->vq_pkts);
	r->sys_pkt = sys >= 0 ? per((uint64_t)sys, r->vq_pkts) : -1;
	/* The client never waits in epoll: every syscall it makes counts. */
	r->csys = csys >= 0 ? csys + RTE_MAX(cepolls, 0L) : -1;
	r->csys_pkt = r->csys >= 0 ? per((uint64_t)r->csys, r->vq_pkts) : -1;
	r->epoll_pkt = epolls >= 0 ? per((uint64_t)epolls, r->vq_pkts) : -1;
	r->busy_rounds = c1.busy_rounds - c0->busy_rounds;
	if (plan.callgrind)
		cg_read_ir(&r->cg_ir, &r->cg_ring, &r->cg_rounds);
}

static void run_stream(struct result *r)
{
	unsigned int n = r->conns;
	uint64_t t0, t1, b0, b1, end, deadline;
	struct perf_counters c0;
	bool g2h = r->mode == M_G2H;

	/* Warm up (caches, mempool, the sockets' buffers), then the measured window. */
	end = perf_now_ns() + (uint64_t)(plan.secs * 0.2e9);
	while (perf_now_ns() < end)
		g2h ? g2h_round(r->payload, n, true) : h2g_round(n, true);
	window_begin(&c0);
	b0 = total_rcvd(n);
	t0 = perf_now_ns();
	end = t0 + (uint64_t)(plan.secs * 1e9);
	/* A window in which no byte arrived (the machine held us up) measures nothing: go on. */
	do {
		unsigned int k;

		for (k = 0; k < 16; k++)
			g2h ? g2h_round(r->payload, n, true) : h2g_round(n, true);
		t1 = perf_now_ns();
	} while ((t1 < end || (total_rcvd(n) == b0 && t1 < end + DRAIN_NS)) &&
		 pconns[0].bad_at == UINT64_MAX);
	b1 = total_rcvd(n);
	window_end(r, &c0);
	/* Everything in flight arrives before the books are checked. */
	deadline = perf_now_ns() + DRAIN_NS;
	while (!all_received(n) && perf_now_ns() < deadline)
		g2h ? g2h_round(r->payload, n, false) : h2g_round(n, false);
	r->secs = (double)(t1 - t0) / 1e9;
	r->bytes = b1 - b0;
	r->msgs = r->bytes / r->payload;
	r->gbps = (double)r->bytes * 8 / (double)(t1 - t0);
	r->mpps = (double)r->msgs / (double)(t1 - t0) * 1e3;
	verify(r, n);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Ping-pong: the host writes a request, the guest reads it whole and writes the same
 * number of bytes back, the host reads them all. RTT is host send to host receive.
 */
static bool rr_once(struct pconn *pc, uint32_t p, uint64_t *rtt, uint64_t deadline)
{
	struct vfe_guest_conn *c = pc->gc;
	uint64_t t0 = perf_now_ns(), got = 0;
	size_t off = 0;

	while (off < p) {
		long w = host_send(pc, pc->base + pc->sent + off, p - off);

		if (w > 0)
			off += (size_t)w;
		else if (pc->herr || perf_now_ns() > deadline)
			return false;
		else
			vfe_guest_poll(&env.dp.g);
	}
	pc->sent += p;
	/* The guest echoes: the bytes come back as the next part of the same stream. */
	off = 0;
	while (off < p) {
		uint32_t avail;

		vfe_guest_poll(&env.dp.g);
		avail = vfe_guest_rx_avail(c);
		if (avail) {
			uint32_t o = c->fwd_cnt % c->buf_alloc;
			uint32_t n = c->buf_alloc - o < avail ? c->buf_alloc - o : avail;
			long w;

			if (n > p - off)
				n = (uint32_t)(p - off);
			w = vfe_guest_send(&env.dp.g, c, c->rxq + o, n);
			if (w > 0) {
				vfe_guest_recv(&env.dp.g, c, NULL, (size_t)w);
				off += (size_t)w;
			}
		}
		if (perf_now_ns() > deadline)
			return false;
	}
	while (got < p) {
		long r = host_recv(pc, p - got);

		if (r > 0) {
			got += (uint64_t)r;
		} else {
			vfe_guest_poll(&env.dp.g);
			if (pc->herr || perf_now_ns() > deadline)
				return false;
		}
	}
	*rtt = perf_now_ns() - t0;
	return true;
}

static void run_rr(struct result *r)
{
	unsigned int n = r->conns, i = 0, k;
	uint64_t t0, t1, end, cnt = 0, deadline;
	bool stalled = false;
	struct perf_counters c0;

	for (k = 0; k < 1000; k++) {
		uint64_t rtt;

		if (!rr_once(&pconns[k % n], r->payload, &rtt, perf_now_ns() + DRAIN_NS))
			break;
	}
	window_begin(&c0);
	t0 = perf_now_ns();
	end = t0 + (uint64_t)(plan.secs * 1e9);
	deadline = end + DRAIN_NS;
	do {
		if (!rr_once(&pconns[i++ % n], r->payload, &rtts[cnt], deadline)) {
			stalled = true;
			break;
		}
		cnt++;
		t1 = perf_now_ns();
	} while (t1 < end && cnt < RTT_MAX);
	t1 = perf_now_ns();
	window_end(r, &c0);
	r->secs = (double)(t1 - t0) / 1e9;
	r->msgs = cnt;
	r->bytes = cnt * r->payload * 2;
	r->mpps = (double)cnt / (double)(t1 - t0) * 1e3;
	r->gbps = (double)r->bytes * 8 / (double)(t1 - t0);
	if (cnt) {
		qsort(rtts, cnt, sizeof(rtts[0]), cmp_u64);
		r->p50 = rtts[cnt / 2] / 1e3;
		r->p99 = rtts[(uint64_t)(cnt * 0.99)] / 1e3;
		r->p999 = rtts[(uint64_t)(cnt * 0.999)] / 1e3;
	}
	verify(r, n);
	if (stalled) {
		r->ok = false;
		snprintf(r->err, sizeof(r->err), "a round trip did not complete within %llu s "
			 "(after %llu)", (unsigned long long)(DRAIN_NS / 1000000000u),
			 (unsigned long long)cnt);
	} else if (r->ok && cnt == 0) {
		r->ok = false;
		snprintf(r->err, sizeof(r->err), "no round trip completed");
	}
}

/*
 * The frontend and its guest driver on the backend's socket, with the variant's ring layout
 * (dp_attach_quiet() would take it from VFE_RING and print a TAP line per attach).
 */
static int attach(const struct vfe_vsock_conf *vc, const struct vfe_guest_conf *gc,
		  struct result *r)
{
	int rc = vfe_vsock_attach(&env.dp.v, env.dp.sock, vc);

	if (rc < 0) {
		snprintf(r->err, sizeof(r->err), "attach: %s: %.100s", strerror(-rc),
			 env.dp.v.conn.err);
		return rc;
	}
	rc = vfe_guest_init(&env.dp.g, &env.dp.v, gc);
	if (rc < 0) {
		snprintf(r->err, sizeof(r->err), "guest driver: %s", strerror(-rc));
		vfe_guest_fini(&env.dp.g);
		vfe_vsock_close(&env.dp.v);
		return rc;
	}
	env.dp.attached = true;
	return 0;
}

/*
 * Whether the engine polls the guest: until then a host connect is refused (a VM no
 * worker polls has no guest to answer it), so a case waits for it. In the process for the
 * native host end, through telemetry for the app's.
 */
static bool vm_running(void)
{
	struct vsock_pmd_vm_info info;
	char path[32];

	if (cur_host == H_NATIVE)
		return vsock_pmd_vm_info_get(0, &info) == 0 && info.running;
	snprintf(path, sizeof(path), "%d.running", DP_CID);
	return ops_tel_u64(&env, "/vsock/vms", path) == 1;
}

static void run_case(struct result *r)
{
	bool packed = plan.variants[r->variant].ring == R_PACKED;
	struct vfe_vsock_conf vc = { .ring_size = plan.ring, .mem = { .size = 64u << 20 },
				     .packed = packed };
	struct vfe_guest_conf gc = guest_conf(r->mode, r->payload);
	char cmd[64];
	long rss0;
	int rc;

	snprintf(cmd, sizeof(cmd), "set burst %u", r->burst);
	if (cur_host == H_NATIVE ? vsock_pmd_set_burst(r->burst) < 0 :
	    !ops_cmd(&env, cmd, "Burst size set", MS, NULL)) {
		snprintf(r->err, sizeof(r->err), "the app refused '%s'", cmd);
		return;
	}
	if (attach(&vc, &gc, r) < 0)
		return;
	/* A case labelled packed must have run on packed rings: the JSON says so. */
	if (env.dp.v.vq[0].packed != packed ||
	    !!(env.dp.v.features & (1ULL << VIRTIO_F_RING_PACKED)) != packed) {
		snprintf(r->err, sizeof(r->err), "asked for %s rings, features %#llx",
			 ring_name[packed], (unsigned long long)env.dp.v.features);
		dp_detach(&env.dp);
		return;
	}
	/* The engine takes the device over asynchronously; connect refuses until then. */
	if (!DP_WAIT(&env.dp, vm_running(), MS)) {
		snprintf(r->err, sizeof(r->err), "the engine did not start polling the guest");
		dp_detach(&env.dp);
		return;
	}
	if (!plan.guest_irq) {
		unsigned int q;

		/*
		 * A polling guest wants no interrupts. Split: used_event parked a full lap
		 * behind, so the app signals once per 65536 entries at most. Packed: the
		 * driver event structure says DISABLE, as Linux's virtqueue_disable_cb() does
		 * (an off_wrap behind would come round again every two laps of the ring).
		 */
		for (q = 0; q < VFE_VSOCK_NQ; q++) {
			struct vfe_vq *vq = &env.dp.v.vq[q];

			vq->track_used_event = false;
			if (vq->packed)
				vfe_vq_set_no_interrupt(vq, true);
			else
				vfe_vq_set_used_event(vq, (uint16_t)(vq->last_used - 1));
		}
	}
	/* Anonymous memory only: the guest's memory the app writes into is shared, not its own. */
	rss0 = app_rss_kib("RssAnon:");
	rc = open_conns(r->mode, r->conns);
	r->rss_per_conn = (double)(app_rss_kib("RssAnon:") - rss0) * 1024 / r->conns;
	if (rc < 0) {
		snprintf(r->err, sizeof(r->err), "%u connections: %s", r->conns, strerror(-rc));
	} else if (r->mode == M_RR) {
		run_rr(r);
	} else {
		run_stream(r);
	}
	if (plan.callgrind && rc >= 0)
		cg_busy_only(r);
	close_conns(r->conns);
	dp_detach(&env.dp);
}

static long rss_default_kib = -1;

/* @p field of the app's /proc status: "VmRSS:", or "RssAnon:" (without the guest's memory). */
static long app_rss_kib(const char *field)
{
	char path[64], line[128];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)backend_pid());
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, strlen(field)) == 0)
			kib = atol(line + strlen(field));
	fclose(f);
	return kib;
}


/* The backend of variant @p v: the app in its process, or the engine in this one. */
static bool backend_start(const struct variant *var)
{
	int rc;

	cur_host = var->host;
	if (cur_host == H_NATIVE) {
		memset(&env, 0, sizeof(env));
		rc = perf_native_start(DP_CID, plan.bursts[0], var->per_entry, var->notify,
				       env.dp.sock, sizeof(env.dp.sock));
		if (rc < 0) {
			fprintf(stderr, "vsock-perf: vsock_pmd_start: %s\n", strerror(-rc));
			return false;
		}
		return true;
	}
	if (ops_start(&env, false, true, var->args) < 0)
		return false;
	perf_pin(0);
	if (!ops_cmd(&env, "set record-core-cycles on", "record-core-cycles on", MS, NULL))
		fprintf(stderr, "vsock-perf: no cycle counts (record-core-cycles refused)\n");
	return true;
}

static bool backend_stop(void)
{
	if (cur_host == H_NATIVE) {
		unsigned int lost = perf_native_stop();

		if (lost)
			fprintf(stderr, "vsock-perf: %u host mbufs did not come back\n", lost);
		native_lost += lost;
		return lost == 0;
	}
	return ops_stop(&env) >= 0;
}

static bool run_variant(unsigned int v, unsigned int rep)
{
	unsigned int m, p, b, c;

	if (!backend_start(&plan.variants[v])) {
		fprintf(stderr, "vsock-perf: cannot start the backend for variant %s\n",
			plan.variants[v].name);
		return false;
	}
	/* The app's own figure: the native host end's process is the benchmark too. */
	if (v == 0 && rep == 0 && cur_host == H_UDS)
		rss_default_kib = app_rss_kib("VmRSS:");
	for (m = 0; m < M_NB; m++) {
		if (!plan.modes[m])
			continue;
		for (p = 0; p < plan.nb_payloads; p++)
			for (b = 0; b < plan.nb_bursts; b++)
				for (c = 0; c < plan.nb_conns && nb_results < MAX_RESULTS; c++) {
					struct result *r = &results[nb_results++];

					memset(r, 0, sizeof(*r));
					r->variant = v;
					r->rep = rep;
					r->mode = m;
					r->payload = plan.payloads[p];
					r->burst = plan.bursts[b];
					r->conns = plan.conns[c];
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
					run_case(r);
					fprintf(stderr, "  %-9s rep %u %-3s %6u B burst %3u "
						"conns %4u: %8.3f Mpps %7.2f Gbit/s%s%s\n",
						plan.variants[v].name, rep, mode_name[m],
						r->payload, r->burst, r->conns, r->mpps, r->gbps,
						r->ok ? "" : "  FAILED: ", r->ok ? "" : r->err);
				}
	}
	if (v == 0 && rep == 0 && cur_host == H_UDS && rss_default_kib >= 0) {
		long now = app_rss_kib("VmRSS:");

		if (now > rss_default_kib)
			rss_default_kib = now;
	}
	return backend_stop();
}

/* ---- summary ---- */

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned int n)
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
	return median(vals, n);
}

struct refs {
	double cl_rtt_ns;
	double unix_rtt_us[MAX_LIST];
	double memcpy_gbps[MAX_LIST];
	double unix_gbps[MAX_LIST];
};

static struct refs refs;

static void measure_refs(void)
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
	return median(vals, n);
}

static void print_table(FILE *f)
{
	unsigned int i, j, v;

	fprintf(f, "\n%-4s %7s %5s %5s", "mode", "payload", "burst", "conns");
	for (v = 0; v < plan.nb_variants; v++)
		fprintf(f, " | %-9s %8s %8s %7s %7s", plan.variants[v].name, "Mpps", "Gbit/s",
			"p50us", "p99us");
	if (plan.nb_variants > 1)
		fprintf(f, " | %s/%s, pairs", plan.variants[1].name, plan.variants[0].name);
	for (v = 0; v < plan.nb_variants && v < 2; v++)
		fprintf(f, " | %6s %6s %6s %6s %6s %6s%s", "cyc/pk", "idx/pk", "irq/pk", "sys/pk",
			"epl/pk", "csys", plan.callgrind ? "    Ir/pk ringIr/pk" : "");
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
			fprintf(f, " | %6.0f %6.3f %6.3f %6.3f %6.3f %6.3f",
				med(v, k, offsetof(struct result, cyc_pkt)),
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
	fprintf(f, "(per packet, first and second variant: busy-round cycles, used->idx stores "
		"(packed: used\n publications), guest interrupts, worker syscalls other than "
		"epoll_wait, epoll_waits with\n idle rounds, syscalls of the client thread (guest "
		"driver and host end)%s; -1: not\n measured)\n",
		plan.callgrind ? ",\n instructions of vsock_dev_poll and of the virtqueue code "
		"alone (callgrind)" : "");
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

static void json_num(FILE *f, const char *k, double v, bool comma)
{
	if (isnan(v) || isinf(v))
		fprintf(f, "\"%s\": null%s", k, comma ? ", " : "");
	else
		fprintf(f, "\"%s\": %.6g%s", k, v, comma ? ", " : "");
}

static void write_json(const char *path)
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
	fprintf(f, "{\n  \"machine\": {\"cpu\": \"%s\", \"cpus\": %ld, \"kernel\": \"%s\"},\n",
		cpu, sysconf(_SC_NPROCESSORS_ONLN), u.release);
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
	fprintf(f, "]},\n  \"rss_default_kib\": %ld,\n", rss_default_kib);
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
		json_num(f, "mpps", r->mpps, true);
		json_num(f, "gbps", r->gbps, true);
		json_num(f, "rtt_p50_us", r->mode == M_RR ? r->p50 : NAN, true);
		json_num(f, "rtt_p99_us", r->mode == M_RR ? r->p99 : NAN, true);
		json_num(f, "rtt_p999_us", r->mode == M_RR ? r->p999 : NAN, true);
		fprintf(f, "\"ring_packets\": %llu, ", (unsigned long long)r->vq_pkts);
		json_num(f, "cycles_per_packet", r->cyc_pkt, true);
		json_num(f, "used_idx_stores_per_packet", r->idx_pkt, true);
		json_num(f, "guest_interrupts_per_packet", r->irq_pkt, true);
		json_num(f, "guest_kicks_per_packet", r->kick_pkt, true);
		json_num(f, "worker_syscalls_per_packet", r->sys_pkt >= 0 ? r->sys_pkt : NAN, true);
		json_num(f, "worker_epoll_waits_per_packet", r->epoll_pkt >= 0 ? r->epoll_pkt : NAN,
			 true);
		json_num(f, "client_syscalls_per_packet", r->csys_pkt >= 0 ? r->csys_pkt : NAN,
			 true);
		json_num(f, "client_syscalls", r->csys >= 0 ? (double)r->csys : NAN, true);
		json_num(f, "instructions_per_packet", r->ir_pkt >= 0 ? r->ir_pkt : NAN, true);
		json_num(f, "ring_instructions_per_packet",
			 r->ring_ir_pkt >= 0 ? r->ring_ir_pkt : NAN, true);
		json_num(f, "instructions_per_packet_all_rounds",
			 r->ir_all_pkt >= 0 ? r->ir_all_pkt : NAN, true);
		json_num(f, "idle_round_instructions",
			 r->idle_round_ir >= 0 ? r->idle_round_ir : NAN, true);
		json_num(f, "busy_rounds_per_packet", r->cg_rounds >= 0 ?
			 per(r->busy_rounds, r->vq_pkts) : NAN, true);
		json_num(f, "rounds_per_packet", r->cg_rounds >= 0 ?
			 r->cg_rounds / (double)RTE_MAX(r->vq_pkts, 1ull) : NAN, true);
		json_num(f, "app_rss_bytes_per_conn", r->rss_per_conn, false);
		fprintf(f, "}%s\n", i + 1 < nb_results ? "," : "");
	}
	fprintf(f, "  ]\n}\n");
	fclose(f);
}

/* ---- command line ---- */

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
	       "                    poll and of the virtqueue code\n"
	       "  --guest-irq       the guest asks for an interrupt per used entry, as Linux's\n"
	       "                    driver; default: a polling guest that asks for none\n"
	       "  --json FILE       one record per case\n"
	       "  --smoke           seconds-long run, TAP output (the CI check)\n");
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

/*
 * Every variant with every host end and ring layout, the ring layouts adjacent and then the
 * host ends (split, packed, split, packed ... or uds, native, uds, native ... when
 * alternated): the ratio column is then packed over split, or native over uds. A name says
 * what varies: "native/batch", "packed", "uds/packed".
 */
static void cross_axes(void)
{
	struct variant base[MAX_VARIANTS];
	unsigned int i, h, k, nb = plan.nb_variants, nb_hosts = 0, nb_rings = 0;

	for (h = 0; h < H_NB; h++)
		nb_hosts += plan.hosts[h];
	for (k = 0; k < R_NB; k++)
		nb_rings += plan.rings[k];
	memcpy(base, plan.variants, sizeof(base));
	plan.nb_variants = 0;
	for (i = 0; i < nb; i++) {
		for (h = 0; h < H_NB; h++) {
			if (!plan.hosts[h])
				continue;
			/*
			 * A sleeping worker wakes on guest kicks and host sockets only, not on
			 * the native API's rings: it would see the host program every 10 ms.
			 */
			if (h == H_NATIVE && (base[i].notify || plan.callgrind)) {
				fprintf(stderr, "vsock-perf: the native host end runs with a polling "
					"worker and without callgrind\n");
				exit(2);
			}
			for (k = 0; k < R_NB; k++) {
				struct variant *v = &plan.variants[plan.nb_variants];
				char what[24] = "";

				if (!plan.rings[k])
					continue;
				if (plan.nb_variants == MAX_VARIANTS) {
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
				plan.nb_variants++;
			}
		}
	}
}

static void parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "modes", 1, NULL, 'm' }, { "payloads", 1, NULL, 'p' },
		{ "bursts", 1, NULL, 'b' }, { "conns", 1, NULL, 'c' },
		{ "variants", 1, NULL, 'v' }, { "reps", 1, NULL, 'r' },
		{ "time", 1, NULL, 't' }, { "ring", 1, NULL, 'R' }, { "refs", 0, NULL, 'f' },
		{ "syscalls", 0, NULL, 's' }, { "callgrind", 0, NULL, 'g' },
		{ "json", 1, NULL, 'j' }, { "guest-irq", 0, NULL, 'I' },
		{ "smoke", 0, NULL, 'S' }, { "host", 1, NULL, 'H' }, { "rings", 1, NULL, 'L' },
		{ "help", 0, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned int i, ring = 128, reps = 3;
	char buf[256], *save, *t;
	int o;

	plan.modes[M_G2H] = plan.modes[M_H2G] = plan.modes[M_RR] = true;
	plan.nb_payloads = parse_list("64,256,1024,4096,16384,65536", plan.payloads, 1, 65536);
	plan.nb_bursts = parse_list("32", plan.bursts, 1, 256);
	plan.nb_conns = parse_list("1", plan.conns, 1, 1023);
	plan.variants[0] = known_variants[0];
	plan.nb_variants = 1;
	plan.hosts[H_UDS] = true;
	plan.rings[R_SPLIT] = true;
	plan.secs = 1;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case 'm':
			memset(plan.modes, 0, sizeof(plan.modes));
			snprintf(buf, sizeof(buf), "%s", optarg);
			for (t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
				for (i = 0; i < M_NB && strcmp(t, mode_name[i]); i++)
					;
				if (i == M_NB) {
					fprintf(stderr, "vsock-perf: unknown mode '%s'\n", t);
					exit(2);
				}
				plan.modes[i] = true;
			}
			break;
		case 'p':
			plan.nb_payloads = parse_list(optarg, plan.payloads, 1, 65536);
			break;
		case 'b':
			plan.nb_bursts = parse_list(optarg, plan.bursts, 1, 256);
			break;
		case 'c':
			plan.nb_conns = parse_list(optarg, plan.conns, 1, 1023);
			break;
		case 'v':
			plan.nb_variants = 0;
			snprintf(buf, sizeof(buf), "%s", optarg);
			for (t = strtok_r(buf, ",", &save); t && plan.nb_variants < MAX_VARIANTS;
			     t = strtok_r(NULL, ",", &save)) {
				for (i = 0; i < NB_KNOWN &&
				     strcmp(t, known_variants[i].name); i++)
					;
				if (i == NB_KNOWN) {
					fprintf(stderr, "vsock-perf: unknown variant '%s'\n", t);
					exit(2);
				}
				plan.variants[plan.nb_variants++] = known_variants[i];
			}
			break;
		case 'r':
			reps = (unsigned int)atoi(optarg);
			break;
		case 't':
			plan.secs = atof(optarg);
			break;
		case 'R':
			ring = (unsigned int)atoi(optarg);
			break;
		case 'f':
			plan.refs = true;
			break;
		case 's':
			plan.syscalls = true;
			break;
		case 'g':
			plan.callgrind = true;
			break;
		case 'j':
			plan.json = optarg;
			break;
		case 'I':
			plan.guest_irq = true;
			break;
		case 'S':
			plan.smoke = true;
			break;
		case 'H':
			memset(plan.hosts, 0, sizeof(plan.hosts));
			snprintf(buf, sizeof(buf), "%s", optarg);
			for (t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
				for (i = 0; i < H_NB && strcmp(t, host_name[i]); i++)
					;
				if (i == H_NB) {
					fprintf(stderr, "vsock-perf: unknown host end '%s'\n", t);
					exit(2);
				}
				plan.hosts[i] = true;
			}
			break;
		case 'L':
			memset(plan.rings, 0, sizeof(plan.rings));
			snprintf(buf, sizeof(buf), "%s", optarg);
			for (t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
				for (i = 0; i < R_NB && strcmp(t, ring_name[i]); i++)
					;
				if (i == R_NB) {
					fprintf(stderr, "vsock-perf: unknown ring layout '%s'\n", t);
					exit(2);
				}
				plan.rings[i] = true;
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
	if (ring < 2 || ring > 1024 || (ring & (ring - 1)) || reps < 1 || reps > 100 ||
	    !(plan.secs > 0) || plan.nb_variants == 0) {
		fprintf(stderr, "vsock-perf: bad --ring, --reps, --time or --variants\n");
		exit(2);
	}
	plan.ring = (uint16_t)ring;
	plan.reps = reps;
	cross_axes();
	if (plan.nb_variants == 0) {
		fprintf(stderr, "vsock-perf: no host end or no ring layout\n");
		exit(2);
	}
}

/* The CI check: every mode once, briefly, each variant; everything verified. */
static int smoke(void)
{
	unsigned int i;

	for (i = 0; i < nb_results; i++) {
		const struct result *r = &results[i];

		tap_ok(r->ok && r->bytes > 0, "%s %s %u B burst %u conns %u: %llu bytes verified "
		       "(%.3f Mpps)%s%s", plan.variants[r->variant].name, mode_name[r->mode],
		       r->payload, r->burst, r->conns, (unsigned long long)r->bytes, r->mpps,
		       r->ok ? "" : ": ", r->ok ? "" : r->err);
		/*
		 * The counters are read while packets are in flight: each read may fall
		 * between a queue's entry and its store, so the two counts may differ by
		 * that much (SMOKE_SKEW), whatever the number of packets in the window.
		 */
		if (r->mode != M_RR && plan.variants[r->variant].per_entry)
			tap_ok(r->vq_pkts > 0 && llabs(llround(r->idx_pkt * (double)r->vq_pkts) -
			       (long long)r->vq_pkts) <= SMOKE_SKEW, "per-entry %s %u B: one "
			       "used->idx store per packet (%.0f stores, %llu packets)",
			       mode_name[r->mode], r->payload, r->idx_pkt * (double)r->vq_pkts,
			       (unsigned long long)r->vq_pkts);
		if (r->mode != M_RR)
			tap_ok(r->vq_pkts > 0 && r->idx_pkt > 0 && r->cyc_pkt > 0,
			       "%s %s %u B: the backend's counters moved (%llu ring packets, %.3f "
			       "used->idx stores and %.0f cycles per packet)",
			       plan.variants[r->variant].name, mode_name[r->mode], r->payload,
			       (unsigned long long)r->vq_pkts, r->idx_pkt, r->cyc_pkt);
	}
	for (i = 0; i < nb_results; i++) {
		const struct result *r = &results[i];
		long kicks;

		if (plan.variants[r->variant].host != H_NATIVE || r->csys < 0)
			continue;
		/*
		 * The point of the native path: no syscall per packet on either end. Besides
		 * the guest driver's kicks (eventfd writes the engine counts, one per lap of
		 * avail_event), the client thread's count holds only the measurement's own few
		 * (perf's attach sleep, its kill and wait); the worker's excludes its idle
		 * rounds' epoll_wait, counted apart, so it is as uncertain as perf's two
		 * counters' start.
		 */
		kicks = llround(r->kick_pkt * (double)r->vq_pkts);
		tap_ok(r->csys - kicks <= NATIVE_MEASURE_SYSCALLS &&
		       r->sys_pkt * (double)r->vq_pkts <= NATIVE_MEASURE_SYSCALLS,
		       "native %s %u B: %ld client syscalls in %llu packets (%ld guest kicks, the "
		       "rest the measurement's), worker %.0f besides epoll_wait",
		       mode_name[r->mode], r->payload, r->csys, (unsigned long long)r->vq_pkts,
		       kicks, r->sys_pkt * (double)r->vq_pkts);
	}
	if (plan.hosts[H_NATIVE])
		tap_ok(native_lost == 0, "native: every host mbuf came back to its pool (%u "
		       "missing)", native_lost);
	if (plan.refs)
		tap_ok(refs.cl_rtt_ns > 0 && refs.memcpy_gbps[0] > 0 && refs.unix_gbps[0] > 0,
		       "reference limits measured (cache line %.0f ns)", refs.cl_rtt_ns);
	if (plan.json) {
		FILE *f = fopen(plan.json, "r");
		char *buf = calloc(1, 1 << 20);
		size_t n = f && buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
		unsigned int recs = 0;
		char *p = buf;

		while (p && (p = strstr(p, "\"direction\"")) != NULL) {
			recs++;
			p++;
		}
		tap_ok(n > 0 && recs == nb_results, "JSON has one record per case (%u of %u)",
		       recs, nb_results);
		if (f)
			fclose(f);
		free(buf);
	}
	return tap_done();
}

int main(int argc, char **argv)
{
	struct rlimit nofile;
	unsigned int rep, v;

	parse_args(argc, argv);
	/* The installed vsock-perf runs the app installed beside it unless told otherwise. */
	if (plan.hosts[H_UDS] && getenv("VSOCK_APP") == NULL &&
	    setenv("VSOCK_APP", VSOCK_APP_DEFAULT, 0) < 0) {
		fprintf(stderr, "vsock-perf: set VSOCK_APP to the dpdk-vsock-app binary\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	perf_pat_init();
	pconns = calloc(1024, sizeof(*pconns));
	rtts = calloc(RTT_MAX, sizeof(*rtts));
	if (pconns == NULL || rtts == NULL)
		return 1;
	signal(SIGPIPE, SIG_IGN);
	/* 1023 connections: a host socket each here, and as many in the app (our child). */
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	if (plan.refs)
		measure_refs();
	/* After the references: they fork and pin, the EAL's threads should not see that. */
	if (plan.hosts[H_NATIVE]) {
		int rc = perf_native_init();

		if (rc < 0) {
			fprintf(stderr, "vsock-perf: EAL for the native host end: %s\n",
				strerror(-rc));
			return 1;
		}
		native_up = true;
		perf_pin(0);
	}
	/* A B A B ...: drift and neighbours' noise hit every variant alike. */
	for (rep = 0; rep < plan.reps; rep++)
		for (v = 0; v < plan.nb_variants; v++)
			if (!run_variant(v, rep))
				fprintf(stderr, "vsock-perf: variant %s rep %u: the app did not "
					"exit cleanly\n", plan.variants[v].name, rep);
	if (native_up)
		perf_native_fini();
	if (plan.json)
		write_json(plan.json);
	if (plan.smoke)
		return smoke();
	print_table(stdout);
	for (v = 0; v < nb_results; v++)
		if (!results[v].ok)
			return 1;
	return 0;
}
