/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --wait-mode adaptive: an idle worker lcore ends up asleep (the app's CPU time stays far
 * below a core), the first traffic after a sleep arrives intact both ways, and over many
 * idle-to-busy transitions, timed at random around the moment the worker arms the guest's
 * kicks and goes to sleep, no kick is lost: the worker never sleeps to its timeout over a
 * tx buffer that no kick announced (its lost_kicks counter). Latencies are printed, not
 * asserted: on a loaded machine a transfer may take longer than the sleep's timeout with
 * every kick delivered.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modes_util.h"
#include "tap.h"

#define IDLE_US 100
#define IDLE_MS 1500
#define MAX_IDLE_CPU 0.2
#define WAIT_MS 3000
#define TRANSITIONS 400
/* A sleeping worker wakes at least every 10 ms (worker.c): slower transfers are shown. */
#define SLOW_NS 5000000
#define BIG 65536u
#define RACES 100

static struct md_env env;

/* A slow transfer, and what the scheduler did meanwhile: a figure, not a verdict. */
static void
slow_diag(int64_t ns, uint64_t rq_before, const char *what, unsigned int i)
{
	uint64_t rq = md_worker_rq_wait(&env) - rq_before;

	if (ns >= SLOW_NS)
		tap_diag("%s %u took %.0f us; the test's loop stalled %.0f us, the worker waited "
			"%.0f us for a CPU", what, i, ns / 1e3, env.max_gap_ns / 1e3, rq / 1e3);
}

static void
case_idle_cpu(void)
{
	double cpu = md_idle_cpu(&env, IDLE_MS);

	tap_ok(cpu >= 0 && cpu < MAX_IDLE_CPU, "idle: the app used %.1f%% of a core over %u ms "
		"(below %.0f%%)", cpu * 100, IDLE_MS, MAX_IDLE_CPU * 100);
}

static void
case_after_idle(void)
{
	static const struct {
		enum md_way way;
		const char *name;
	} ways[] = {
		{ MD_A_G2H, "guest -> host (a kick wakes the worker)" },
		{ MD_B_H2G, "host -> guest (the host socket wakes it)" },
		{ MD_A_H2G, "host -> guest on the guest's connection" },
		{ MD_B_G2H, "guest -> host on the host's connection" },
	};
	unsigned int i;
	int64_t ns;

	for (i = 0; i < sizeof(ways) / sizeof(ways[0]); i++) {
		md_sleep_us(20 * IDLE_US);
		ns = md_one_way(&env, ways[i].way, BIG, WAIT_MS);
		if (!tap_ok(ns > 0, "after idle, %s: %u bytes arrive intact (%.0f us)",
			ways[i].name, BIG, ns / 1e3))
			tap_diag("%s", env.why);
	}
	md_sleep_us(20 * IDLE_US);
	ns = md_round_trip(&env, true, 64, WAIT_MS);
	if (!tap_ok(ns > 0, "after idle: a 64-byte round trip host -> guest -> host (%.0f us)",
		ns / 1e3))
		tap_diag("%s", env.why);
}

/*
 * The worker wakes on its timeout, disarms the kick and polls; the guest publishes right
 * then, so that the round may have missed it. Without the recheck after re-arming the kick
 * the worker would sleep another timeout with the packet in the ring.
 */
static void
case_rearm_race(void)
{
	uint64_t rq, lost = md_lost_kicks(&env);
	unsigned int i, slow = 0, done = 0;
	int64_t ns, max = 0;

	for (i = 0; i < RACES; i++) {
		rq = md_worker_rq_wait(&env);
		ns = md_race_rearm(&env, 1 + i % 64, WAIT_MS);
		if (ns < 0)
			break;
		done++;
		slow += ns >= SLOW_NS;
		slow_diag(ns, rq, "race", i);
		max = ns > max ? ns : max;
	}
	lost = md_lost_kicks(&env) - lost;
	if (!tap_ok(done == RACES, "%u packets published as the worker re-armed the kick "
		"arrive intact", done))
		tap_diag("race %u: %s", done, env.why);
	tap_ok(lost == 0, "no lost kick at the re-arm: the worker slept to its timeout over %llu "
		"tx buffers no kick announced (%u of %u took %u ms or more, max %.0f us)",
		(unsigned long long)lost, slow, done, SLOW_NS / 1000000, max / 1e3);
}

