/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The backend's counters as vsock-perf reads them: its statistics over telemetry or the
 * native API, perf stat of the worker's and this thread's syscalls in a window, and the
 * instructions callgrind counts in it.
 */
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rte_common.h>

#include "perf.h"
#include "perf_probe.h"

pid_t perf_backend_pid(const struct perf_run *run)
{
	return run->host == H_NATIVE ? getpid() : run->env.dp.app.pid;
}

static const char *run_dir(const struct perf_run *run)
{
	return run->host == H_NATIVE ? run->native.dir : run->env.dp.app.dir;
}

/* ---- the backend's counters ---- */

/* The native host end's: from the public statistics API, VM @p cid and the worker. */
static void native_counters(struct perf_run *run, uint64_t cid, struct perf_counters *c)
{
	struct vsock_pmd_vm_stats *st = &run->probe.vm_stats;
	struct vsock_pmd_lcore_stats ls;
	unsigned int q;

	memset(c, 0, sizeof(*c));
	if (vsock_pmd_vm_stats_get(cid, st) < 0)
		return;
	c->ok = true;
	for (q = 0; q < VSOCK_PMD_NB_QUEUES; q++) {
		c->vq_pkts += st->q[q].packets;
		c->idx += st->q[q].used_idx_flushes;
		c->irq += st->q[q].interrupts;
		c->kicks += st->q[q].kicks;
	}
	c->from_guest = st->from_guest_pkts;
	c->to_guest = st->to_guest_pkts;
	if (vsock_pmd_lcore_stats_get(0, &ls) == 0) {
		c->busy_cycles = ls.busy_cycles;
		c->cycles_pkts = ls.cycles_pkts;
		c->busy_rounds = ls.busy_polls;
	} else {
		c->ok = false;
	}
}

void perf_counters_read(struct perf_run *run, struct perf_counters *c)
{
	char cmd[32];
	char json[OPS_TEL_MAX];
	uint64_t v[8];
	unsigned int i;
	static const char *const keys[] = {
		"rx.packets", "tx.packets", "rx.used_idx_flushes", "tx.used_idx_flushes",
		"rx.interrupts", "tx.interrupts", "rx.kicks", "tx.kicks",
	};

	if (run->host == H_NATIVE) {
		native_counters(run, DP_CID, c);
		return;
	}
	memset(c, 0, sizeof(*c));
	snprintf(cmd, sizeof(cmd), "/vsock/stats,%d", DP_CID);
	if (ops_tel(&run->env, cmd, json, sizeof(json)) < 0)
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
	/* The worker's (lcore 1's) figures from one reply: they then describe one instant. */
	c->ok = ops_tel(&run->env, "/vsock/lcores", json, sizeof(json)) == 0 &&
		ops_json_u64(json, "1.busy_cycles", &c->busy_cycles) == 0 &&
		ops_json_u64(json, "1.cycles_pkts", &c->cycles_pkts) == 0 &&
		ops_json_u64(json, "1.busy_polls", &c->busy_rounds) == 0;
}

void perf_busy_add(struct perf_busy *acc, const struct perf_counters *c0,
		   const struct perf_counters *c1, uint64_t tsc)
{
	if (!c0->ok || !c1->ok || c1->busy_cycles < c0->busy_cycles) {
		acc->failed = true;
		return;
	}
	acc->busy += c1->busy_cycles - c0->busy_cycles;
	acc->tsc += tsc;
}

double perf_busy_share(const struct perf_busy *acc)
{
	return acc->failed || acc->tsc == 0 ? NAN : (double)acc->busy / (double)acc->tsc;
}

/* ---- syscalls of the worker and of this thread, counted by perf in the window ---- */

static int worker_tid(const struct perf_run *run)
{
	char dir[64], path[320], comm[32];
	struct dirent *d;
	DIR *dp;
	int tid = -1;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)perf_backend_pid(run));
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

