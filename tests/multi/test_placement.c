/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Placement of VMs on worker lcores: lcore= pins, the rest are balanced by count, and
 * "show config" shows where each VM is polled, on which NUMA node, in which groups. A
 * lcore that is not a worker is refused before anything is created.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>

#include "app_proc.h"
#include "tap.h"

static bool wait_log(struct app_proc *p, const char *needle, unsigned int ms)
{
	static const struct timespec pause = { .tv_nsec = 20000000 };
	unsigned int waited;

	for (waited = 0; waited < ms; waited += 20) {
		if (app_proc_log_contains(p, needle))
			return true;
		nanosleep(&pause, NULL);
	}
	return false;
}

static void vm(char *buf, size_t len, const struct app_proc *p, unsigned int cid,
	       const char *extra)
{
	snprintf(buf, len, "cid=%u,socket=%s/vm%u.sock,uds=%s/vm%u.vsock%s", cid, p->dir, cid,
		 p->dir, cid, extra);
}

int main(void)
{
	/* Three lcores on the two CPUs a test machine may have. */
	static const char *const eal[] = { "--no-huge", "-m", "512", "--no-pci", "--no-shconf",
		"--lcores", "0@0,1@0,2@1", "--log-level=lib.eal:error", NULL };
	char v3[300], v4[300], v5[300], v6[300], s6[128];
	const char *socks[] = { s6, NULL };
	struct app_proc p;
	int status;

	if (app_proc_init(&p) < 0)
		return tap_ok(0, "run directory"), tap_done();
	app_proc_path(&p, "vm6.sock", s6, sizeof(s6));
	vm(v3, sizeof(v3), &p, 3, ",lcore=2,group=red");
	vm(v4, sizeof(v4), &p, 4, ",group=red,group=lab");
	vm(v5, sizeof(v5), &p, 5, "");
	vm(v6, sizeof(v6), &p, 6, ",lcore=1");
	p.stdin_pipe = true;
	if (!tap_ok(app_proc_start(&p, eal, (const char *[]){ "-i", "--vm", v3, "--vm", v4,
			"--vm", v5, "--vm", v6, NULL }, socks, 10000) == 0, "app started, 4 VMs")) {
		app_proc_fini(&p);
		return tap_done();
	}
	app_proc_send(&p, "show config");
	/* Pinned: 3 on lcore 2, 6 on lcore 1; balanced in order: 4 to lcore 1, 5 to lcore 2. */
	tap_ok(wait_log(&p, "placed on lcore 2 (pinned), NUMA node 0; groups red", 5000),
	       "VM 3: lcore 2 (pinned), group red");
	tap_ok(wait_log(&p, "placed on lcore 1 (balanced), NUMA node 0; groups red,lab", 5000),
	       "VM 4: balanced onto lcore 1, groups red,lab");
	tap_ok(wait_log(&p, "placed on lcore 2 (balanced), NUMA node 0; groups none (host only)",
			5000), "VM 5: balanced onto lcore 2, host only");
	tap_ok(wait_log(&p, "placed on lcore 1 (pinned), NUMA node 0; groups none", 5000),
	       "VM 6: lcore 1 (pinned)");
	tap_ok(wait_log(&p, "2 worker lcores: 1 (0 VMs) 2 (0 VMs)", 1000),
	       "both worker lcores listed, polling no VM while no guest is attached");
	status = app_proc_stop(&p, 5000);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "app exits 0");
	if (tap_failed)
		app_proc_dump_log(&p);
	app_proc_fini(&p);

	/* lcore 0 is the main lcore: no VM may be placed there. */
	if (app_proc_init(&p) < 0)
		return tap_done();
	vm(v3, sizeof(v3), &p, 3, ",lcore=0");
	tap_ok(app_proc_start(&p, eal, (const char *[]){ "--vm", v3, NULL }, NULL, 0) == 0,
	       "app started with lcore=0");
	status = app_proc_wait(&p, 10000);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) != 0 &&
	       app_proc_log_contains(&p, "lcore 0 is not a worker lcore"),
	       "lcore=0 (the main lcore) is refused with a reason (status %#x)", status);
	tap_ok(app_proc_sockets_left(&p) == 0, "nothing left behind");
	app_proc_fini(&p);
	return tap_done();
}
