/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The statistics as JSON through librte_telemetry, for dpdk-telemetry.py and monitoring:
 *   /vsock/config         settings in force, and the library's version
 *   /vsock/resources      mbufs in use, open fds, RSS, connections (leak checks)
 *   /vsock/memory         DPDK heap and the bytes of every pool and memzone of the engine
 *   /vsock/vms[,<start>]  VMs, TEL_VMS_PAGE at a time from the <start>th (default 0): state,
 *                         lcore, connections; "next" is where the following page starts, when
 *                         there is one
 *   /vsock/stats,<cid>    one VM's counters (what "show vm stats" prints)
 *   /vsock/lcores         every worker lcore's counters
 *   /vsock/conns,<cid>[,<start>]  one VM's connections, TEL_CONNS_PAGE at a time from the
 *                         <start>th (default 0); "next" is where the following page starts,
 *                         "count" when this one is the last
 * Each handler only calls the public API, so telemetry and the console always agree.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_telemetry.h>

#include <vsock_pmd.h>
#include <vsock_pmd_version.h>

#include "api.h"

/*
 * What fits a reply: librte_telemetry's are at most 16 KiB, and it leaves out, without a
 * word, whatever does not fit. A connection is ~330 bytes of JSON; a VM ~390, ~570 with
 * both socket paths of the longest length (test_telemetry checks a page of those).
 */
#define TEL_CONNS_PAGE 32
#define TEL_VMS_PAGE 24

static int parse_cid(const char *params, uint64_t *cid)
{
	char *end;

	if (!params || *params == '\0' || *params == '-')
		return -EINVAL;
	*cid = strtoull(params, &end, 0);
	return *end == '\0' ? 0 : -EINVAL;
}

/* A nested dict @p name in @p d, or NULL when out of memory. */
static struct rte_tel_data *add_dict(struct rte_tel_data *d, const char *name)
{
	struct rte_tel_data *c = rte_tel_data_alloc();

	if (!c)
		return NULL;
	rte_tel_data_start_dict(c);
	if (rte_tel_data_add_dict_container(d, name, c, 0) < 0) {
		rte_tel_data_free(c);
		return NULL;
	}
	return c;
}

static int tel_config(const char *cmd __rte_unused, const char *params __rte_unused,
		      struct rte_tel_data *d)
{
	struct vsock_pmd_config c;
	int rc = vsock_pmd_config_get(&c);

	if (rc < 0)
		return rc;
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "version", vsock_pmd_version());
	rte_tel_data_add_dict_u64(d, "main_lcore", c.main_lcore);
	rte_tel_data_add_dict_u64(d, "nb_lcores", c.nb_lcores);
	rte_tel_data_add_dict_u64(d, "nb_vms", c.nb_vms);
	rte_tel_data_add_dict_u64(d, "burst", c.burst);
	rte_tel_data_add_dict_u64(d, "paused", c.paused);
	rte_tel_data_add_dict_u64(d, "record_burst_stats", c.record_burst_stats);
	rte_tel_data_add_dict_u64(d, "record_core_cycles", c.record_core_cycles);
	rte_tel_data_add_dict_u64(d, "tsc_hz", c.tsc_hz);
	return 0;
}

static int tel_resources(const char *cmd __rte_unused, const char *params __rte_unused,
			 struct rte_tel_data *d)
{
	struct vsock_pmd_resources r;
	int rc = vsock_pmd_resources_get(&r);

	if (rc < 0)
		return rc;
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "mbufs_total", r.mbufs_total);
	rte_tel_data_add_dict_u64(d, "mbufs_in_use", r.mbufs_in_use);
	rte_tel_data_add_dict_u64(d, "conns", r.conns);
	rte_tel_data_add_dict_int(d, "open_fds", (int)r.open_fds);
	rte_tel_data_add_dict_u64(d, "rss_bytes", r.rss_bytes);
	return 0;
}

static int tel_memory(const char *cmd __rte_unused, const char *params __rte_unused,
		      struct rte_tel_data *d)
{
	struct vsock_pmd_memory *m = malloc(sizeof(*m));
	struct rte_tel_data *pools, *zones;
	unsigned int i;
	int rc = -ENOMEM;

