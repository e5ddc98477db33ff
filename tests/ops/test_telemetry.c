/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Telemetry as an operator queries it: DPDK's own client, dpdk-telemetry.py
 * (Debian package dpdk-dev), against the app's --file-prefix. Every reply
 * must be valid JSON (checked by Python's json module) and carry the values
 * the traffic made: 2 VMs, one running on lcore 1, 4 refused connects. Then an app of more
 * VMs than one reply holds: /vsock/vms in pages.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vsock_pmd_version.h>

#include "ops_util.h"

#define MS 5000
#define CLIENT "/usr/bin/dpdk-telemetry.py"
#define NO_LISTENER_PORT 1234
#define PROBES 4
/* VMs for the paging check: two pages and a bit, whatever the page size. */
#define NB_MANY 60

static struct ops_env env;

static const char *const commands[] = {
	"/vsock/config", "/vsock/vms", "/vsock/stats,3", "/vsock/lcores", "/vsock/conns,3",
	"/vsock/stats,99", "/help,/vsock/stats",
};
#define NCMD (sizeof(commands) / sizeof(commands[0]))

static char replies[NCMD][OPS_TEL_MAX];

/* Run the client with every command on its stdin; one reply line per command. */
static int
run_client(void)
{
	char in[160], out[160], cmd[600], line[OPS_TEL_MAX];
	unsigned int i, n = 0;
	FILE *f;

	app_proc_path(&env.dp.app, "tel.in", in, sizeof(in));
	app_proc_path(&env.dp.app, "tel.out", out, sizeof(out));
	f = fopen(in, "w");
	if (f == NULL)
		return -errno;
	for (i = 0; i < NCMD; i++)
		fprintf(f, "%s\n", commands[i]);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "python3 %s -f %s < %s > %s 2>&1", CLIENT, env.prefix, in, out);
	if (system(cmd) != 0)
		return -EIO;
	f = fopen(out, "r");
	if (f == NULL)
		return -errno;
	while (n < NCMD && fgets(line, sizeof(line), f) != NULL)
		snprintf(replies[n++], sizeof(replies[0]), "%s", line);
	fclose(f);
	if (n != NCMD) {
		tap_diag("%u replies for %zu commands", n, NCMD);
		return -EPROTO;
	}
	/* Valid JSON, every line, by a real parser. */
	snprintf(cmd, sizeof(cmd), "python3 -c 'import json, sys\n"
		"for l in sys.stdin: json.loads(l)' < %s", out);
	return system(cmd) == 0 ? 0 : -EBADMSG;
}

static uint64_t
num(unsigned int i, const char *path)
{
	uint64_t v;

	return ops_json_u64(replies[i], path, &v) == 0 ? v : UINT64_MAX;
}

/* Where the paging check's VMs have their sockets, and its --config file. */
static char many_dir[] = "/tmp/vsock-tel-XXXXXX";

/* A path of @p len characters in many_dir for VM @p cid, "vm<cid>.<kind>" its end. */
static void
long_path(unsigned int cid, const char *kind, size_t len, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s/", many_dir);

	while ((size_t)n + 24 < len && (size_t)n + 1 < size)
		buf[n++] = 'x';
	snprintf(buf + n, size - (size_t)n, "vm%u.%s", cid, kind);
}

/*
 * More VMs than one reply can hold, with long socket paths: /vsock/vms pages through them
 * (librte_telemetry would leave out what does not fit, without a word), every VM on exactly
 * one page, each with both its paths whole.
 */
static void
test_vms_pages(void)
{
	static char page[OPS_TEL_MAX];
	const char *extra[] = { "--config", NULL, "--mbufs", "512", NULL };
	unsigned int cid, seen[NB_MANY + 3] = { 0 }, pages = 0, whole = 0, once = 0, i;
	char cfg[64], sock[108], uds[108], cmd[32], got[108], path[32];
	uint64_t next = 0, v;
	bool replied = true;
	FILE *f;

	if (!tap_ok(mkdtemp(many_dir) != NULL, "a directory for %u VMs' sockets: %s", NB_MANY,
		    many_dir))
		return;
	snprintf(cfg, sizeof(cfg), "%s/many.conf", many_dir);
	f = fopen(cfg, "w");
	if (!tap_ok(f != NULL, "config file %s", cfg))
		goto out;
	for (cid = 4; cid < NB_MANY + 3; cid++) {
		long_path(cid, "sock", 107, sock, sizeof(sock));
		long_path(cid, "vsock", 96, uds, sizeof(uds));
		/* Few connections each: the app budgets max-connections + 32 descriptors a VM. */
		fprintf(f, "vm cid=%u,socket=%s,uds=%s,max-connections=8\n", cid, sock, uds);
	}
	fclose(f);
	extra[1] = cfg;
	if (!tap_ok(ops_start(&env, false, false, extra) == 0, "app started with %u VMs",
		    NB_MANY))
		goto out;
	/* ops_start() waits for VM 3's socket; the API answers once every VM is set up. */
	for (i = 0; i < 3000 && ops_tel_u64(&env, "/vsock/config", "nb_vms") != NB_MANY; i++)
		usleep(10000);
	do {
		snprintf(cmd, sizeof(cmd), "/vsock/vms,%llu", (unsigned long long)next);
		if (ops_tel(&env, cmd, page, sizeof(page)) < 0) {
			replied = false;
			break;
		}
		pages++;
		for (cid = 3; cid < NB_MANY + 3; cid++) {
			snprintf(path, sizeof(path), "%u.cid", cid);
			if (ops_json_u64(page, path, &v) < 0 || v != cid)
				continue;
			seen[cid]++;
			/* Both paths whole (VM 3's are ops_start()'s, short). */
			snprintf(path, sizeof(path), "%u.socket", cid);
			long_path(cid, "sock", 107, sock, sizeof(sock));
			if (cid != 3 && (ops_json_str(page, path, got, sizeof(got)) < 0 ||
					 strcmp(got, sock) != 0))
				continue;
			snprintf(path, sizeof(path), "%u.uds", cid);
			long_path(cid, "vsock", 96, uds, sizeof(uds));
			if (cid == 3 || (ops_json_str(page, path, got, sizeof(got)) == 0 &&
					 strcmp(got, uds) == 0))
				whole++;
		}
		if (ops_json_u64(page, "next", &v) < 0)
			break;
		next = v;
	} while (pages <= NB_MANY);
	for (cid = 3; cid < NB_MANY + 3; cid++)
		once += seen[cid] == 1;
	tap_ok(replied && pages > 1 && once == NB_MANY && whole == NB_MANY,
	       "/vsock/vms: %u pages, %u of %u VMs on exactly one, %u whole", pages, once,
	       NB_MANY, whole);
	snprintf(cmd, sizeof(cmd), "/vsock/vms,%u", NB_MANY);
	tap_ok(ops_tel(&env, cmd, page, sizeof(page)) == 0 &&
	       strcmp(page, "{\"/vsock/vms\":{}}") == 0,
	       "/vsock/vms,%u: past the last VM, an empty page", NB_MANY);
	tap_ok(ops_tel(&env, "/vsock/vms,x", page, sizeof(page)) == 0 &&
	       strstr(page, "null") != NULL, "/vsock/vms,x: refused (null)");
	if (tap_failed)
		app_proc_dump_log(&env.dp.app);
	ops_stop(&env);
out:
	unlink(cfg);
	rmdir(many_dir);
}

