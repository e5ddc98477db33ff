/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The operator console, scripted through its stdin as an operator would type:
 *  - every command answers, with the figures the traffic made (probes the
 *    guest sends to a port nobody listens on: exact packet counts);
 *  - wrong commands and wrong values get a message and the console stays;
 *  - set burst / record-* / clear / stop / start change what they say;
 *  - quit and end of input exit 0 with the sockets removed;
 *  - --stats-period prints the same display periodically.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ops_util.h"
#include "poll_wait.h"

#define MS 5000
#define NO_LISTENER_PORT 1234
#define PROBES 3

static struct ops_env env;

/* @p n guest connects to a port nobody listens on: each ends with an RST. */
static bool
probes(unsigned int n)
{
	unsigned int i, refused = 0;

	for (i = 0; i < n; i++) {
		struct vfe_guest_conn *c = dp_guest_connect(&env.dp, NO_LISTENER_PORT,
				VIRTIO_VSOCK_TYPE_STREAM, MS);

		if (c != NULL && c->reset)
			refused++;
		if (c != NULL)
			vfe_guest_release(&env.dp.g, c);
	}
	return refused == n;
}

static bool
exited_cleanly(const char *what)
{
	int status = app_proc_wait(&env.dp.app, 10000);

	return tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
			app_proc_sockets_left(&env.dp.app) == 0,
		"%s: app exits 0 and removes its sockets (status %#x)", what, status);
}

static void
test_commands(void)
{
	char line[128];
	long mark;

	tap_ok(ops_cmd(&env, "help", "show vm stats all|<cid>", MS, NULL), "help lists commands");
	tap_ok(ops_cmd(&env, "show config", "VM cid 5: no guest attached", MS, &mark) &&
		ops_log_has(&env, mark, "VM cid 3: no guest attached") &&
		ops_log_has(&env, mark, "burst 32; polling started"),
		"show config before any guest");

	if (dp_attach(&env.dp, NULL, NULL) < 0)
		return;
	tap_ok(ops_cmd(&env, "show config", "VM cid 3: lcore 1, rings rx 128 tx 128", MS, &mark) &&
		ops_log_has(&env, mark, "VERSION_1") && ops_log_has(&env, mark, "1 (1 VM)"),
		"show config: the guest's lcore, rings and features");

	tap_ok(probes(PROBES), "%d guest connects refused with RST", PROBES);
	snprintf(line, sizeof(line), "Guest->host packets: %-14d", PROBES);
	tap_ok(ops_cmd(&env, "show vm stats 3", line, MS, &mark), "show vm stats 3: %d packets "
		"from the guest", PROBES);
	snprintf(line, sizeof(line), "Host->guest packets: %-14d", PROBES);
	tap_ok(ops_log_has(&env, mark, line), "show vm stats 3: %d packets to the guest", PROBES);
	snprintf(line, sizeof(line), "refused: %-8d", PROBES);
	tap_ok(ops_log_has(&env, mark, line), "show vm stats 3: %d connections refused", PROBES);
	tap_ok(ops_log_has(&env, mark, "Throughput (since last show)"), "throughput shown");
	tap_ok(ops_cmd(&env, "show vm stats all", "VM statistics for CID 5", MS, &mark) &&
		ops_log_has(&env, mark, "VM statistics for CID 3"), "show vm stats all: both VMs");

	/* Mistakes: each gets a sentence, and the console answers the next command. */
	tap_ok(ops_cmd(&env, "show vm stats 9", "No VM with CID 9. VMs: 3 5", MS, NULL),
		"unknown CID named, VMs listed");
	tap_ok(ops_cmd(&env, "show vm stats abc", "Bad argument 'abc'", MS, NULL),
		"a word where a CID belongs");
	tap_ok(ops_cmd(&env, "frobnicate the vm", "Command not found", MS, NULL),
		"unknown command");
	tap_ok(ops_cmd(&env, "show conn", "Bad arguments", MS, NULL), "missing argument");
	tap_ok(ops_cmd(&env, "show conn 3 x", "Bad argument 'x': expected the first row", MS,
		NULL), "show conn: a word where the first row belongs");
	tap_ok(ops_cmd(&env, "set burst 0", "Bad burst size '0' is not a decimal number in 1..512",
		MS, NULL), "burst 0 refused");
	/* Numbers are decimal, as on the command line: never octal or hexadecimal. */
	tap_ok(ops_cmd(&env, "set burst 010", "Bad burst size '010' has a leading zero", MS,
		NULL), "burst 010 refused, not read as 10 or 8");
	tap_ok(ops_cmd(&env, "show vm stats 03", "Bad argument '03'", MS, &mark) &&
		ops_log_has(&env, mark, "CID '03' has a leading zero") &&
		!ops_log_has(&env, mark, "VM statistics for CID 3"),
		"show vm stats 03 refused, not read as VM 3");
	tap_ok(ops_cmd(&env, "clear stats 0x3", "Bad argument '0x3'", MS, &mark) &&
		ops_log_has(&env, mark, "CID '0x3' is not a decimal number") &&
		!ops_log_has(&env, mark, "cleared"), "clear stats 0x3 refused, not read as VM 3");
	tap_ok(ops_cmd(&env, "show conn 3 01", "Bad argument '01': expected the first row", MS,
		NULL), "show conn 3 01 refused");
	tap_ok(ops_cmd(&env, "set burst 513", "Bad burst size '513'", MS, NULL),
		"burst 513 refused");
	tap_ok(ops_cmd(&env, "set record-core-cycles maybe", "Bad argument 'maybe'", MS, NULL),
		"on|off expected");
	tap_ok(ops_cmd(&env, "clear stats 42", "No VM with CID 42", MS, NULL),
		"clear of an unknown CID");
	tap_ok(ops_cmd(&env, "show config", "burst 32; polling started", MS, NULL),
		"console still answers, nothing changed by the mistakes");

	tap_ok(ops_cmd(&env, "set burst 16", "Burst size set to 16 packets", MS, NULL) &&
		ops_cmd(&env, "show config", "burst 16;", MS, NULL), "set burst 16");
	tap_ok(ops_cmd(&env, "set record-burst-stats on", "record-burst-stats on", MS, NULL) &&
		ops_cmd(&env, "set record-core-cycles on", "record-core-cycles on", MS, NULL),
		"recording switched on");
	probes(2);
	tap_ok(ops_cmd(&env, "show lcore stats", "CPU cycles/packet=", MS, &mark) &&
		ops_log_has(&env, mark, "lcore 1   VMs: 1"), "show lcore stats: cycles per packet");
	tap_ok(ops_cmd(&env, "show vm stats 3", "TX-bursts: ", MS, NULL),
		"show vm stats: burst histogram while recording");

	tap_ok(ops_cmd(&env, "show conn 3", "VM cid 3: 0 connections", MS, NULL),
		"show conn: none open");
	tap_ok(ops_cmd(&env, "show conn 9 0", "No VM with CID 9", MS, NULL),
		"show conn <cid> <start>: unknown CID named");
	tap_ok(ops_cmd(&env, "clear stats 3", "Statistics of VM cid 3 cleared", MS, NULL) &&
		ops_cmd(&env, "show vm stats 3", "Guest->host packets: 0 ", MS, NULL),
		"clear stats 3: counters restart from zero");
	tap_ok(ops_cmd(&env, "clear stats all", "Statistics of every VM and lcore cleared", MS,
		NULL), "clear stats all");

	tap_ok(ops_cmd(&env, "stop", "Polling stopped", MS, NULL), "stop");
	tap_ok(ops_cmd(&env, "stop", "Polling already stopped", MS, NULL), "stop twice");
	tap_ok(ops_cmd(&env, "show config", "polling stopped", MS, NULL), "config says stopped");
	tap_ok(ops_cmd(&env, "start", "Polling started", MS, NULL), "start");
	tap_ok(probes(1), "traffic flows again after start");
	dp_detach(&env.dp);
	tap_ok(ops_cmd(&env, "quit", "quit, shutting down", MS, NULL), "quit");
	exited_cleanly("quit");
}

