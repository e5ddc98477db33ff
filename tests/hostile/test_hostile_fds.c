/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The descriptor budget (dpdk-vsock-app(8), DESCRIPTORS), with 20 VMs of max-connections=50:
 *
 * - the app says what it budgets, and the parts add up to the documented formula;
 * - with a hard limit below that (one below, and the usual 1024) it refuses to start, saying
 *   how many descriptors it needs and how to raise the limit, and creates nothing;
 * - with the usual soft limit of 1024 and the hard limit at the budget exactly, it starts, its
 *   soft limit raised to the budget. 19 guests (8 memory regions each, the most) open their 50
 *   connections, and a second frontend (a QEMU reconnecting) sets up each VM's memory and
 *   rings beside the first; the 51st connect of each guest, and a host program's connect, are
 *   refused and counted. A third vhost-user connection to a VM is refused. Then the 20th VM
 *   still attaches, opens its connections and streams checked bytes both ways, and its 51st
 *   is refused too. The app's descriptors, read from /proc, stay within the budget
 *   throughout; a VM's two frontends add at most VSOCK_PMD_FDS_VM_RUN, each connection one.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <vsock_pmd.h>

#include "ops_util.h"
#include "tap.h"

#define NVMS 20
#define FIRST_CID 3
#define MAXC 50
#define MAXC_STR "50"
#define PORT 5000
#define MS 10000
#define STREAM_BYTES (512u * 1024)
/* The usual soft limit: below the budget of 20 VMs of 50 connections (about 1720). */
#define USUAL_SOFT 1024
/* This process: a host socket per connection, a dozen per guest, and the rest. */
#define TEST_FDS 4096

#define MAX(a, b) ((a) > (b) ? (a) : (b))

struct vm {
	struct dp_env e;
	/* A second frontend on the VM's socket, as a reconnecting QEMU: refused the rings. */
	struct vfe_vsock shadow;
	bool shadow_on;
	int lfd;
	struct vfe_guest_conn *gc[MAXC];
	int hfd[MAXC];
};

static struct ops_env app;
static struct vm vms[NVMS];

/* The budget line the app prints once started. */
struct budget {
	uint64_t need, eal, mem, workers, per_vm;
};

static int start(unsigned long soft, unsigned long hard, bool wait)
{
	static struct dp_env *envs[NVMS];
	const struct ops_many v = {
		.n = NVMS, .first_cid = FIRST_CID, .keys = ",max-connections=" MAXC_STR,
		.nofile_soft = soft, .nofile_hard = hard, .wait = wait,
	};
	unsigned int i;

	for (i = 0; i < NVMS; i++)
		envs[i] = &vms[i].e;
	return ops_start_many(&app, &v, envs);
}

/* "N open file descriptors budgeted (E for the EAL, M for its memory, R in reserve, ...)". */
static bool budget_read(struct budget *b)
{
	char line[512];
	bool found = false;
	FILE *f = fopen(app.dp.app.log, "r");
	unsigned int reserve = 0;

	while (f != NULL && !found && fgets(line, sizeof(line), f) != NULL) {
		const char *s = strstr(line, "open file descriptors budgeted (");

		found = s != NULL && sscanf(strchr(line, ' ') + 1, "%" SCNu64, &b->need) == 1 &&
			sscanf(strchr(s, '(') + 1, "%" SCNu64 " for the EAL, %" SCNu64 " for its "
			       "memory, %u in reserve, %*u for each of %" SCNu64 " worker lcore%*s "
			       "max-connections + %" SCNu64, &b->eal, &b->mem, &reserve,
			       &b->workers, &b->per_vm) == 5;
	}
	if (f != NULL)
		fclose(f);
	return found;
}

static bool budget_wait(struct budget *b)
{
	uint64_t deadline = dp_now_ns() + (uint64_t)MS * 1000000u;

	while (!budget_read(b) && dp_now_ns() < deadline)
		usleep(10000);
	return budget_read(b);
}

/* Descriptors the app holds now. */
static unsigned int app_fds(void)
{
	char dir[64];
	unsigned int n = 0;
	struct dirent *d;
	DIR *dp;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)app.dp.app.pid);
	dp = opendir(dir);
	while (dp != NULL && (d = readdir(dp)) != NULL)
		n += d->d_name[0] != '.';
	if (dp != NULL)
		closedir(dp);
	return n;
}

/* The app's soft RLIMIT_NOFILE, from /proc/PID/limits; 0 if unreadable. */
static unsigned long app_soft_limit(void)
{
	char path[64], line[256];
	unsigned long soft = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/limits", (int)app.dp.app.pid);
	f = fopen(path, "r");
	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "Max open files", 14) == 0)
			sscanf(line + 14, "%lu", &soft);
	}
	if (f != NULL)
		fclose(f);
	return soft;
}