	if (!m)
		return -ENOMEM;
	rc = vsock_pmd_memory_get(m);
	if (rc < 0)
		goto out;
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "heap_bytes", m->heap_bytes);
	rte_tel_data_add_dict_u64(d, "heap_used_bytes", m->heap_used_bytes);
	rte_tel_data_add_dict_u64(d, "can_grow", m->can_grow);
	rte_tel_data_add_dict_u64(d, "pools_bytes", m->pools_bytes);
	/* Mempools and memzones apart: a memzone has no mbufs. */
	pools = add_dict(d, "pools");
	zones = add_dict(d, "memzones");
	rc = -ENOMEM;
	if (!pools || !zones)
		goto out;
	for (i = 0; i < m->nb_pools; i++) {
		const struct vsock_pmd_mem_pool *p = &m->pools[i];
		struct rte_tel_data *e;

		e = add_dict(p->objects ? pools : zones, p->name);
		if (!e)
			goto out;
		rte_tel_data_add_dict_int(e, "socket", p->socket);
		rte_tel_data_add_dict_u64(e, "bytes", p->bytes);
		if (!p->objects) {
			rte_tel_data_add_dict_u64(e, "memzones", p->memzones);
			continue;
		}
		rte_tel_data_add_dict_u64(e, "objects", p->objects);
		rte_tel_data_add_dict_u64(e, "obj_bytes", p->obj_bytes);
		rte_tel_data_add_dict_u64(e, "in_use", p->in_use);
	}
	rc = 0;
out:
	free(m);
	return rc;
}

static int tel_vms(const char *cmd __rte_unused, const char *params, struct rte_tel_data *d)
{
	struct vsock_pmd_config c;
	unsigned long start = 0;
	unsigned int i, end;
	char *stop;
	int rc;

	if (params && *params != '\0') {
		if (*params < '0' || *params > '9')
			return -EINVAL;
		start = strtoul(params, &stop, 10);
		if (*stop != '\0' || start > UINT32_MAX)
			return -EINVAL;
	}
	rc = vsock_pmd_config_get(&c);
	if (rc < 0)
		return rc;
	end = start < c.nb_vms ? RTE_MIN(c.nb_vms, (unsigned int)start + TEL_VMS_PAGE) : c.nb_vms;
	rte_tel_data_start_dict(d);
	/* Only when there is more: a reply of every VM keeps the shape it always had. */
	if (end < c.nb_vms)
		rte_tel_data_add_dict_u64(d, "next", end);
	for (i = (unsigned int)start; i < end; i++) {
		struct vsock_pmd_vm_info vi;
		struct rte_tel_data *v;
		char key[24];

		if (vsock_pmd_vm_info_get(i, &vi) < 0)
			continue;
		snprintf(key, sizeof(key), "%" PRIu64, vi.cid);
		v = add_dict(d, key);
		if (!v)
			return -ENOMEM;
		rte_tel_data_add_dict_u64(v, "cid", vi.cid);
		rte_tel_data_add_dict_u64(v, "running", vi.running);
		rte_tel_data_add_dict_int(v, "lcore", vi.lcore);
		rte_tel_data_add_dict_u64(v, "placed_lcore", vi.placed_lcore);
		rte_tel_data_add_dict_u64(v, "features", vi.features);
		rte_tel_data_add_dict_u64(v, "conns", vi.conns);
		rte_tel_data_add_dict_u64(v, "pipes", vi.pipes);
		rte_tel_data_add_dict_u64(v, "rx_ring_size", vi.ring_size[VSOCK_PMD_Q_RX]);
		rte_tel_data_add_dict_u64(v, "tx_ring_size", vi.ring_size[VSOCK_PMD_Q_TX]);
		rte_tel_data_add_dict_u64(v, "rx_ring_broken", vi.ring_broken[VSOCK_PMD_Q_RX]);
		rte_tel_data_add_dict_u64(v, "tx_ring_broken", vi.ring_broken[VSOCK_PMD_Q_TX]);
		rte_tel_data_add_dict_string(v, "socket", vi.socket_path);
		rte_tel_data_add_dict_string(v, "uds", vi.uds_path);
		rte_tel_data_add_dict_u64(v, "tx_buffer_size", vi.tx_buffer_size);
		rte_tel_data_add_dict_u64(v, "queue_size", vi.queue_size);
		rte_tel_data_add_dict_u64(v, "max_conns", vi.max_conns);
		rte_tel_data_add_dict_u64(v, "max_pipes", vi.max_pipes);
		rte_tel_data_add_dict_u64(v, "line_timeout_ms", vi.line_timeout_ms);
		rte_tel_data_add_dict_u64(v, "connect_timeout_ms", vi.connect_timeout_ms);
		/* As configured: "" and -1 when the umask and the process's group decide. */
		key[0] = '\0';
		if (vi.socket_mode)
			snprintf(key, sizeof(key), "%04o", vi.socket_mode);
		rte_tel_data_add_dict_string(v, "socket_mode", key);
		rte_tel_data_add_dict_int(v, "socket_gid",
					  vi.socket_group_set ? (int)vi.socket_gid : -1);
	}
	return 0;
}

