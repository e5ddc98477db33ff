/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control API (vsock_pmd.h): statistics, resources, connections and live settings for
 * operators.
 *
 * The counters belong to the lcores that write them: a device's to the worker polling it, a
 * worker's to itself. This side only reads them (aligned 64-bit loads, never torn on the
 * platforms DPDK runs on) and never writes them: "clear" records a baseline that is
 * subtracted on every read, and counters a re-attached ring starts again from zero are
 * folded into the device's history first (device.c). State that is not a counter (the
 * connection list) is read on the worker, between two polls, through worker_run().
 *
 * Lock order: api_lock, then the device lock, then a worker's control lock.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_memzone.h>
#include <rte_ring.h>

#include <vsock_pmd.h>

#include "api.h"
#include "conn.h"
#include "device.h"
#include "ep_pipe.h"
#include "ep_sibling.h"
#include "log.h"
#include "virtq_common.h"
#include "vsock_pkt.h"
#include "worker.h"

_Static_assert((VSOCK_PKT_ERR_MAX - 1) + CONN_ERR_MAX + (VIRTQ_ERR_MAX - 1) <= VSOCK_PMD_ERR_MAX,
	       "VSOCK_PMD_ERR_MAX too small for every error kind");
_Static_assert(VSOCK_PMD_NB_QUEUES == VSOCK_NR_VQ && VSOCK_PMD_Q_RX == VSOCK_VQ_RX &&
	       VSOCK_PMD_Q_TX == VSOCK_VQ_TX, "public queue numbers are virtio-vsock's");

static pthread_mutex_t api_lock = PTHREAD_MUTEX_INITIALIZER;
static bool live;

/* The settings an operator changes while the workers run. */
enum live_setting { SET_BURST, SET_RECORD_BURSTS, SET_RECORD_CYCLES, SET_PAUSED, SET_MAX };

/* Those in force, under api_lock. */
static unsigned int setting[SET_MAX];

/* What "clear" saw, by device and by worker index, under api_lock. */
static struct vsock_pmd_vm_stats vm_base[VSOCK_PMD_MAX_VMS];
static struct vsock_pmd_lcore_stats lcore_base[RTE_MAX_LCORE];

