/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The backend's counters as vsock-perf reads them: its statistics over telemetry or the
 * native API, perf stat of the worker's and this thread's syscalls in a window, and the
 * instructions callgrind counts in it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_cycles.h>

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

/*
 * How long perf stat may take to ack a command through its control fifo: on a loaded machine
 * its start (parsing the tracepoints, opening the counters) takes a second or more. A perf
 * that has not acked by then counts nothing (-1), rather than part of the window.
 */
#define PERF_ACK_MS 10000

static void perf_path(const struct perf_run *run, char *buf, size_t size, const char *what,
		      unsigned int i)
{
	snprintf(buf, size, "%s/perf-%s-%u", run_dir(run), what, i);
}

/*
 * Sends @p cmd to perf stat @p i through its control fifo and waits for its ack: on
 * "enable" its counters count from the ack on, on "disable" they are final. One poll
 * waits, for the ack or perf's exit: this thread's own count holds its few syscalls.
 */
static bool perf_command(struct perf_probe *pr, unsigned int i, const char *cmd)
{
	struct pollfd pfd[2] = {
		{ .fd = pr->perf_ack[i], .events = POLLIN },
		{ .fd = pr->perf_pidfd[i], .events = POLLIN },
	};
	uint64_t end = rte_get_timer_cycles() + rte_get_timer_hz() * PERF_ACK_MS / 1000;
	char ack[8];
	int64_t left;

	if (write(pr->perf_ctl[i], cmd, strlen(cmd)) != (ssize_t)strlen(cmd))
		return false;
	while ((left = (int64_t)(end - rte_get_timer_cycles())) > 0) {
		int n = poll(pfd, 2, (int)(left * 1000 / (int64_t)rte_get_timer_hz()) + 1);

		if (n < 0 && errno == EINTR)
			continue;
		/* "ack\n" and, from perf 6.1 at least, its terminating NUL */
		return n > 0 && (pfd[0].revents & POLLIN) &&
		       read(pfd[0].fd, ack, sizeof(ack)) >= 4 && !memcmp(ack, "ack\n", 4);
	}
	return false;
}

/* Closes perf stat @p i's fifos and removes them, and its log. */
static void perf_close(struct perf_run *run, unsigned int i)
{
	static const char *const files[] = { "ctl", "ack", "log" };
	struct perf_probe *pr = &run->probe;
	char path[128];
	unsigned int f;

	if (pr->perf_ctl[i] >= 0)
		close(pr->perf_ctl[i]);
	if (pr->perf_ack[i] >= 0)
		close(pr->perf_ack[i]);
	if (pr->perf_pidfd[i] >= 0)
		close(pr->perf_pidfd[i]);
	pr->perf_ctl[i] = pr->perf_ack[i] = pr->perf_pidfd[i] = -1;
	for (f = 0; f < RTE_DIM(files); f++) {
		perf_path(run, path, sizeof(path), files[f], i);
		unlink(path);
	}
}

/* Ends perf stat @p i, whose counts are lost; the first time, its last words say why. */
static void perf_abandon(struct perf_run *run, unsigned int i, const char *what)
{
	static const char *const thread[PS_NB] = { "the worker", "this thread" };
	static bool said;
	struct perf_probe *pr = &run->probe;
	char log[128], line[256] = "", last[256] = "";
	FILE *f;

	kill(pr->perf_pid[i], SIGKILL);
	waitpid(pr->perf_pid[i], NULL, 0);
	pr->perf_pid[i] = -1;
	unlink(pr->perf_out[i]);
	perf_path(run, log, sizeof(log), "log", i);
	f = fopen(log, "r");
	while (f != NULL && fgets(line, sizeof(line), f))
		snprintf(last, sizeof(last), "%s", line);
	if (f != NULL)
		fclose(f);
	perf_close(run, i);
	if (!said)
		fprintf(stderr, "vsock-perf: perf stat of %s %s: its syscall counts lost "
			"(said once)%s%s", thread[i], what, last[0] ? "; it said: " : "\n", last);
	said = true;
}