static int add_queue(struct rte_tel_data *d, const char *name,
		     const struct vsock_pmd_queue_stats *qs)
{
	struct rte_tel_data *q = add_dict(d, name), *h;
	unsigned int b;

	if (!q)
		return -ENOMEM;
#define ADD_Q(f) rte_tel_data_add_dict_u64(q, #f, qs->f);
	VSOCK_QUEUE_COUNTERS(ADD_Q)
#undef ADD_Q
	/* Only the sizes seen: 513 zeros would not fit the reply. */
	h = add_dict(q, "burst_hist");
	if (!h)
		return -ENOMEM;
	for (b = 0; b <= VSOCK_PMD_BURST_MAX; b++) {
		char key[8];

		if (qs->burst_hist[b] == 0)
			continue;
		snprintf(key, sizeof(key), "%u", b);
		rte_tel_data_add_dict_u64(h, key, qs->burst_hist[b]);
	}
	return 0;
}

static int stats_reply(const struct vsock_pmd_vm_stats *s, struct rte_tel_data *d)
{
	struct rte_tel_data *e;
	unsigned int i;

	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "cid", s->cid);
#define ADD_VM(f) rte_tel_data_add_dict_u64(d, #f, s->f);
	VSOCK_VM_COUNTERS(ADD_VM)
#undef ADD_VM
	if (add_queue(d, "rx", &s->q[VSOCK_PMD_Q_RX]) < 0 ||
	    add_queue(d, "tx", &s->q[VSOCK_PMD_Q_TX]) < 0)
		return -ENOMEM;
	e = add_dict(d, "errors");
	if (!e)
		return -ENOMEM;
	for (i = 0; i < s->nb_errors; i++)
		rte_tel_data_add_dict_u64(e, s->errors[i].name, s->errors[i].count);
	return 0;
}

static int tel_stats(const char *cmd __rte_unused, const char *params, struct rte_tel_data *d)
{
	/* Each telemetry client has its own thread: no shared buffer. */
	struct vsock_pmd_vm_stats *st = malloc(sizeof(*st));
	uint64_t cid;
	int rc = -EINVAL;

	if (!st)
		return -ENOMEM;
	if (parse_cid(params, &cid) == 0)
		rc = vsock_pmd_vm_stats_get(cid, st);
	if (rc == 0)
		rc = stats_reply(st, d);
	free(st);
	return rc;
}

static int tel_lcores(const char *cmd __rte_unused, const char *params __rte_unused,
		      struct rte_tel_data *d)
{
	struct vsock_pmd_config c;
	unsigned int i;
	int rc = vsock_pmd_config_get(&c);

	if (rc < 0)
		return rc;
	rte_tel_data_start_dict(d);
	for (i = 0; i < c.nb_lcores; i++) {
		struct vsock_pmd_lcore_stats ls;
		struct rte_tel_data *l;
		char key[16];

		if (vsock_pmd_lcore_stats_get(i, &ls) < 0)
			continue;
		snprintf(key, sizeof(key), "%u", ls.lcore_id);
		l = add_dict(d, key);
		if (!l)
			return -ENOMEM;
		rte_tel_data_add_dict_u64(l, "lcore_id", ls.lcore_id);
		rte_tel_data_add_dict_u64(l, "nb_vms", ls.nb_vms);
#define ADD_L(f) rte_tel_data_add_dict_u64(l, #f, ls.f);
		VSOCK_LCORE_COUNTERS(ADD_L)
#undef ADD_L
	}
	return 0;
}