/* A counter another lcore is writing. */
static inline uint64_t rd(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* ---- reading ---- */

static void add_err(struct vsock_pmd_vm_stats *st, const char *prefix, const char *name,
		    uint64_t count)
{
	struct vsock_pmd_err_count *e = &st->errors[st->nb_errors++];

	snprintf(e->name, sizeof(e->name), "%s_%s", prefix, name);
	e->count = count;
	st->errors_total += count;
}

/* Counters a VM's stats show under their conn_stats and dp_stats names; two are renamed. */
#define CONN_STATS_AS_VM(X) \
	X(from_guest_pkts) X(from_guest_bytes) X(to_guest_pkts) X(to_guest_bytes) \
	X(host_read_bytes) X(host_written_bytes) X(conns_opened) X(conns_closed) \
	X(conns_reset) X(conns_refused) X(credit_stalls) X(rst_dropped)
#define DP_STATS_AS_VM(X) X(tx_backpressure) X(rx_ring_full) X(short_packets) X(small_rx_buffers)

/* Totals since the device was created. Device lock held (kick counters are drained). */
static void vsock_dev_stats_raw(struct vsock_dev *dev, struct vsock_pmd_vm_stats *st)
{
	const struct conn_stats *cs = conn_table_stats(dev->dp.conns);
	const struct dp_stats *ds = &dev->dp.stats;
	uint64_t ring_err[VIRTQ_ERR_MAX] = { 0 };
	uint32_t pipes;
	uint16_t q;
	int e;

	memset(st, 0, sizeof(*st));
	st->cid = dev->conf.cid;
#define FROM_CONNS(f) st->f = rd(&cs->f);
	CONN_STATS_AS_VM(FROM_CONNS)
#undef FROM_CONNS
	st->conns_table_full = rd(&cs->table_full);
	st->mempool_exhausted = rd(&cs->pool_empty);
#define FROM_DP(f) st->f = rd(&ds->f);
	DP_STATS_AS_VM(FROM_DP)
#undef FROM_DP
	ep_pipe_share_get((unsigned int)ep_sibling_index(dev->conf.cid), &pipes,
			  &st->pipes_refused);

	vsock_dev_kicks_drain(dev);
	for (q = 0; q < VSOCK_NR_VQ; q++) {
		const struct virtq_stats *cur = &dev->dp.vq[q].stats, *old = &dev->history.vq[q];
		struct vsock_pmd_queue_stats *qs = &st->q[q];
		unsigned int b;

		qs->packets = old->completed + rd(&cur->completed);
		qs->used_idx_flushes = old->used_idx_stores + rd(&cur->used_idx_stores);
		qs->interrupts = rd(&ds->guest_notifications[q]);
		qs->bursts = rd(&ds->bursts[q]);
		qs->budget_cuts = rd(&ds->budget_cuts[q]);
		qs->kicks = dev->history.kicks[q] + rd(&ds->kicks[q]);
		for (e = 1; e < VIRTQ_ERR_MAX; e++) {
			uint64_t n = old->errors[e] + rd(&cur->errors[e]);

			qs->ring_errors += n;
			ring_err[e] += n;
		}
		for (b = 0; b <= VSOCK_PMD_BURST_MAX; b++)
			qs->burst_hist[b] = rd(&ds->burst_hist[q][b]);
	}
	for (e = 1; e < VSOCK_PKT_ERR_MAX; e++)
		add_err(st, "hdr", vsock_pkt_err_str(e), rd(&cs->pkt_err[e]));
	for (e = 0; e < CONN_ERR_MAX; e++)
		add_err(st, "conn", conn_err_str(e), rd(&cs->proto_err[e]));
	for (e = 1; e < VIRTQ_ERR_MAX; e++)
		add_err(st, "ring", virtq_err_str(e), ring_err[e]);
}

static void vm_sub(struct vsock_pmd_vm_stats *st, const struct vsock_pmd_vm_stats *base)
{
	unsigned int q, i;

#define SUB(f) st->f -= base->f;
	VSOCK_VM_COUNTERS(SUB)
	for (q = 0; q < VSOCK_NR_VQ; q++) {
		struct vsock_pmd_queue_stats *qs = &st->q[q];
		const struct vsock_pmd_queue_stats *qb = &base->q[q];

#define QSUB(f) qs->f -= qb->f;
		VSOCK_QUEUE_COUNTERS(QSUB)
#undef QSUB
		for (i = 0; i <= VSOCK_PMD_BURST_MAX; i++)
			qs->burst_hist[i] -= qb->burst_hist[i];
	}
	/* The same kinds in the same order every time; a zero baseline has none yet. */
	for (i = 0; i < base->nb_errors; i++)
		st->errors[i].count -= base->errors[i].count;
}

static void lcore_raw(unsigned int idx, struct vsock_pmd_lcore_stats *st)
{
	struct worker *w = worker_at(idx);
	struct worker_stats ws;

	worker_stats_read(w, &ws, &st->nb_vms);
	st->lcore_id = worker_lcore(w);
#define COPY(f) st->f = ws.f;
	VSOCK_LCORE_COUNTERS(COPY)
#undef COPY
}

/* ---- the public API ---- */

/*
 * Every call runs its @p body through here: only while the API is open, and under
 * api_lock, so that vsock_api_close() waits for the call in progress and the baselines
 * and settings have one writer at a time. @p which is what the call is about (a VM's cid,
 * its index or a worker's, a setting), @p arg what it reads or writes.
 */
static int api_call(int (*body)(uint64_t which, void *arg), uint64_t which, void *arg)
{
	int rc = -ENODEV;

	pthread_mutex_lock(&api_lock);
	if (live)
		rc = body(which, arg);
	pthread_mutex_unlock(&api_lock);
	return rc;
}

/* Index of VM @p cid in the device table, or -1. Device lock held. */
static int dev_index(uint64_t cid)
{
	unsigned int i;

	for (i = 0; i < vsock_devs_count(); i++) {
		if (vsock_dev_at(i)->conf.cid == cid)
			return (int)i;
	}
	return -1;
}

void vsock_api_open(unsigned int burst)
{
	pthread_mutex_lock(&api_lock);
	memset(vm_base, 0, sizeof(vm_base));
	memset(lcore_base, 0, sizeof(lcore_base));
	memset(setting, 0, sizeof(setting));
	setting[SET_BURST] = burst;
	live = true;
	pthread_mutex_unlock(&api_lock);
}

void vsock_api_close(void)
{
	pthread_mutex_lock(&api_lock);
	live = false;
	pthread_mutex_unlock(&api_lock);
}

static int config_read(uint64_t which __rte_unused, void *arg)
{
	struct vsock_pmd_config *conf = arg;

	vsock_devs_lock();
	conf->nb_vms = vsock_devs_count();
	vsock_devs_unlock();
	conf->main_lcore = rte_get_main_lcore();
	conf->nb_lcores = workers_count();
	conf->burst = setting[SET_BURST];
	conf->paused = setting[SET_PAUSED];
	conf->record_burst_stats = setting[SET_RECORD_BURSTS];
	conf->record_core_cycles = setting[SET_RECORD_CYCLES];
	conf->tsc_hz = rte_get_tsc_hz();
	return 0;
}

int vsock_pmd_config_get(struct vsock_pmd_config *conf)
{
	return api_call(config_read, 0, conf);
}

/* Entries of /proc/self/fd, the descriptor that reads it excluded; -1 if unreadable. */
static int64_t open_fds(void)
{
	struct dirent *d;
	int64_t n = 0;
	DIR *dir = opendir("/proc/self/fd");

	if (!dir)
		return -1;
	while ((d = readdir(dir)) != NULL) {
		if (d->d_name[0] != '.')
			n++;
	}
	closedir(dir);
	return n - 1;
}

/* Resident set size from /proc/self/statm (in pages); 0 if unreadable. */
static uint64_t rss_bytes(void)
{
	unsigned long size, resident;
	FILE *f = fopen("/proc/self/statm", "re");
	int n;

	if (!f)
		return 0;
	n = fscanf(f, "%lu %lu", &size, &resident);
	fclose(f);
	return n == 2 ? (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
}

static int resources_read(uint64_t which __rte_unused, void *arg)
{
	struct vsock_pmd_resources *res = arg;
	unsigned int i;

	memset(res, 0, sizeof(*res));
	vsock_devs_lock();
	vsock_devs_mbufs(&res->mbufs_total, &res->mbufs_in_use);
	for (i = 0; i < vsock_devs_count(); i++)
		res->conns += conn_count(vsock_dev_at(i)->dp.conns);
	vsock_devs_unlock();
	res->open_fds = open_fds();
	res->rss_bytes = rss_bytes();
	return 0;
}

int vsock_pmd_resources_get(struct vsock_pmd_resources *res)
{
	return api_call(resources_read, 0, res);
}

/* Names of what the engine reserves itself, memzones of its rte_rings ("RG_") included. */
#define ENGINE_MZ_PREFIX "vsock_"

/*
 * The engine's memzones beside its mempools (which vsock_devs_pools() counts whole). Those
 * numbered alike ("RG_vsock_accept_0" ... "_63") add up under one "RG_vsock_accept"
 * (telemetry names allow no wildcard).
 */
static void add_memzone(const struct rte_memzone *mz, void *arg)
{
	struct vsock_pmd_memory *mem = arg;
	const char *name = mz->name;
	struct vsock_pmd_mem_pool *p = NULL;
	char key[sizeof(p->name)];
	size_t len = strlen(mz->name);
	unsigned int i;

	if (strncmp(name, RTE_RING_MZ_PREFIX, strlen(RTE_RING_MZ_PREFIX)) == 0)
		name += strlen(RTE_RING_MZ_PREFIX);
	if (strncmp(name, ENGINE_MZ_PREFIX, strlen(ENGINE_MZ_PREFIX)) != 0)
		return;
	while (len > 0 && mz->name[len - 1] >= '0' && mz->name[len - 1] <= '9')
		len--;
	if (len < strlen(mz->name) && mz->name[len - 1] == '_')
		snprintf(key, sizeof(key), "%.*s", (int)len - 1, mz->name);
	else
		snprintf(key, sizeof(key), "%s", mz->name);
	for (i = 0; i < mem->nb_pools && !p; i++) {
		if (mem->pools[i].objects == 0 && strcmp(mem->pools[i].name, key) == 0)
			p = &mem->pools[i];
	}
	if (!p) {
		if (mem->nb_pools >= VSOCK_PMD_MEM_POOLS_MAX)
			return;
		p = &mem->pools[mem->nb_pools++];
		memset(p, 0, sizeof(*p));
		memcpy(p->name, key, sizeof(p->name));
		p->socket = mz->socket_id;
	}
	p->memzones++;
	p->bytes += mz->len;
	mem->pools_bytes += mz->len;
}

static int memory_read(uint64_t which __rte_unused, void *arg)
{
	struct vsock_pmd_memory *mem = arg;
	unsigned int i;

	memset(mem, 0, sizeof(*mem));
	for (i = 0; i < RTE_MAX_NUMA_NODES; i++) {
		struct rte_malloc_socket_stats st;

		if (rte_malloc_get_socket_stats((int)i, &st) == 0) {
			mem->heap_bytes += st.heap_totalsz_bytes;
			mem->heap_used_bytes += st.heap_allocsz_bytes;
		}
	}
	mem->can_grow = rte_eal_has_hugepages();
	vsock_devs_lock();
	vsock_devs_pools(mem);
	vsock_devs_unlock();
	rte_memzone_walk(add_memzone, mem);
	return 0;
}

int vsock_pmd_memory_get(struct vsock_pmd_memory *mem)
{
	return api_call(memory_read, 0, mem);
}

static int vm_info_read(uint64_t idx, void *arg)
{
	struct vsock_pmd_vm_info *info = arg;
	struct vsock_dev *dev;
	uint64_t refused;
	uint16_t q;
	int rc = 0;

	vsock_devs_lock();
	dev = vsock_dev_at((unsigned int)idx);
	if (!dev) {
		rc = -ENOENT;
		goto out;
	}
	memset(info, 0, sizeof(*info));
	info->cid = dev->conf.cid;
	memcpy(info->socket_path, dev->conf.socket_path, sizeof(info->socket_path));
	memcpy(info->uds_path, dev->conf.uds_path, sizeof(info->uds_path));
	info->running = dev->running;
	info->lcore = dev->running ? (int)worker_lcore(dev->worker) : -1;
	info->placed_lcore = worker_lcore(dev->worker);
	info->pinned = dev->conf.pinned;
	info->numa_socket = dev->numa_node;
	info->nb_groups = dev->conf.nb_groups;
	memcpy(info->groups, dev->conf.groups, sizeof(info->groups));
	info->socket_mode = dev->conf.socket_mode;
	info->socket_group_set = dev->conf.socket_group_set;
	info->socket_gid = dev->conf.socket_gid;
	info->features = dev->running ? dev->features : 0;
	for (q = 0; dev->running && q < VSOCK_NR_VQ; q++) {
		info->ring_size[q] = dev->dp.vq[q].size;
		info->ring_broken[q] = __atomic_load_n(&dev->dp.vq[q].broken, __ATOMIC_RELAXED);
	}
	info->conns = conn_count(dev->dp.conns);
	/* Its share is its place in the configuration, as the device's. */
	ep_pipe_share_get((unsigned int)idx, &info->pipes, &refused);
	info->tx_buffer_size = dev->conf.tx_buffer_size;
	info->queue_size = dev->conf.queue_size;
	info->max_conns = dev->conf.max_conns;
	info->max_pipes = dev->conf.max_pipes;
	info->line_timeout_ms = dev->conf.line_timeout_ms;
	info->connect_timeout_ms = dev->conf.connect_timeout_ms;
out:
	vsock_devs_unlock();
	return rc;
}

int vsock_pmd_vm_info_get(unsigned int idx, struct vsock_pmd_vm_info *info)
{
	return api_call(vm_info_read, idx, info);
}

static int vm_stats_read(uint64_t cid, void *arg)
{
	struct vsock_pmd_vm_stats *st = arg;
	int i;

	vsock_devs_lock();
	i = dev_index(cid);
	if (i >= 0) {
		vsock_dev_stats_raw(vsock_dev_at(i), st);
		vm_sub(st, &vm_base[i]);
	}
	vsock_devs_unlock();
	return i < 0 ? -ENOENT : 0;
}

int vsock_pmd_vm_stats_get(uint64_t cid, struct vsock_pmd_vm_stats *st)
{
	return api_call(vm_stats_read, cid, st);
}

static int lcore_stats_read(uint64_t idx, void *arg)
{
	struct vsock_pmd_lcore_stats *st = arg;

	if (idx >= workers_count())
		return -ENOENT;
	lcore_raw((unsigned int)idx, st);
#define SUB_LCORE(f) st->f -= lcore_base[idx].f;
	VSOCK_LCORE_COUNTERS(SUB_LCORE)
#undef SUB_LCORE
	return 0;
}

int vsock_pmd_lcore_stats_get(unsigned int idx, struct vsock_pmd_lcore_stats *st)
{
	return api_call(lcore_stats_read, idx, st);
}

static int stats_clear(uint64_t cid, void *arg __rte_unused)
{
	unsigned int i;
	int rc = 0, found = 0;

	vsock_devs_lock();
	for (i = 0; i < vsock_devs_count(); i++) {
		struct vsock_dev *dev = vsock_dev_at(i);

		if (cid == VSOCK_PMD_CID_ALL || dev->conf.cid == cid) {
			vsock_dev_stats_raw(dev, &vm_base[i]);
			found++;
		}
	}
	vsock_devs_unlock();
	if (cid == VSOCK_PMD_CID_ALL) {
		for (i = 0; i < workers_count(); i++)
			lcore_raw(i, &lcore_base[i]);
	} else if (!found) {
		rc = -ENOENT;
	}
	return rc;
}

int vsock_pmd_stats_clear(uint64_t cid)
{
	return api_call(stats_clear, cid, NULL);
}

struct snapshot_req {
	const struct conn_table *t;
	struct vsock_pmd_conn_info *out;
	uint32_t max;
	uint32_t count;
};

static void snapshot_conns(void *arg)
{
	struct snapshot_req *r = arg;

	r->count = conn_table_snapshot(r->t, r->out, r->max);
}

static int conns_read(uint64_t cid, void *arg)
{
	struct snapshot_req *r = arg;
	struct vsock_dev *dev;
	int rc = -ENOENT, i;

	vsock_devs_lock();
	i = dev_index(cid);
	if (i >= 0) {
		dev = vsock_dev_at(i);
		r->t = dev->dp.conns;
		/* The table is the worker's while it polls the device; else ours under the lock. */
		if (dev->running && !dev->remapping)
			worker_run(dev->worker, snapshot_conns, r);
		else
			snapshot_conns(r);
		rc = (int)RTE_MIN(r->count, (uint32_t)INT32_MAX);
	}
	vsock_devs_unlock();
	return rc;
}

int vsock_pmd_conns_get(uint64_t cid, struct vsock_pmd_conn_info *out, unsigned int max)
{
	struct snapshot_req r = { .out = out, .max = max };

	return api_call(conns_read, cid, &r);
}

int vsock_pmd_conns_get_all(uint64_t cid, struct vsock_pmd_conn_info **out)
{
	struct vsock_pmd_conn_info *conns = NULL;
	unsigned int max = 0;
	int n;

	/* Connections come and go between the calls: grow until one snapshot holds them all. */
	for (;;) {
		n = vsock_pmd_conns_get(cid, conns, max);
		if (n < 0 || (unsigned int)n <= max)
			break;
		free(conns);
		max = (unsigned int)n + 32;
		conns = calloc(max, sizeof(*conns));
		if (!conns)
			return -ENOMEM;
	}
	if (n <= 0) {
		free(conns);
		conns = NULL;
	}
	*out = conns;
	return n;
}

/*
 * Give every device or worker the setting @p what = @p v. Any value a worker may see is a
 * valid one, so relaxed stores do, with no handshake; the devices' under their table's lock,
 * so that none is being created or destroyed meanwhile.
 */
static int live_store(uint64_t what, void *arg)
{
	unsigned int i, v = *(const unsigned int *)arg;

	vsock_devs_lock();
	for (i = 0; i < vsock_devs_count(); i++) {
		struct dp_dev *dp = &vsock_dev_at(i)->dp;

		if (what == SET_BURST)
			__atomic_store_n(&dp->burst, v, __ATOMIC_RELAXED);
		else if (what == SET_RECORD_BURSTS)
			__atomic_store_n(&dp->record_bursts, v != 0, __ATOMIC_RELAXED);
	}
	vsock_devs_unlock();
	for (i = 0; i < workers_count(); i++) {
		if (what == SET_RECORD_CYCLES)
			worker_set_record_cycles(worker_at(i), v != 0);
		else if (what == SET_PAUSED)
			worker_set_paused(worker_at(i), v != 0);
	}
	if (what == SET_BURST && v != setting[what])
		VSOCK_LOG(INFO, "burst size %u (was %u)", v, setting[what]);
	else if (what == SET_PAUSED && v != setting[what])
		VSOCK_LOG(INFO, "polling %s", v ? "paused" : "resumed");
	setting[what] = v;
	return 0;
}

static int live_set(enum live_setting what, unsigned int v)
{
	return api_call(live_store, what, &v);
}

int vsock_pmd_set_burst(unsigned int burst)
{
	if (burst < 1 || burst > VSOCK_PMD_BURST_MAX)
		return -EINVAL;
	return live_set(SET_BURST, burst);
}

int vsock_pmd_set_record_burst_stats(bool on)
{
	return live_set(SET_RECORD_BURSTS, on);
}

int vsock_pmd_set_record_core_cycles(bool on)
{
	return live_set(SET_RECORD_CYCLES, on);
}

int vsock_pmd_pause(void)
{
	return live_set(SET_PAUSED, true);
}

int vsock_pmd_resume(void)
{
	return live_set(SET_PAUSED, false);
}
