/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A VM's totals outlive its guest, as testpmd's port statistics outlive link changes:
 * attach, move checked bytes both ways, detach: /vsock/stats and show vm stats still count
 * them; attach again, move more: the totals add up; clear stats resets them. Then
 * /vsock/conns lists 1023 established connections of one VM page by page, each exactly once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ops_util.h"

#define MS 5000
#define PORT 5000
#define ROUND_BYTES 300000u
#define MANY 1023	/* the connection table of a VM holds 1023 (CONN_MAX_DEFAULT) */

static struct ops_env env;
static struct dp_env *e = &env.dp;
static char json[OPS_TEL_MAX];

static uint64_t
vm3(const char *path)
{
	return ops_tel_u64(&env, "/vsock/stats,3", path);
}

/* One connection guest <-> host listener, @p bytes checked each way, then closed. */
static bool
round_trip(uint64_t seed, uint32_t bytes)
{
	struct dp_stream gs, hr, hs, gr;
	struct vfe_guest_conn *c;
	int lfd, hfd = -1;
	bool ok = false;

	lfd = dp_listen(e, PORT, SOCK_STREAM);
	c = dp_guest_connect(e, PORT, VIRTIO_VSOCK_TYPE_STREAM, MS);
	if (lfd >= 0)
		hfd = dp_accept(e, lfd, MS);
	if (c != NULL && c->state == VFE_GC_ESTABLISHED && hfd >= 0) {
		dp_stream_init(&gs, seed, bytes);
		dp_stream_init(&hr, seed, bytes);
		dp_stream_init(&hs, seed + 1, bytes);
		dp_stream_init(&gr, seed + 1, bytes);
		ok = DP_WAIT(e, (dp_guest_send(e, c, &gs), dp_host_recv(hfd, &hr),
				dp_host_send(hfd, &hs), dp_guest_recv(e, c, &gr),
				hr.done == bytes && gr.done == bytes), 4 * MS) &&
			dp_stream_ok(&hr) && dp_stream_ok(&gr);
	}
	if (c != NULL) {
		vfe_guest_send_ctl(&e->g, c, VIRTIO_VSOCK_OP_RST, 0);
		DP_WAIT(e, ops_tel_u64(&env, "/vsock/conns,3", "count") == 0, MS);
		vfe_guest_release(&e->g, c);
	}
	if (hfd >= 0)
		close(hfd);
	if (lfd >= 0)
		close(lfd);
	return ok;
}

static bool
totals_are(uint64_t bytes, uint64_t conns)
{
	return vm3("from_guest_bytes") == bytes && vm3("to_guest_bytes") == bytes &&
		vm3("host_written_bytes") == bytes && vm3("host_read_bytes") == bytes &&
		vm3("conns_opened") == conns;
}

static void
test_persist(void)
{
	char line[160];
	uint64_t pkts;

	if (dp_attach(e, NULL, NULL) < 0)
		return;
	tap_ok(round_trip(21, ROUND_BYTES), "first guest: %u bytes each way", ROUND_BYTES);
	tap_ok(totals_are(ROUND_BYTES, 1), "counted while attached");
	pkts = vm3("from_guest_pkts");
	dp_detach(e);
	tap_ok(DP_WAIT(e, ops_tel_u64(&env, "/vsock/vms", "3.running") == 0, MS),
		"guest detached");
	tap_ok(totals_are(ROUND_BYTES, 1) && vm3("from_guest_pkts") == pkts,
		"after detach the totals still read %u bytes each way, %llu packets", ROUND_BYTES,
		(unsigned long long)pkts);
	snprintf(line, sizeof(line), "bytes: %-16u", ROUND_BYTES);
	tap_ok(ops_cmd(&env, "show vm stats 3", line, MS, NULL),
		"show vm stats 3 shows them without a guest");

	if (dp_attach(e, NULL, NULL) < 0)
		return;
	tap_ok(round_trip(31, 2 * ROUND_BYTES), "second guest: %u bytes each way",
		2 * ROUND_BYTES);
	tap_ok(totals_are(3 * ROUND_BYTES, 2) && vm3("from_guest_pkts") > pkts,
		"the totals add up: %u bytes each way, 2 connections", 3 * ROUND_BYTES);
	tap_ok(ops_cmd(&env, "clear stats 3", "cleared", MS, NULL) && totals_are(0, 0) &&
		vm3("from_guest_pkts") == 0, "clear stats 3 resets them");
}