/* Poll every attached guest until @p cond holds or MS passed: its last value. */
#define ALL_WAIT(cond) ({ \
	uint64_t aw_deadline_ = dp_now_ns() + (uint64_t)MS * 1000000u; \
	bool aw_ok_; \
	while (!(aw_ok_ = (cond)) && dp_now_ns() < aw_deadline_) \
		if (poll_all() == 0) \
			usleep(100); \
	aw_ok_; })

static unsigned int poll_all(void)
{
	unsigned int i, work = 0;

	for (i = 0; i < NVMS; i++) {
		if (vms[i].e.attached)
			work += vfe_guest_poll(&vms[i].e.g);
	}
	return work;
}

/* The app refuses to start under hard limit @p hard: status 1, the message, nothing made. */
static void refused(unsigned long hard, uint64_t need)
{
	char num[64];
	int status;

	if (start(hard < USUAL_SOFT ? hard : USUAL_SOFT, hard, false) < 0) {
		tap_ok(0, "hard limit %lu: app started as a process", hard);
		return;
	}
	status = app_proc_wait(&app.dp.app, 30000);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 1,
	       "hard limit %lu: the app refuses to start, exit status 1 (status %#x)", hard,
	       status);
	snprintf(num, sizeof(num), "%" PRIu64 " open file descriptors are needed", need);
	tap_ok(app_proc_log_contains(&app.dp.app, need ? num : "open file descriptors are "
				     "needed") &&
	       app_proc_log_contains(&app.dp.app, "LimitNOFILE=") &&
	       app_proc_log_contains(&app.dp.app, "ulimit -n"),
	       "hard limit %lu: the message says how many (%s) and how to raise the limit", hard,
	       need ? num : "a number");
	tap_ok(app_proc_sockets_left(&app.dp.app) == 0, "hard limit %lu: no socket created",
	       hard);
	if (tap_failed)
		app_proc_dump_log(&app.dp.app);
	app_proc_fini(&app.dp.app);
	app_proc_remove_eal_files(app.prefix);
}

/* Every frontend here maps the most memory regions: 8 descriptors each in the app. */
static const struct vfe_vsock_conf vc8 = { .mem = { .size = 16u << 20, .nregions = 8 } };

/* Attach VM @p k, and a host listener on its PORT. */
static int attach(unsigned int k)
{
	static const struct vfe_guest_conf gc = { .buf_alloc = 65536 };
	struct vm *v = &vms[k];
	int rc = dp_attach_quiet(&v->e, &vc8, &gc);

	if (rc < 0 || (rc = vfe_conn_sync(&v->e.v.conn)) < 0)
		return rc;
	v->lfd = dp_listen(&v->e, PORT, SOCK_STREAM);
	return v->lfd < 0 ? v->lfd : 0;
}

/*
 * A second frontend sets up the memory table and rings of running VM @p k, as a QEMU that
 * reconnects before the app saw the old connection close: the app holds its descriptors
 * too, and keeps serving the first.
 */
static int attach_shadow(unsigned int k)
{
	int rc = vfe_vsock_attach(&vms[k].shadow, vms[k].e.sock, &vc8);

	vms[k].shadow_on = rc == 0;
	/* Answered once the app handled every message before: its descriptors are counted. */
	return rc < 0 ? rc : vfe_conn_sync(&vms[k].shadow.conn);
}

/* VM @p k's guest opens @p n connections to its host listener, each accepted. */
static unsigned int fill(unsigned int k, unsigned int n)
{
	struct vm *v = &vms[k];
	unsigned int j;

	for (j = 0; j < n; j++) {
		v->gc[j] = dp_guest_connect(&v->e, PORT, VIRTIO_VSOCK_TYPE_STREAM, MS);
		if (v->gc[j] == NULL || v->gc[j]->state != VFE_GC_ESTABLISHED)
			break;
		v->hfd[j] = dp_accept(&v->e, v->lfd, MS);
		if (v->hfd[j] < 0)
			break;
	}
	return j;
}

