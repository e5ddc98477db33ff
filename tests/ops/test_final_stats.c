/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The statistics the app prints when it stops, as testpmd prints its ports' when it quits:
 * for each way an operator stops it (SIGTERM, SIGINT, the console's quit), move checked
 * bytes both ways (different amounts, so that a swap shows), stop it with the guest still
 * attached, and read the display it printed last. It must come after the workers stopped
 * ("polling paused"), once, and its counters must be exactly what the guest driver and the
 * host socket counted; the lcore display must follow with the VM's lcore busy.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ops_util.h"

#define MS 5000
#define PORT 5000
#define G2H_BYTES ((1u << 20) + 123)
#define H2G_BYTES ((768u << 10) + 45)
#define FINAL "dpdk-vsock-app: final statistics"

static struct ops_env env;
static struct dp_env *e = &env.dp;
/* The host end, open until the app stopped: its close would send the guest a SHUTDOWN. */
static int lfd = -1, hfd = -1;
/* Packets the guest driver sent before the app stopped. */
static uint64_t guest_tx_pkts;

static uint64_t
vm3(const char *path)
{
	return ops_tel_u64(&env, "/vsock/stats,3", path);
}

/* One connection, G2H_BYTES guest -> host and H2G_BYTES back, checked; left open. */
static bool
stream(void)
{
	static struct dp_stream gs, hr, hs, gr;
	struct vfe_guest_conn *c;
	bool ok;

	lfd = dp_listen(e, PORT, SOCK_STREAM);
	c = dp_guest_connect(e, PORT, VIRTIO_VSOCK_TYPE_STREAM, MS);
	if (lfd >= 0)
		hfd = dp_accept(e, lfd, MS);
	if (c == NULL || c->state != VFE_GC_ESTABLISHED || hfd < 0)
		return false;
	dp_stream_init(&gs, 31, G2H_BYTES);
	dp_stream_init(&hr, 31, G2H_BYTES);
	dp_stream_init(&hs, 32, H2G_BYTES);
	dp_stream_init(&gr, 32, H2G_BYTES);
	ok = DP_WAIT(e, (dp_guest_send(e, c, &gs), dp_host_recv(hfd, &hr), dp_host_send(hfd, &hs),
			 dp_guest_recv(e, c, &gr), hr.done == G2H_BYTES && gr.done == H2G_BYTES),
		     12 * MS) && dp_stream_ok(&hr) && dp_stream_ok(&gr);
	/* Every packet the guest sent taken, the credit updates of the last reads included. */
	return ok && DP_WAIT(e, vm3("from_guest_pkts") == e->g.tx_pkts &&
			     vm3("to_guest_pkts") == e->g.rx_pkts, MS);
}

/* The whole log, NUL-terminated, or NULL. Free it. */
static char *
read_log(void)
{
	FILE *f = fopen(e->app.log, "r");
	char *buf = NULL;
	size_t len = 0;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && ftell(f) >= 0) {
		len = (size_t)ftell(f);
		rewind(f);
		buf = calloc(1, len + 1);
		if (buf != NULL && fread(buf, 1, len, f) != len) {
			free(buf);
			buf = NULL;
		}
	}
	fclose(f);
	return buf;
}

/* Where @p needle starts in @p s, or "" (which no scan matches). */
static const char *
at(const char *s, const char *needle)
{
	const char *p = s ? strstr(s, needle) : NULL;

	return p ? p : "";
}