static int conns_reply(uint64_t cid, const struct vsock_pmd_conn_info *conns, unsigned int n,
		       unsigned int start, struct rte_tel_data *d)
{
	unsigned int i, end = start < n ? RTE_MIN(n, start + TEL_CONNS_PAGE) : n;
	struct rte_tel_data *all;

	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "cid", cid);
	rte_tel_data_add_dict_u64(d, "count", n);
	rte_tel_data_add_dict_u64(d, "start", start);
	rte_tel_data_add_dict_u64(d, "next", end);
	/*
	 * Keyed "<guest port>_<host port>" (names allow no colon), "line_<n>" before the ports
	 * are known; a dict prints even empty.
	 */
	all = add_dict(d, "conns");
	if (!all)
		return -ENOMEM;
	for (i = start; i < end; i++) {
		const struct vsock_pmd_conn_info *ci = &conns[i];
		struct rte_tel_data *c;
		char key[24];

		/* A host client still writing its CONNECT line has no ports yet. */
		if (ci->guest_port == 0 && ci->host_port == 0)
			snprintf(key, sizeof(key), "line_%u", i);
		else
			snprintf(key, sizeof(key), "%u_%u", ci->guest_port, ci->host_port);
		c = add_dict(all, key);
		if (!c)
			return -ENOMEM;
		rte_tel_data_add_dict_u64(c, "guest_port", ci->guest_port);
		rte_tel_data_add_dict_u64(c, "host_port", ci->host_port);
		rte_tel_data_add_dict_string(c, "type", ci->type);
		rte_tel_data_add_dict_string(c, "state", ci->state);
		rte_tel_data_add_dict_u64(c, "from_guest_bytes", ci->from_guest_bytes);
		rte_tel_data_add_dict_u64(c, "to_guest_bytes", ci->to_guest_bytes);
		rte_tel_data_add_dict_u64(c, "guest_credit", ci->guest_credit);
		rte_tel_data_add_dict_u64(c, "our_buf_alloc", ci->our_buf_alloc);
		rte_tel_data_add_dict_u64(c, "host_credit", ci->host_credit);
		rte_tel_data_add_dict_u64(c, "peer_buf_alloc", ci->peer_buf_alloc);
		rte_tel_data_add_dict_u64(c, "queued_to_host", ci->queued_to_host);
		rte_tel_data_add_dict_u64(c, "queued_to_guest", ci->queued_to_guest);
	}
	return 0;
}

static int tel_conns(const char *cmd __rte_unused, const char *params, struct rte_tel_data *d)
{
	struct vsock_pmd_conn_info *conns = NULL;
	char cid_s[24], *comma, *end;
	unsigned long start = 0;
	uint64_t cid;
	int n;

	if (!params || strlen(params) >= sizeof(cid_s))
		return -EINVAL;
	strcpy(cid_s, params);
	comma = strchr(cid_s, ',');
	if (comma) {
		*comma = '\0';
		if (comma[1] < '0' || comma[1] > '9')
			return -EINVAL;
		start = strtoul(comma + 1, &end, 10);
		if (*end != '\0' || start > UINT32_MAX)
			return -EINVAL;
	}
	if (parse_cid(cid_s, &cid) < 0)
		return -EINVAL;
	/* One snapshot for the page. */
	n = vsock_pmd_conns_get_all(cid, &conns);
	if (n >= 0)
		n = conns_reply(cid, conns, (unsigned int)n, (unsigned int)start, d);
	free(conns);
	return n;
}

void vsock_telemetry_register(void)
{
	static bool done;

	if (done)
		return;
	done = true;
	rte_telemetry_register_cmd("/vsock/config", tel_config,
				   "dpdk-vsock settings in force. No parameters");
	rte_telemetry_register_cmd("/vsock/resources", tel_resources,
				   "Mbufs in use, open fds, RSS, connections. No parameters");
	rte_telemetry_register_cmd("/vsock/memory", tel_memory,
				   "DPDK heap, bytes of every pool and memzone. No parameters");
	rte_telemetry_register_cmd("/vsock/vms", tel_vms,
				   "VMs, " RTE_STR(TEL_VMS_PAGE) " a page: state, lcore, connections. "
				   "Parameters: [int start]");
	rte_telemetry_register_cmd("/vsock/stats", tel_stats,
				   "Counters of one VM. Parameters: int cid");
	rte_telemetry_register_cmd("/vsock/lcores", tel_lcores,
				   "Counters of every worker lcore. No parameters");
	rte_telemetry_register_cmd("/vsock/conns", tel_conns,
				   "Connections of one VM, " RTE_STR(TEL_CONNS_PAGE) " a page. "
				   "Parameters: int cid[,int start]");
}
