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
#include <stddef.h>
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

/*
 * A struct's fields as telemetry prints them, in the reply's order. The kind follows from
 * the field's C type, so that a field whose type changes cannot be read with the old one.
 * librte_telemetry 22.11 takes u64, int and strings only: bools and unsigned fields go as
 * u64, signed ones as int (open_fds, the one int64_t, is a count of descriptors).
 */
#define TEL_KINDS(X) \
	X(TEL_BOOL, bool, u64) X(TEL_U16, uint16_t, u64) X(TEL_U32, uint32_t, u64) \
	X(TEL_U64, uint64_t, u64) X(TEL_INT, int, int) X(TEL_I64, int64_t, int)

#define KIND_ENUM(kind, type, call) kind,
enum tel_kind { TEL_KINDS(KIND_ENUM) TEL_STR };
#undef KIND_ENUM

struct tel_field {
	const char *name;
	size_t offset;
	enum tel_kind kind;
};

#define KIND_OF(kind, type, call) type: kind,
#define TEL_KIND(v) _Generic((v), TEL_KINDS(KIND_OF) char *: TEL_STR)
#define TEL_NAMED(type, name, member) \
	{ name, offsetof(type, member), TEL_KIND(((type *)NULL)->member) },
#define TEL_FIELD(type, member) TEL_NAMED(type, #member, member)

#define CONFIG(m) TEL_FIELD(struct vsock_pmd_config, m)
static const struct tel_field config_fields[] = {
	CONFIG(main_lcore) CONFIG(nb_lcores) CONFIG(nb_vms) CONFIG(burst) CONFIG(paused)
	CONFIG(record_burst_stats) CONFIG(record_core_cycles) CONFIG(tsc_hz)
};

#define RES(m) TEL_FIELD(struct vsock_pmd_resources, m)
static const struct tel_field resources_fields[] = {
	RES(mbufs_total) RES(mbufs_in_use) RES(conns) RES(open_fds) RES(rss_bytes)
};

#define MEM(m) TEL_FIELD(struct vsock_pmd_memory, m)
static const struct tel_field memory_fields[] = {
	MEM(heap_bytes) MEM(heap_used_bytes) MEM(can_grow) MEM(pools_bytes)
};

/* Mempools and memzones apart: a memzone has no mbufs. */
#define POOL(m) TEL_FIELD(struct vsock_pmd_mem_pool, m)
static const struct tel_field pool_fields[] = {
	POOL(socket) POOL(bytes) POOL(objects) POOL(obj_bytes) POOL(in_use)
};
static const struct tel_field memzone_fields[] = { POOL(socket) POOL(bytes) POOL(memzones) };

/* socket_mode and socket_gid follow, as configured rather than as stored. */
#define VM_AS(name, m) TEL_NAMED(struct vsock_pmd_vm_info, name, m)
#define VM(m) VM_AS(#m, m)
static const struct tel_field vm_fields[] = {
	VM(cid) VM(running) VM(lcore) VM(placed_lcore) VM(features) VM(conns) VM(pipes)
	VM_AS("rx_ring_size", ring_size[VSOCK_PMD_Q_RX])
	VM_AS("tx_ring_size", ring_size[VSOCK_PMD_Q_TX])
	VM_AS("rx_ring_broken", ring_broken[VSOCK_PMD_Q_RX])
	VM_AS("tx_ring_broken", ring_broken[VSOCK_PMD_Q_TX])
	VM_AS("socket", socket_path) VM_AS("uds", uds_path)
	VM(tx_buffer_size) VM(queue_size) VM(max_conns) VM(max_pipes) VM(line_timeout_ms)
	VM(connect_timeout_ms)
};

#define VM_STAT(m) TEL_FIELD(struct vsock_pmd_vm_stats, m)
static const struct tel_field vm_stats_fields[] = { VM_STAT(cid) VSOCK_VM_COUNTERS(VM_STAT) };

#define QUEUE(m) TEL_FIELD(struct vsock_pmd_queue_stats, m)
static const struct tel_field queue_fields[] = { VSOCK_QUEUE_COUNTERS(QUEUE) };

#define LCORE(m) TEL_FIELD(struct vsock_pmd_lcore_stats, m)
static const struct tel_field lcore_fields[] = {
	LCORE(lcore_id) LCORE(nb_vms) VSOCK_LCORE_COUNTERS(LCORE)
};

#define CONN(m) TEL_FIELD(struct vsock_pmd_conn_info, m)
static const struct tel_field conn_fields[] = {
	CONN(guest_port) CONN(host_port) CONN(type) CONN(state) CONN(from_guest_bytes)
	CONN(to_guest_bytes) CONN(guest_credit) CONN(our_buf_alloc) CONN(host_credit)
	CONN(peer_buf_alloc) CONN(queued_to_host) CONN(queued_to_guest)
};

/* The @p n @p fields of the struct at @p s, into dict @p d. */
static void add_fields(struct rte_tel_data *d, const void *s, const struct tel_field *fields,
		       unsigned int n)
{
	const struct tel_field *f;

	for (f = fields; f < fields + n; f++) {
		const void *v = (const char *)s + f->offset;

		switch (f->kind) {
#define KIND_ADD(kind, type, call) \
		case kind: \
			rte_tel_data_add_dict_##call(d, f->name, *(const type *)v); \
			break;
		TEL_KINDS(KIND_ADD)
#undef KIND_ADD
		case TEL_STR:
			rte_tel_data_add_dict_string(d, f->name, v);
			break;
		}
	}
}

#define ADD_FIELDS(d, s, fields) add_fields(d, s, fields, RTE_DIM(fields))
#define START_DICT_OF(d, s, fields) \
	do { \
		rte_tel_data_start_dict(d); \
		ADD_FIELDS(d, s, fields); \
	} while (0)

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
	ADD_FIELDS(d, &c, config_fields);
	return 0;
}

static int tel_resources(const char *cmd __rte_unused, const char *params __rte_unused,
			 struct rte_tel_data *d)
{
	struct vsock_pmd_resources r;
	int rc = vsock_pmd_resources_get(&r);

	if (rc == 0)
		START_DICT_OF(d, &r, resources_fields);
	return rc;
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
	START_DICT_OF(d, m, memory_fields);
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
		if (p->objects)
			ADD_FIELDS(e, p, pool_fields);
		else
			ADD_FIELDS(e, p, memzone_fields);
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
		ADD_FIELDS(v, &vi, vm_fields);
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
	ADD_FIELDS(q, qs, queue_fields);
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

	START_DICT_OF(d, s, vm_stats_fields);
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
		ADD_FIELDS(l, &ls, lcore_fields);
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
		ADD_FIELDS(c, ci, conn_fields);
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