int
main(void)
{
	unsigned int i, refused = 0;
	char s[64];
	int rc;

	if (!tap_ok(access(CLIENT, X_OK) == 0, "%s present (Debian package dpdk-dev)", CLIENT))
		return tap_done();
	if (!tap_ok(ops_start(&env, true, false, NULL) == 0, "app started with VMs 3 and 5"))
		return tap_done();
	if (dp_attach(&env.dp, NULL, NULL) < 0)
		goto out;
	for (i = 0; i < PROBES; i++) {
		struct vfe_guest_conn *c = dp_guest_connect(&env.dp, NO_LISTENER_PORT,
				VIRTIO_VSOCK_TYPE_STREAM, MS);

		if (c != NULL && c->reset)
			refused++;
		if (c != NULL)
			vfe_guest_release(&env.dp.g, c);
	}
	tap_ok(refused == PROBES, "%d guest connects refused", PROBES);
	DP_WAIT(&env.dp, ops_tel_u64(&env, "/vsock/stats,3", "to_guest_pkts") == PROBES, MS);

	rc = run_client();
	if (!tap_ok(rc == 0, "dpdk-telemetry.py answers every command with valid JSON (%d)", rc)) {
		for (i = 0; i < NCMD; i++)
			tap_diag("%s -> %s", commands[i], replies[i]);
		goto out;
	}
	tap_ok(strncmp(replies[0], "{\"/vsock/config\": {", 19) == 0 && num(0, "nb_vms") == 2 &&
		num(0, "nb_lcores") == 1 && num(0, "burst") == 32 && num(0, "paused") == 0,
		"/vsock/config: 2 VMs, 1 lcore, burst 32, not paused");
	tap_ok(ops_json_str(replies[0], "version", s, sizeof(s)) == 0 &&
		strcmp(s, VSOCK_PMD_VERSION) == 0, "/vsock/config: version %s", VSOCK_PMD_VERSION);
	tap_ok(num(1, "3.running") == 1 && num(1, "3.lcore") == 1 &&
		num(1, "3.rx_ring_size") == 128 && num(1, "5.running") == 0 &&
		ops_json_str(replies[1], "5.uds", s, sizeof(s)) == 0 &&
		strstr(s, "vm5.vsock") != NULL,
		"/vsock/vms: VM 3 running on lcore 1, VM 5 waiting");
	tap_ok(num(1, "3.placed_lcore") == 1 && num(1, "5.placed_lcore") == 1,
		"/vsock/vms: both VMs placed on lcore 1, the waiting one too");
	tap_ok(num(2, "cid") == 3 && num(2, "from_guest_pkts") == PROBES &&
		num(2, "to_guest_pkts") == PROBES && num(2, "conns_refused") == PROBES &&
		num(2, "from_guest_bytes") == 0 && num(2, "tx.packets") == PROBES &&
		num(2, "rx.packets") == PROBES && num(2, "errors.conn_no_conn") == 0 &&
		num(2, "errors_total") == 0,
		"/vsock/stats,3: %d packets each way, %d refused, no error", PROBES, PROBES);
	tap_ok(num(3, "1.nb_vms") == 1 && num(3, "1.polls") != UINT64_MAX &&
		num(3, "1.busy_polls") >= 1 && num(3, "1.busy_polls") < num(3, "1.polls"),
		"/vsock/lcores: lcore 1 polls VM 3");
	tap_ok(num(4, "cid") == 3 && num(4, "count") == 0, "/vsock/conns,3: no connection open");
	tap_ok(strstr(replies[5], "{\"/vsock/stats\": null}") != NULL,
		"/vsock/stats,99: unknown CID gives null");
	tap_ok(strstr(replies[6], "Parameters: int cid") != NULL, "/help documents /vsock/stats");
out:
	if (tap_failed)
		app_proc_dump_log(&env.dp.app);
	ops_stop(&env);
	test_vms_pages();
	return tap_done();
}