void perf_syscalls_start(struct perf_run *run)
{
	struct perf_probe *pr = &run->probe;
	int tids[PS_NB] = { worker_tid(run), (int)getpid() };
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

		pr->perf_pid[i] = -1;
		if (!run->plan.syscalls || tids[i] < 0)
			continue;
		snprintf(tid, sizeof(tid), "%d", tids[i]);
		snprintf(pr->perf_out[i], sizeof(pr->perf_out[i]), "%s/perf-syscalls-%u.txt",
			 run_dir(run), i);
		pr->perf_pid[i] = fork();
		if (pr->perf_pid[i] == 0) {
			execlp("perf", "perf", "stat", "-x", ",", "-e", "raw_syscalls:sys_enter",
			       "--filter", not_epoll, "-e", "syscalls:sys_enter_epoll_wait", "-t",
			       tid, "-o", pr->perf_out[i], (char *)NULL);
			_exit(127);
		}
	}
	/* perf needs a moment to attach; what it misses is the window's first instant. */
	if (pr->perf_pid[PS_WORKER] > 0 || pr->perf_pid[PS_CLIENT] > 0)
		usleep(50000);
}

/* Whether @p pid ended within about @p ms milliseconds (reaped if so). */
static bool reaped_within(pid_t pid, unsigned int ms)
{
	unsigned int t;

	for (t = 0; t < ms; t += 10) {
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return true;
		usleep(10000);
	}
	return false;
}

long perf_syscalls_stop(struct perf_run *run, unsigned int i, long *epolls)
{
	struct perf_probe *pr = &run->probe;
	pid_t pid = pr->perf_pid[i];
	char line[256];
	long n = -1;
	FILE *f;

	*epolls = -1;
	if (pid <= 0)
		return -1;
	pr->perf_pid[i] = -1;
	/*
	 * perf stat -t sometimes sleeps on after its first SIGINT (seen a few times in a
	 * hundred cases on a loaded machine, both counters at once); a second one ends it.
	 * Should that fail too, the counts are lost (-1), never the benchmark.
	 */
	kill(pid, SIGINT);
	if (!reaped_within(pid, 2000)) {
		kill(pid, SIGINT);
		if (!reaped_within(pid, 2000)) {
			fprintf(stderr, "vsock-perf: perf stat %d did not stop: killed, its "
				"syscall counts lost\n", (int)pid);
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			unlink(pr->perf_out[i]);
			return -1;
		}
	}
	f = fopen(pr->perf_out[i], "r");
	unlink(pr->perf_out[i]);
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

/* ---- callgrind: instructions per packet, of dp_dev_poll and of the virtqueue code ---- */

void perf_cg_cmd(const struct perf_run *run, const char *opt)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "callgrind_control %s %d >/dev/null 2>&1", opt,
		 (int)perf_backend_pid(run));
	if (system(cmd) != 0)
		fprintf(stderr, "vsock-perf: '%s' failed\n", cmd);
}

/*
 * Instructions of the virtqueue code in a function list of callgrind_annotate (self cost):
 * the functions of virtq*.c and what they inline (guest_mem.h's translation), and the code of
 * virtq*.h inlined into the data path (completions, the layout dispatch). The header and
 * payload copies out of a chain are not the ring's, being the same on either layout; only the
 * few instructions of virtq_chain_read()'s inline fast path count with its header.
 */
static bool cg_ring_code(const char *file, const char *fn)
{
	const char *base = strrchr(file, '/');

	base = base ? base + 1 : file;
	if (!strcmp(fn, "virtq_chain_read") || !strcmp(fn, "virtq_chain_write") ||
	    !strcmp(fn, "virtq_pieces_copy"))
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

/* The virtqueue code's instructions are those cg_ring_code() names. */
void perf_cg_read_ir(const struct perf_run *run, double *poll, double *ring, double *rounds)
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
		 (int)perf_backend_pid(run));
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
		if (line[0] == 'I' && *poll < 0 && !strcmp(fn, "dp_dev_poll")) {
			*poll = cg_num(num);
			*rounds = calls;
		} else if (line[0] == 'S' && cg_ring_code(where, fn)) {
			*ring = (*ring < 0 ? 0 : *ring) + cg_num(num);
		}
		calls = 0;
	}
	pclose(p);
}