/* The app refuses @p opt / @p val (with --vm) and names the problem with @p word. */
static void
case_refused(const char *opt, const char *val, const char *extra, const char *word)
{
	char vm[300], sock[128], uds[128];
	const char *args[8];
	struct app_proc p;
	unsigned int n = 0;
	int status;

	if (app_proc_init(&p) < 0) {
		tap_ok(false, "%s %s: run directory", opt, val);
		return;
	}
	snprintf(vm, sizeof(vm), "cid=3,socket=%s,uds=%s",
		app_proc_path(&p, "vm3.sock", sock, sizeof(sock)),
		app_proc_path(&p, "vm3.vsock", uds, sizeof(uds)));
	args[n++] = "--vm";
	args[n++] = vm;
	args[n++] = opt;
	args[n++] = val;
	if (extra != NULL) {
		args[n++] = "--wait-mode";
		args[n++] = extra;
	}
	args[n] = NULL;
	status = app_proc_start(&p, NULL, args, NULL, 0);
	if (status == 0)
		status = app_proc_wait(&p, WAIT_MS);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) != 0 &&
		app_proc_log_contains(&p, word), "%s %s%s%s refused, the message says '%s'", opt,
		val, extra ? " --wait-mode " : "", extra ? extra : "", word);
	app_proc_fini(&p);
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Idle for a random time around the switch to sleep (0 to 3 x idle-us: polling, backing off,
 * arming, asleep), every fourth time long enough to be surely asleep, then a few bytes one
 * way, alternately from the guest (the kick path) and from the host (the socket path).
 */
static void
case_transitions(void)
{
	static int64_t lat[TRANSITIONS];
	uint64_t kicks0 = env.o.dp.g.kicks, app_kicks, bytes = 0, rq, lost = md_lost_kicks(&env);
	unsigned int i, slow = 0, done = 0;
	int64_t ns = 0;

	srand(42);
	for (i = 0; i < TRANSITIONS; i++) {
		enum md_way way = i % 2 ? MD_B_H2G : MD_A_G2H;
		uint32_t len = 1 + (uint32_t)rand() % 256;

		if (i % 4 == 0)
			md_sleep_us(20 * IDLE_US);
		else
			md_spin_us(&env, (unsigned int)rand() % (3 * IDLE_US));
		rq = md_worker_rq_wait(&env);
		ns = md_one_way(&env, way, len, WAIT_MS);
		if (ns < 0)
			break;
		lat[done++] = ns;
		bytes += len;
		slow += ns >= SLOW_NS;
		slow_diag(ns, rq, way == MD_A_G2H ? "guest -> host transition" :
			"host -> guest transition", i);
	}
	lost = md_lost_kicks(&env) - lost;
	if (!tap_ok(done == TRANSITIONS, "%u idle -> busy transitions, %llu bytes both ways, "
		"all intact", done, (unsigned long long)bytes))
		tap_diag("transition %u: %s", done, env.why);
	qsort(lat, done, sizeof(lat[0]), cmp_i64);
	if (done > 0)
		tap_diag("one-way latency after idle: median %.0f us, 99th %.0f us, max %.0f us",
			lat[done / 2] / 1e3, lat[done * 99 / 100] / 1e3, lat[done - 1] / 1e3);
	/* The host side's wakeups are the epoll set's readiness, which cannot be lost. */
	tap_ok(lost == 0, "no lost wakeup: the worker slept to its timeout over %llu tx buffers "
		"no kick announced (%u of %u transitions took %u ms or more)",
		(unsigned long long)lost, slow, done, SLOW_NS / 1000000);
	tap_ok(env.o.dp.g.kicks - kicks0 >= TRANSITIONS / 16, "the worker did sleep: it asked "
		"the guest for %llu kicks", (unsigned long long)(env.o.dp.g.kicks - kicks0));
	app_kicks = ops_tel_u64(&env.o, "/vsock/stats,3", "tx.kicks");
	tap_ok(app_kicks != UINT64_MAX && app_kicks > 0, "the app counted %llu tx kicks it woke "
		"on", (unsigned long long)app_kicks);
}

int
main(void)
{
	static const char *const extra[] = { "--wait-mode", "adaptive", "--idle-us", "100",
		NULL };
	int status;

	case_refused("--idle-us", "0", "adaptive", "1..10000000");
	case_refused("--idle-us", "100", NULL, "adaptive only");
	case_refused("--wait-mode", "sleepy", NULL, "poll, notify or adaptive");
	if (!tap_ok(md_start(&env, extra) == 0, "app started (--wait-mode adaptive --idle-us "
		"%d), VM 3 attached, a connection each way", IDLE_US)) {
		tap_diag("%s", env.why);
		md_stop(&env, true);
		return tap_done();
	}
	case_idle_cpu();
	case_after_idle();
	case_transitions();
	case_rearm_race();
	case_idle_cpu();
	dp_check_guest(&env.o.dp, "adaptive");
	status = md_stop(&env, tap_failed != 0);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"app exits 0 on SIGTERM (status %#x)", status);
	return tap_done();
}