/* One more connection each way into full VM @p k: both refused, each counted. */
static bool over_limit_refused(unsigned int k, char *why, size_t len)
{
	struct vm *v = &vms[k];
	unsigned int cid = FIRST_CID + k;
	struct vfe_guest_conn *c;
	char cmd[32];
	uint64_t full0, full;
	uint32_t hport;
	int fd, rc;

	snprintf(cmd, sizeof(cmd), "/vsock/stats,%u", cid);
	full0 = ops_tel_u64(&app, cmd, "conns_table_full");
	c = dp_guest_connect(&v->e, PORT, VIRTIO_VSOCK_TYPE_STREAM, MS);
	if (c == NULL || c->state != VFE_GC_CLOSED || !c->reset) {
		snprintf(why, len, "VM %u: connect %u not refused with RST (%s)", cid, MAXC + 1,
			 c == NULL ? "no slot" : c->state == VFE_GC_ESTABLISHED ? "established" :
			 "no answer");
		return false;
	}
	vfe_guest_release(&v->e.g, c);
	/* Closed without OK: at once (EPIPE, ECONNRESET: its line unread), or EOF after it. */
	fd = dp_host_connect(&v->e, PORT + 1);
	rc = fd < 0 ? fd : dp_read_ok(&v->e, fd, &hport, MS);
	if (fd >= 0)
		close(fd);
	if (rc != -ENODATA && rc != -ECONNRESET && rc != -EPIPE) {
		snprintf(why, len, "VM %u: a host connect past the limit got %d, not closed", cid,
			 rc);
		return false;
	}
	full = ops_tel_u64(&app, cmd, "conns_table_full");
	if (full0 == UINT64_MAX || full != full0 + 2) {
		snprintf(why, len, "VM %u: conns_table_full %" PRIu64 " -> %" PRIu64 ", not +2",
			 cid, full0, full);
		return false;
	}
	return true;
}