static int
cmp_key(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* A state column entry: "%-12s" pads "established" with one space, then the separator. */
#define ROW_ESTABLISHED " established  "

/* show conn on MANY connections: a summary, a page of rows, the command for the next page. */
static void
show_conn_pages(void)
{
	char more[64];
	long mark;
	unsigned int last = MANY - MANY % 32;

	snprintf(more, sizeof(more), "... %u more: show conn 3 32\n", MANY - 32);
	tap_ok(ops_cmd(&env, "show conn 3", more, MS, &mark) &&
		ops_log_has(&env, mark, "VM cid 3: 1023 connections: 1023 established\n") &&
		ops_log_count(&env, mark, ROW_ESTABLISHED) == 32,
		"show conn 3: a summary by state, 32 rows, then '%.*s'", (int)strlen(more) - 1,
		more);
	snprintf(more, sizeof(more), "show conn 3 %u", last);
	tap_ok(ops_cmd(&env, more, "VM cid 3: 1023 connections", MS, &mark) &&
		DP_WAIT(e, ops_log_count(&env, mark, ROW_ESTABLISHED) == MANY - last, MS) &&
		!ops_log_has(&env, mark, "more: show conn"),
		"%s: the last %u rows, nothing more", more, MANY - last);
	tap_ok(ops_cmd(&env, "show conn 3 5000", "none from 5000 on: show conn 3 lists them",
		MS, &mark) && ops_log_count(&env, mark, ROW_ESTABLISHED) == 0,
		"show conn 3 5000: past the end, said so");
}

/*
 * Guest connections to a host listener, one at a time: 1023 established connections of VM 3.
 * Nothing in them waits on the test's speed (the app answers the guest's REQUEST itself, and
 * no timer runs on an established connection), so they stay until the test closes them.
 */
static void
test_conns_pages(void)
{
	static int fds[MANY];
	static struct vfe_guest_conn *gcs[MANY];
	unsigned int i, opened = 0, listed = 0, pages = 0, dup = 0;
	uint64_t count = 0, start = 0, next;
	static char keys[2 * MANY][24];
	int lfd;

	dp_raise_fd_limit(MANY + 256);
	lfd = dp_listen(e, PORT, SOCK_STREAM);
	for (i = 0; lfd >= 0 && i < MANY; i++) {
		gcs[i] = dp_guest_connect(e, PORT, VIRTIO_VSOCK_TYPE_STREAM, 4 * MS);
		if (gcs[i] == NULL || gcs[i]->state != VFE_GC_ESTABLISHED)
			break;
		fds[i] = dp_accept(e, lfd, 4 * MS);
		if (fds[i] < 0) {
			i++;
			break;
		}
		opened++;
	}
	tap_ok(opened == MANY && DP_WAIT(e, ops_tel_u64(&env, "/vsock/vms", "3.conns") == MANY,
			MS), "%u guest connections established, %u accepted by the host", i,
		opened);
	/* Page by page, each connection under its own key. */
	do {
		char cmd[48], *p;

		snprintf(cmd, sizeof(cmd), "/vsock/conns,3,%llu", (unsigned long long)start);
		if (ops_tel(&env, cmd, json, sizeof(json)) < 0 ||
				ops_json_u64(json, "count", &count) < 0 ||
				ops_json_u64(json, "next", &next) < 0 || next <= start)
			break;
		/* "<key>":{"guest_port": ... : every connection's key, as the reply has it. */
		for (p = strstr(json, "\":{\"guest_port\""); p;
				p = strstr(p + 1, "\":{\"guest_port\"")) {
			const char *k = p;

			while (k > json && k[-1] != '"')
				k--;
			if (listed < 2 * MANY)
				snprintf(keys[listed], sizeof(keys[0]), "%.*s", (int)(p - k), k);
			listed++;
		}
		pages++;
		start = next;
	} while (start < count);
	qsort(keys, listed < 2 * MANY ? listed : 2 * MANY, sizeof(keys[0]), cmp_key);
	for (i = 1; i < listed && i < 2 * MANY; i++)
		dup += strcmp(keys[i], keys[i - 1]) == 0;
	tap_ok(count == MANY && listed == MANY && dup == 0 && start == MANY,
		"/vsock/conns,3,<start>: %u pages list %u connections of %llu, %u twice", pages,
		listed, (unsigned long long)count, dup);
	tap_ok(ops_tel(&env, "/vsock/conns,3,x", json, sizeof(json)) < 0 ||
		strstr(json, "null") != NULL, "a bad start is refused");
	show_conn_pages();
	/* The guest resets each: the app closes its host side. */
	for (i = 0; i < MANY && gcs[i] != NULL; i++) {
		if (gcs[i]->state != VFE_GC_CLOSED)
			DP_WAIT(e, vfe_guest_send_ctl(&e->g, gcs[i], VIRTIO_VSOCK_OP_RST, 0) == 0,
				MS);
	}
	tap_ok(DP_WAIT(e, ops_tel_u64(&env, "/vsock/vms", "3.conns") == 0, 4 * MS),
		"all gone when the guest resets them");
	for (i = 0; i < MANY && gcs[i] != NULL; i++) {
		vfe_guest_release(&e->g, gcs[i]);
		if (i < opened)
			close(fds[i]);
	}
	if (lfd >= 0)
		close(lfd);
}

int
main(void)
{
	if (!tap_ok(ops_start(&env, false, true, NULL) == 0, "app started with -i"))
		return tap_done();
	test_persist();
	test_conns_pages();
	ops_finish(&env);
	return tap_done();
}
