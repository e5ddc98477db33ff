/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DPDK memory that fits or says why, with --no-huge (the heap is -m, default 64 MiB, and
 * cannot grow):
 *  - three VMs of default mbufs do not fit the default: the app exits 1 before it creates
 *    a socket, naming the memory they need and the -m that fits;
 *  - with that -m they start, a guest attaches and moves checked bytes;
 *  - /vsock/memory and show config give each pool's bytes, and the payload pool's are
 *    exactly its memzones' as the EAL lists them (header, object chunks, ring), its
 *    objects and object size those of /mempool/info.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ops_util.h"

#define MS 5000
#define NB_VMS 3
#define G2H_PORT 5000
#define G2H_BYTES 100000u
#define POOL "vsock_payload_0"

static struct ops_env env;
static struct dp_env *e = &env.dp;
static char json[OPS_TEL_MAX];

/* Start the app on VMs 3, 4, 5 with --no-huge and -m @p mem_mb (0: the EAL's default). */
static int
start(unsigned int mem_mb, bool wait)
{
	const char *eal[16] = { "--no-huge", "--no-pci", "--no-shconf", "-l", "0-1",
		"--log-level=lib.eal:error" };
	char vm[NB_VMS][512], prefix_arg[64], mem[16], sock[NB_VMS][128], uds[128], name[32];
	const char *args[2 * NB_VMS + 2], *socks[NB_VMS + 1];
	unsigned int n = 6, i;

	memset(&env, 0, sizeof(env));
	if (app_proc_init(&e->app) < 0)
		return -1;
	snprintf(env.prefix, sizeof(env.prefix), "vsock-mem-%d", (int)getpid());
	snprintf(prefix_arg, sizeof(prefix_arg), "--file-prefix=%s", env.prefix);
	eal[n++] = prefix_arg;
	if (mem_mb) {
		snprintf(mem, sizeof(mem), "%u", mem_mb);
		eal[n++] = "-m";
		eal[n++] = mem;
	}
	eal[n] = NULL;
	for (i = 0; i < NB_VMS; i++) {
		snprintf(name, sizeof(name), "vm%u.sock", 3 + i);
		app_proc_path(&e->app, name, sock[i], sizeof(sock[i]));
		snprintf(name, sizeof(name), "vm%u.vsock", 3 + i);
		app_proc_path(&e->app, name, uds, sizeof(uds));
		snprintf(vm[i], sizeof(vm[i]), "cid=%u,socket=%s,uds=%s", 3 + i, sock[i], uds);
		args[2 * i] = "--vm";
		args[2 * i + 1] = vm[i];
		socks[i] = sock[i];
		if (i == 0) {
			snprintf(e->sock, sizeof(e->sock), "%s", sock[0]);
			snprintf(e->uds, sizeof(e->uds), "%s", uds);
		}
	}
	args[2 * NB_VMS] = "-i";
	args[2 * NB_VMS + 1] = NULL;
	socks[NB_VMS] = NULL;
	e->app.stdin_pipe = true;
	return app_proc_start(&e->app, eal, args, wait ? socks : NULL, 15000);
}

/* The sizes in "3 VMs need N MiB of DPDK memory, the EAL has H MiB: pass -m M". */
static bool
refusal(unsigned int *need, unsigned int *have, unsigned int *fit)
{
	char line[512];
	bool found = false;
	FILE *f = fopen(e->app.log, "r");

	while (f && !found && fgets(line, sizeof(line), f)) {
		const char *p = strstr(line, "3 VMs need ");

		found = p && sscanf(p, "3 VMs need %u MiB of DPDK memory, the EAL has %u MiB: "
				"pass -m %u", need, have, fit) == 3;
	}
	if (f)
		fclose(f);
	return found;
}

/* Bytes of every memzone of the EAL whose name is @p name or starts with "@p name_". */
static uint64_t
memzones_of(const char *name, unsigned int *count)
{
	char list[OPS_TEL_MAX], cmd[64], zone[64];
	uint64_t total = 0, len;
	const char *p;
	char *end;

	*count = 0;
	if (ops_tel(&env, "/eal/memzone_list", list, sizeof(list)) < 0 ||
			(p = strchr(list, '[')) == NULL)
		return 0;
	for (p++; *p >= '0' && *p <= '9'; p = end + (*end == ',')) {
		unsigned long i = strtoul(p, &end, 10);

		snprintf(cmd, sizeof(cmd), "/eal/memzone_info,%lu", i);
		if (ops_tel(&env, cmd, json, sizeof(json)) < 0 ||
				ops_json_str(json, "Name", zone, sizeof(zone)) < 0 ||
				ops_json_u64(json, "Length", &len) < 0)
			continue;
		if (strcmp(zone, name) == 0 || (strncmp(zone, name, strlen(name)) == 0 &&
				zone[strlen(name)] == '_')) {
			total += len;
			(*count)++;
		}
	}
	return total;
}