/* The VM's and the lcore's figures in the final display, checked against the two ends. */
static void
check_display(const char *how, const char *log)
{
	const char *fin = strstr(log, FINAL), *stop = strstr(log, "shutting down");
	const char *paused = strstr(log, "polling paused");
	uint64_t v[3] = { 0 }, busy = 0;
	unsigned int lcore = 0, vms = 0;
	int n;

	if (!tap_ok(fin != NULL, "%s: the app printed its final statistics", how))
		return;
	tap_ok(stop != NULL && paused != NULL && stop < paused && paused < fin &&
	       strstr(fin + 1, FINAL) == NULL,
	       "%s: once, after 'shutting down' and 'polling paused' (the workers stopped)", how);
	tap_ok(strstr(fin, "State: running on lcore 1, 1 connection open") != NULL,
	       "%s: VM 3 shown running with its connection open", how);
	/* Each scan before its check: a function's arguments have no order of evaluation. */
	n = sscanf(at(fin, "Guest->host packets:"), "Guest->host packets: %" SCNu64
		   " bytes: %" SCNu64 " host sockets written: %" SCNu64, &v[0], &v[1], &v[2]);
	tap_ok(n == 3 && v[0] == guest_tx_pkts && v[1] == G2H_BYTES &&
	       v[1] == e->g.tx_bytes && v[2] == G2H_BYTES,
	       "%s: guest->host %" PRIu64 " packets, %" PRIu64 " bytes, %" PRIu64 " written to "
	       "the host socket (guest sent %" PRIu64 " packets, %" PRIu64 " bytes; host read %u)",
	       how, v[0], v[1], v[2], guest_tx_pkts, e->g.tx_bytes, G2H_BYTES);
	n = sscanf(at(fin, "Host->guest packets:"), "Host->guest packets: %" SCNu64
		   " bytes: %" SCNu64 " host sockets read: %" SCNu64, &v[0], &v[1], &v[2]);
	tap_ok(n == 3 && v[0] == e->g.rx_pkts && v[1] == H2G_BYTES &&
	       v[1] == e->g.rx_bytes && v[2] == H2G_BYTES,
	       "%s: host->guest %" PRIu64 " packets, %" PRIu64 " bytes, %" PRIu64 " read from "
	       "the host socket (guest got %" PRIu64 " packets, %" PRIu64 " bytes; host sent %u)",
	       how, v[0], v[1], v[2], e->g.rx_pkts, e->g.rx_bytes, H2G_BYTES);
	n = sscanf(at(fin, "Connections opened:"), "Connections opened: %" SCNu64, &v[0]);
	tap_ok(n == 1 && v[0] == 1, "%s: 1 connection opened", how);
	n = sscanf(at(strstr(fin, "lcore statistics"), "  lcore "),
		   "  lcore %u VMs: %u polls: %*u busy: %" SCNu64, &lcore, &vms, &busy);
	tap_ok(n == 3 && lcore == 1 && vms == 1 && busy > 0,
	       "%s: lcore 1 polling 1 VM, %" PRIu64 " busy rounds", how, busy);
}

static void
run(const char *how, int sig)
{
	char *log;
	int status;

	if (!tap_ok(ops_start(&env, false, sig == 0, NULL) == 0, "%s: app started", how))
		return;
	if (dp_attach(e, NULL, NULL) == 0 && tap_ok(stream(), "%s: %u bytes guest -> host and %u "
						    "host -> guest, checked", how, G2H_BYTES,
						    H2G_BYTES)) {
		if (sig)
			kill(e->app.pid, sig);
		else
			app_proc_send(&e->app, "quit");
		/* The guest stays attached while the app stops, as QEMU does. */
		status = app_proc_wait(&e->app, 10000);
		/*
		 * What the app put in the rx ring before it paused is the guest's to take now (the
		 * ring is this process's memory); what the guest answers is after the display.
		 */
		guest_tx_pkts = e->g.tx_pkts;
		vfe_guest_poll(&e->g);
		tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		       "%s: the app exits 0 (status %#x)", how, status);
		log = read_log();
		if (tap_ok(log != NULL, "%s: its log", how))
			check_display(how, log);
		free(log);
	}
	if (tap_failed)
		app_proc_dump_log(&e->app);
	ops_stop(&env);
	close(hfd);
	close(lfd);
	hfd = lfd = -1;
}

int
main(void)
{
	run("SIGTERM", SIGTERM);
	run("SIGINT", SIGINT);
	run("quit", 0);
	return tap_done();
}