/* Raw connections to VM @p k's vhost-user socket: the third is closed by the app at once. */
static void third_frontend_refused(unsigned int k)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd[3], i, open_ok = 1;
	long mark = ops_log_mark(&app);
	struct pollfd p;
	char b;

	memcpy(sa.sun_path, vms[k].e.sock, strnlen(vms[k].e.sock, sizeof(sa.sun_path) - 1));
	for (i = 0; i < 3; i++) {
		fd[i] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd[i] < 0 || connect(fd[i], (struct sockaddr *)&sa, sizeof(sa)) < 0)
			open_ok = 0;
	}
	p = (struct pollfd){ .fd = fd[2], .events = POLLIN };
	tap_ok(open_ok && poll(&p, 1, MS) == 1 && recv(fd[2], &b, 1, MSG_DONTWAIT) <= 0,
	       "a third vhost-user connection to VM %u is closed by the app", FIRST_CID + k);
	tap_ok(recv(fd[0], &b, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN &&
	       recv(fd[1], &b, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN,
	       "the first two stay open");
	for (i = 0; i < 3; i++) {
		if (fd[i] >= 0)
			close(fd[i]);
	}
	/* Seen closed before the real frontend comes, which would be a third otherwise. */
	ALL_WAIT(ops_log_count(&app, mark, "frontend disconnected") >= 2);
}

/* The last connection of VM @p k: checked bytes both ways. */
static bool stream(unsigned int k, char *why, size_t len)
{
	static struct dp_stream g2h, hrx, h2g, grx;
	struct vm *v = &vms[k];
	struct vfe_guest_conn *c = v->gc[MAXC - 1];
	int fd = v->hfd[MAXC - 1];

	dp_stream_init(&g2h, 7, STREAM_BYTES);
	dp_stream_init(&hrx, 7, STREAM_BYTES);
	dp_stream_init(&h2g, 8, STREAM_BYTES);
	dp_stream_init(&grx, 8, STREAM_BYTES);
	ALL_WAIT((dp_guest_send(&v->e, c, &g2h), dp_host_recv(fd, &hrx),
		  dp_host_send(fd, &h2g), dp_guest_recv(&v->e, c, &grx),
		  (hrx.done == STREAM_BYTES || hrx.bad_at != UINT64_MAX) &&
		  (grx.done == STREAM_BYTES || grx.bad_at != UINT64_MAX)));
	if (dp_stream_ok(&hrx) && dp_stream_ok(&grx) && v->e.g.errors == 0)
		return true;
	snprintf(why, len, "guest -> host %" PRIu64 " checked (bad at %" PRId64 "), host -> "
		 "guest %" PRIu64 " (bad at %" PRId64 "), protocol errors %" PRIu64 ": %.80s",
		 hrx.done, (int64_t)hrx.bad_at, grx.done, (int64_t)grx.bad_at,
		 (uint64_t)v->e.g.errors, v->e.g.err);
	return false;
}

static void cleanup(void)
{
	unsigned int k, j;

	for (k = 0; k < NVMS; k++) {
		for (j = 0; j < MAXC; j++) {
			if (vms[k].hfd[j] >= 0)
				close(vms[k].hfd[j]);
			vms[k].hfd[j] = -1;
		}
		if (vms[k].lfd >= 0)
			close(vms[k].lfd);
		vms[k].lfd = -1;
		dp_detach(&vms[k].e);
		if (vms[k].shadow_on)
			vfe_vsock_close(&vms[k].shadow);
		vms[k].shadow_on = false;
	}
}

int main(void)
{
	struct rlimit rl;
	struct budget b = { 0 };
	unsigned int k, full = 0, shadows = 0, most = 0, fds, fds0, peak = 0, opened;
	bool refusals = true, found;
	char why[256] = "";
	int status;

	for (k = 0; k < NVMS; k++) {
		vms[k].lfd = -1;
		memset(vms[k].hfd, -1, sizeof(vms[k].hfd));
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < TEST_FDS) {
		rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= TEST_FDS ? TEST_FDS :
			      rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}

	/* The budget, as the app states it with a limit that does not bind. */
	if (!tap_ok(start(0, 0, true) == 0, "app started with %u VMs of max-connections=%u",
		    NVMS, MAXC))
		return tap_done();
	found = budget_wait(&b);
	tap_ok(found && b.per_vm == VSOCK_PMD_FDS_VM_OPEN + VSOCK_PMD_FDS_VM_RUN &&
	       b.need == b.eal + b.mem + 64 + VSOCK_PMD_FDS_WORKER * b.workers +
			 NVMS * (MAXC + b.per_vm),
	       "budget %" PRIu64 " = EAL %" PRIu64 " + memory %" PRIu64 " + 64 + %u x %" PRIu64
	       " workers + %u x (%u + %" PRIu64 ")", b.need, b.eal, b.mem, VSOCK_PMD_FDS_WORKER,
	       b.workers, NVMS, MAXC, b.per_vm);
	status = ops_stop(&app);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "app exits 0");

	/* Below the budget: refused, nothing created. */
	refused(USUAL_SOFT, 0);
	refused(b.need > 1 ? (unsigned long)b.need - 1 : 1, b.need);

	/* The usual soft limit, the hard one at the budget: all of it is there to be used. */
	if (!tap_ok(start(USUAL_SOFT, (unsigned long)b.need, true) == 0, "app started with soft "
		    "limit %u, hard %" PRIu64, USUAL_SOFT, b.need))
		return tap_done();
	tap_ok(budget_wait(&b) && app_soft_limit() == b.need,
	       "its soft limit is raised to the budget, %" PRIu64 " (%lu)", b.need,
	       app_soft_limit());
	fds0 = app_fds();
	for (k = 0; k + 1 < NVMS; k++) {
		fds = app_fds();
		if (attach(k) < 0)
			break;
		opened = fill(k, MAXC);
		full += opened == MAXC;
		if (opened < MAXC)
			tap_diag("VM %u: %u of %u connections", FIRST_CID + k, opened, MAXC);
		if (refusals && !over_limit_refused(k, why, sizeof(why)))
			refusals = false;
		shadows += attach_shadow(k) == 0;
		/* What a VM holds besides its connections' sockets. */
		most = MAX(most, app_fds() - fds - opened);
		peak = MAX(peak, app_fds());
	}
	tap_ok(full == NVMS - 1 && shadows == NVMS - 1, "%u guests attached with 8 memory "
	       "regions, opened their %u connections (%u did), and a second frontend set up each "
	       "VM's memory and rings (%u did)", NVMS - 1, MAXC, full, shadows);
	tap_ok(refusals, "the next connect of each, guest and host, refused with RST and counted%s%s",
	       *why ? ": " : "", why);
	tap_ok(most <= VSOCK_PMD_FDS_VM_RUN, "two frontends of a VM hold at most %u descriptors "
	       "in the app (%u)", VSOCK_PMD_FDS_VM_RUN, most);
	tap_ok(peak <= b.need && peak >= fds0 + (NVMS - 1) * MAXC,
	       "the app's descriptors: %u at the most, within the budget of %" PRIu64, peak, b.need);

	third_frontend_refused(NVMS - 1);
	k = NVMS - 1;
	tap_ok(attach(k) == 0, "the last VM attaches beside %u full ones", NVMS - 1);
	opened = fill(k, MAXC);
	tap_ok(opened == MAXC && attach_shadow(k) == 0, "and opens its %u connections (%u), a "
	       "second frontend beside it", MAXC, opened);
	why[0] = '\0';
	tap_ok(opened == MAXC && stream(k, why, sizeof(why)),
	       "its last connection streams %u bytes each way, checked%s%s", STREAM_BYTES,
	       *why ? ": " : "", why);
	why[0] = '\0';
	tap_ok(opened == MAXC && over_limit_refused(k, why, sizeof(why)),
	       "its next connects are refused too%s%s", *why ? ": " : "", why);
	fds = app_fds();
	tap_ok(fds <= b.need, "the app holds %u descriptors, within the budget of %" PRIu64,
	       fds, b.need);

	cleanup();
	ops_finish(&app);
	return tap_done();
}