static void
test_pool_figures(unsigned int mem_mb)
{
	uint64_t bytes, objs, obj_bytes, v, size, hdr, elt, trl, heap, used;
	unsigned int nb_pool, nb_ring;
	uint64_t zones, ring;
	char expect[160];

	if (!tap_ok(ops_tel(&env, "/vsock/memory", json, sizeof(json)) == 0 &&
			ops_json_u64(json, "pools." POOL ".bytes", &bytes) == 0 &&
			ops_json_u64(json, "pools." POOL ".objects", &objs) == 0 &&
			ops_json_u64(json, "pools." POOL ".obj_bytes", &obj_bytes) == 0 &&
			ops_json_u64(json, "heap_bytes", &heap) == 0 &&
			ops_json_u64(json, "heap_used_bytes", &used) == 0 &&
			ops_json_u64(json, "can_grow", &v) == 0, "/vsock/memory answers"))
		return;
	tap_ok(heap == (uint64_t)mem_mb << 20 && used > bytes && used < heap && v == 0,
		"heap %llu bytes (-m %u), %llu in use, fixed", (unsigned long long)heap, mem_mb,
		(unsigned long long)used);
	if (!tap_ok(ops_tel(&env, "/mempool/info," POOL, json, sizeof(json)) == 0 &&
			ops_json_u64(json, "size", &size) == 0 &&
			ops_json_u64(json, "header_size", &hdr) == 0 &&
			ops_json_u64(json, "elt_size", &elt) == 0 &&
			ops_json_u64(json, "trailer_size", &trl) == 0, "/mempool/info," POOL))
		return;
	tap_ok(objs == size && size == NB_VMS * 8192 - 1 && obj_bytes == hdr + elt + trl,
		"%llu mbufs of %llu bytes, as the mempool has them", (unsigned long long)objs,
		(unsigned long long)obj_bytes);
	/* MP_<pool> (header), MP_<pool>_<n> (object chunks), RG_MP_<pool> (its ring). */
	zones = memzones_of("MP_" POOL, &nb_pool);
	ring = memzones_of("RG_MP_" POOL, &nb_ring);
	tap_ok(nb_pool >= 2 && nb_ring == 1 && bytes == zones + ring,
		"pool bytes %llu = its %u memzones %llu + ring %llu", (unsigned long long)bytes,
		nb_pool, (unsigned long long)zones, (unsigned long long)ring);
	tap_ok(bytes >= objs * obj_bytes && bytes - objs * obj_bytes < (2u << 20),
		"objects take %llu of them: no page per mbuf",
		(unsigned long long)(objs * obj_bytes));
	snprintf(expect, sizeof(expect), POOL "          NUMA 0: %llu bytes, %llu mbufs of %llu "
		"bytes", (unsigned long long)bytes, (unsigned long long)objs,
		(unsigned long long)obj_bytes);
	tap_ok(ops_cmd(&env, "show config", expect, MS, NULL), "show config: %s", expect);
}

static void
test_traffic(void)
{
	struct dp_stream gs, hr;
	struct vfe_guest_conn *c;
	int lfd, hfd = -1;

	if (dp_attach(e, NULL, NULL) < 0)
		return;
	lfd = dp_listen(e, G2H_PORT, SOCK_STREAM);
	c = dp_guest_connect(e, G2H_PORT, VIRTIO_VSOCK_TYPE_STREAM, MS);
	if (lfd >= 0)
		hfd = dp_accept(e, lfd, MS);
	if (tap_ok(c != NULL && c->state == VFE_GC_ESTABLISHED && hfd >= 0,
			"guest connected to a host listener")) {
		dp_stream_init(&gs, 7, G2H_BYTES);
		dp_stream_init(&hr, 7, G2H_BYTES);
		tap_ok(DP_WAIT(e, (dp_guest_send(e, c, &gs), dp_host_recv(hfd, &hr),
				hr.done == G2H_BYTES), MS) && dp_stream_ok(&hr),
			"%u bytes guest -> host, checked", G2H_BYTES);
	}
	if (hfd >= 0)
		close(hfd);
	if (lfd >= 0)
		close(lfd);
}

int
main(void)
{
	unsigned int need = 0, have = 0, fit = 0;
	bool found;
	int status;

	/* 3 x 8192 mbufs of 2368 bytes are 55 MiB: with the rest, more than 64 MiB. */
	status = start(0, false) == 0 ? app_proc_wait(&e->app, 20000) : -1;
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 1,
		"3 VMs in the default 64 MiB: exit 1 (status %#x)", status);
	found = refusal(&need, &have, &fit);
	tap_ok(found && have == 64 && need > have && fit >= need &&
		fit % 64 == 0, "the log names the need (%u MiB of %u) and the fix (-m %u)", need,
		have, fit);
	tap_ok(app_proc_log_contains(&e->app, "or use hugepages") &&
		!app_proc_log_contains(&e->app, "vhost-user socket"),
		"it suggests hugepages, and refused before any vhost-user socket");
	tap_ok(app_proc_sockets_left(&e->app) == 0, "no socket file left");
	if (tap_failed)
		app_proc_dump_log(&e->app);
	app_proc_fini(&e->app);
	app_proc_remove_eal_files(env.prefix);
	if (!fit)
		fit = 128;

	if (!tap_ok(start(fit, true) == 0, "with -m %u the 3 VMs start", fit))
		return tap_done();
	ops_pin_off_worker();
	test_traffic();
	test_pool_figures(fit);
	ops_finish(&env);
	return tap_done();
}