int
main(void)
{
	long mark;

	if (!tap_ok(ops_start(&env, true, true, NULL) == 0, "app started with -i"))
		return tap_done();
	test_commands();
	if (tap_failed)
		app_proc_dump_log(&env.dp.app);
	ops_stop(&env);

	/* End of input is quit. */
	if (tap_ok(ops_start(&env, false, true, NULL) == 0, "app started with -i again")) {
		close(env.dp.app.stdin_fd);
		env.dp.app.stdin_fd = -1;
		exited_cleanly("end of input");
		ops_stop(&env);
	}

	/* The periodic display: the same banners, every second, without a console. */
	if (tap_ok(ops_start(&env, false, false, (const char *[]){ "--stats-period", "1", NULL })
			== 0, "app started with --stats-period 1")) {
		uint64_t t0 = now_ms();

		/* A display every second: two of them come within seconds, however loaded. */
		mark = 0;
		while ((ops_log_count(&env, mark, "VM statistics for CID 3") < 2 ||
			ops_log_count(&env, mark, "lcore statistics") < 2) && now_ms() - t0 < 10000)
			usleep(100000);
		tap_ok(ops_log_count(&env, mark, "VM statistics for CID 3") >= 2 &&
			ops_log_count(&env, mark, "lcore statistics") >= 2,
			"--stats-period 1: two displays within 10 s (%u after %llu ms)",
			ops_log_count(&env, mark, "VM statistics for CID 3"),
			(unsigned long long)(now_ms() - t0));
		tap_ok(!ops_log_has(&env, 0, OPS_PROMPT), "no console without -i");
		if (tap_failed)
			app_proc_dump_log(&env.dp.app);
		ops_stop(&env);
	}
	return tap_done();
}