/* Starts perf stat of thread @p tid as number @p i, its counters disabled. */
static void perf_spawn(struct perf_run *run, unsigned int i, int tid, const char *filter)
{
	struct perf_probe *pr = &run->probe;
	char ctl[128], ack[128], control[264], log[128], tids[16];
	int fd;

	perf_path(run, ctl, sizeof(ctl), "ctl", i);
	perf_path(run, ack, sizeof(ack), "ack", i);
	perf_path(run, log, sizeof(log), "log", i);
	perf_path(run, pr->perf_out[i], sizeof(pr->perf_out[i]), "out", i);
	snprintf(control, sizeof(control), "fifo:%s,%s", ctl, ack);
	snprintf(tids, sizeof(tids), "%d", tid);
	/*
	 * Both ends read and write, as perf opens them: neither open waits for the other end,
	 * and a command waits in the fifo until perf has started.
	 */
	if (mkfifo(ctl, 0600) < 0 || mkfifo(ack, 0600) < 0 ||
	    (pr->perf_ctl[i] = open(ctl, O_RDWR | O_CLOEXEC)) < 0 ||
	    (pr->perf_ack[i] = open(ack, O_RDWR | O_NONBLOCK | O_CLOEXEC)) < 0) {
		fprintf(stderr, "vsock-perf: perf stat's control fifos %s: %s\n", ctl,
			strerror(errno));
		perf_close(run, i);
	} else {
		pr->perf_pid[i] = fork();
	}
	if (pr->perf_pid[i] == 0) {
		/* Its "Events enabled" and the like, or why it failed: perf_abandon() says. */
		fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd >= 0)
			dup2(fd, STDERR_FILENO);
		execlp("perf", "perf", "stat", "-x", ",", "-D", "-1", "--control", control,
		       "-e", "raw_syscalls:sys_enter", "--filter", filter,
		       "-e", "syscalls:sys_enter_epoll_wait", "-t", tids, "-o", pr->perf_out[i],
		       (char *)NULL);
		if (write(STDERR_FILENO, "perf could not be run\n", 22) < 0)
			_exit(126);
		_exit(127);
	}
	/* Readable when perf exits: a perf that cannot count ends the wait for its ack. */
	if (pr->perf_pid[i] > 0)
		pr->perf_pidfd[i] = (int)syscall(SYS_pidfd_open, pr->perf_pid[i], 0);
	if (pr->perf_pid[i] < 0)
		perf_close(run, i);
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
	 * worker's epoll_waits in the difference.
	 */
	snprintf(not_epoll, sizeof(not_epoll), "id != %d", (int)SYS_epoll_wait);
	for (i = 0; i < PS_NB; i++) {
		pr->perf_pid[i] = -1;
		pr->perf_ctl[i] = pr->perf_ack[i] = pr->perf_pidfd[i] = -1;
		if (run->plan.syscalls && tids[i] >= 0)
			perf_spawn(run, i, tids[i], not_epoll);
	}
	/*
	 * Both start at once, disabled; the window opens once each has acked its "enable",
	 * this thread's last, so that its count holds only the few syscalls of that ack.
	 */
	for (i = 0; i < PS_NB; i++)
		if (pr->perf_pid[i] > 0 && !perf_command(pr, i, "enable\n"))
			perf_abandon(run, i, "did not start");
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

/*
 * A count of perf stat's CSV output: "<not counted>" is a thread that never ran while its
 * counter was enabled (from before the window on), so made no syscall; anything else that
 * is not a number (<not supported>) is unknown.
 */
static long perf_count(const char *line)
{
	if (line[0] >= '0' && line[0] <= '9')
		return atol(line);
	return strncmp(line, "<not counted>", 13) == 0 ? 0 : -1;
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
	/* Its counts final at the window's end, whenever it then stops. */
	if (!perf_command(pr, i, "disable\n")) {
		perf_abandon(run, i, "did not stop counting");
		return -1;
	}
	perf_close(run, i);
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
			n = perf_count(line);
		else if (strstr(line, "sys_enter_epoll_wait"))
			*epolls = perf_count(line);
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
