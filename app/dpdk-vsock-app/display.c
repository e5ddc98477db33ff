/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The statistics display, laid out as testpmd's so that DPDK users find their way: a
 * banner per VM, totals, then "Throughput (since last show)".
 */
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>
#include <linux/virtio_vsock.h>

#include <rte_common.h>
#include <rte_cycles.h>

#include <vsock_pmd.h>

#include "display.h"

#define BANNER "########################"

/* What the previous display of a VM saw, for the throughput since then. */
struct last_show {
	uint64_t cid;
	bool valid;
	uint64_t tsc;
	uint64_t pkts[VSOCK_PMD_NB_QUEUES];
	uint64_t bytes[VSOCK_PMD_NB_QUEUES];
};

static struct last_show last[VSOCK_PMD_MAX_VMS];

static struct last_show *last_of(uint64_t cid)
{
	unsigned int i;

	for (i = 0; i < VSOCK_PMD_MAX_VMS; i++) {
		if (last[i].valid && last[i].cid == cid)
			return &last[i];
	}
	for (i = 0; i < VSOCK_PMD_MAX_VMS; i++) {
		if (!last[i].valid) {
			last[i] = (struct last_show){ .cid = cid };
			return &last[i];
		}
	}
	return NULL;
}

void display_forget(uint64_t cid)
{
	unsigned int i;

	for (i = 0; i < VSOCK_PMD_MAX_VMS; i++) {
		if (cid == VSOCK_PMD_CID_ALL || last[i].cid == cid)
			last[i].valid = false;
	}
}

static int no_vm(uint64_t cid)
{
	struct vsock_pmd_config c;
	unsigned int i;

	printf("No VM with CID %" PRIu64 ". VMs:", cid);
	if (vsock_pmd_config_get(&c) == 0) {
		for (i = 0; i < c.nb_vms; i++) {
			struct vsock_pmd_vm_info vi;

			if (vsock_pmd_vm_info_get(i, &vi) == 0)
				printf(" %" PRIu64, vi.cid);
		}
	}
	printf("\n");
	return -ENOENT;
}

/* testpmd's burst summary: the two most frequent sizes and the rest, in percent. */
static void print_bursts(const char *what, const struct vsock_pmd_queue_stats *qs)
{
	uint64_t total = 0, top[2] = { 0, 0 };
	unsigned int b, size[2] = { 0, 0 };

	for (b = 1; b <= VSOCK_PMD_BURST_MAX; b++) {
		uint64_t n = qs->burst_hist[b];

		total += n;
		if (n > top[0]) {
			top[1] = top[0];
			size[1] = size[0];
			top[0] = n;
			size[0] = b;
		} else if (n > top[1]) {
			top[1] = n;
			size[1] = b;
		}
	}
	printf("  %s-bursts: %" PRIu64, what, total);
	if (total == 0) {
		printf("\n");
		return;
	}
	printf(" [%" PRIu64 "%% of %u pkts", top[0] * 100 / total, size[0]);
	if (top[1])
		printf(" + %" PRIu64 "%% of %u pkts", top[1] * 100 / total, size[1]);
	if (top[0] + top[1] < total)
		printf(" + %" PRIu64 "%% of others", (total - top[0] - top[1]) * 100 / total);
	printf("]\n");
}

static void print_throughput(const struct vsock_pmd_vm_stats *st)
{
	struct last_show *l = last_of(st->cid);
	uint64_t now = rte_get_tsc_cycles(), hz = rte_get_tsc_hz();
	const uint64_t pkts[VSOCK_PMD_NB_QUEUES] = {
		[VSOCK_PMD_Q_TX] = st->from_guest_pkts,
		[VSOCK_PMD_Q_RX] = st->to_guest_pkts,
	};
	const uint64_t bytes[VSOCK_PMD_NB_QUEUES] = {
		[VSOCK_PMD_Q_TX] = st->from_guest_bytes,
		[VSOCK_PMD_Q_RX] = st->to_guest_bytes,
	};
	double secs = 0;
	double pps[VSOCK_PMD_NB_QUEUES] = { 0 }, gbps[VSOCK_PMD_NB_QUEUES] = { 0 };
	unsigned int q;

	if (l && l->valid && now > l->tsc)
		secs = (double)(now - l->tsc) / (double)hz;
	for (q = 0; q < VSOCK_PMD_NB_QUEUES; q++) {
		/* Counters below the last figures were cleared: no rate this time. */
		if (secs > 0 && pkts[q] >= l->pkts[q] && bytes[q] >= l->bytes[q]) {
			pps[q] = (double)(pkts[q] - l->pkts[q]) / secs;
			gbps[q] = (double)(bytes[q] - l->bytes[q]) * 8 / secs / 1e9;
		}
	}
	printf("\n  Throughput (since last show)\n");
	printf("  Guest->host pps: %12.0f          Guest->host Gbit/s: %9.3f\n",
	       pps[VSOCK_PMD_Q_TX], gbps[VSOCK_PMD_Q_TX]);
	printf("  Host->guest pps: %12.0f          Host->guest Gbit/s: %9.3f\n",
	       pps[VSOCK_PMD_Q_RX], gbps[VSOCK_PMD_Q_RX]);
	if (l) {
		*l = (struct last_show){ .cid = st->cid, .valid = true, .tsc = now };
		memcpy(l->pkts, pkts, sizeof(pkts));
		memcpy(l->bytes, bytes, sizeof(bytes));
	}
}

static void print_vm(const struct vsock_pmd_vm_info *vi, const struct vsock_pmd_vm_stats *st,
		     const struct vsock_pmd_config *c)
{
	const struct vsock_pmd_queue_stats *rx = &st->q[VSOCK_PMD_Q_RX];
	const struct vsock_pmd_queue_stats *tx = &st->q[VSOCK_PMD_Q_TX];
	unsigned int i, shown = 0;

	printf("\n  " BANNER " VM statistics for CID %-5" PRIu64 " " BANNER "\n", st->cid);
	if (vi->running)
		printf("  State: running on lcore %d, %u connection%s open\n", vi->lcore, vi->conns,
		       vi->conns == 1 ? "" : "s");
	else
		printf("  State: waiting for a guest\n");
	printf("  Guest->host packets: %-14" PRIu64 " bytes: %-16" PRIu64
	       " host sockets written: %" PRIu64 "\n",
	       st->from_guest_pkts, st->from_guest_bytes, st->host_written_bytes);
	printf("  Host->guest packets: %-14" PRIu64 " bytes: %-16" PRIu64
	       " host sockets read:    %" PRIu64 "\n",
	       st->to_guest_pkts, st->to_guest_bytes, st->host_read_bytes);
	printf("  Connections opened: %-8" PRIu64 " closed: %-8" PRIu64 " reset: %-8" PRIu64
	       " refused: %-8" PRIu64 " table full: %-8" PRIu64 " pipes full: %" PRIu64 "\n",
	       st->conns_opened, st->conns_closed, st->conns_reset, st->conns_refused,
	       st->conns_table_full, st->pipes_refused);
	printf("  %-14s %14s %14s\n", "Rings", "rx(to guest)", "tx(from guest)");
	printf("  %-14s %14" PRIu64 " %14" PRIu64 "\n", "chains", rx->packets, tx->packets);
	printf("  %-14s %14" PRIu64 " %14" PRIu64 "\n", "bursts", rx->bursts, tx->bursts);
	printf("  %-14s %14" PRIu64 " %14" PRIu64 "\n", "used flushes", rx->used_idx_flushes,
	       tx->used_idx_flushes);
	printf("  %-14s %14" PRIu64 " %14" PRIu64 "\n", "interrupts", rx->interrupts,
	       tx->interrupts);
	printf("  %-14s %14" PRIu64 " %14" PRIu64 "\n", "guest kicks", rx->kicks, tx->kicks);
	printf("  %-14s %14" PRIu64 " %14" PRIu64 "\n", "budget cuts", rx->budget_cuts,
	       tx->budget_cuts);
	printf("  %-14s %14" PRIu64 " %14" PRIu64 "%s\n", "ring errors", rx->ring_errors,
	       tx->ring_errors, vi->ring_broken[0] || vi->ring_broken[1] ? "  (ring stopped)" : "");
	if (c->record_burst_stats) {
		print_bursts("RX", rx);
		print_bursts("TX", tx);
	}
	printf("  Stalls: credit %" PRIu64 ", mempool exhausted %" PRIu64 ", tx backpressure %"
	       PRIu64 ", rx ring full %" PRIu64 ", rst dropped %" PRIu64 "\n",
	       st->credit_stalls, st->mempool_exhausted, st->tx_backpressure, st->rx_ring_full,
	       st->rst_dropped);
	printf("  Errors: %" PRIu64, st->errors_total);
	for (i = 0; i < st->nb_errors; i++) {
		if (st->errors[i].count == 0)
			continue;
		printf("%s%s %" PRIu64, shown++ ? ", " : " [", st->errors[i].name,
		       st->errors[i].count);
	}
	if (st->short_packets || st->small_rx_buffers)
		printf("%sshort packets %" PRIu64 ", small rx buffers %" PRIu64,
		       shown++ ? ", " : " [", st->short_packets, st->small_rx_buffers);
	printf("%s\n", shown ? "]" : "");
	print_throughput(st);
	printf("  " BANNER "############################" BANNER "\n");
}

int display_vm_stats(uint64_t cid)
{
	struct vsock_pmd_vm_stats *st = malloc(sizeof(*st));
	struct vsock_pmd_config c;
	unsigned int i;
	int rc, found = 0;

	if (!st)
		return -ENOMEM;
	rc = vsock_pmd_config_get(&c);
	for (i = 0; rc == 0 && i < c.nb_vms; i++) {
		struct vsock_pmd_vm_info vi;

		rc = vsock_pmd_vm_info_get(i, &vi);
		if (rc < 0 || (cid != VSOCK_PMD_CID_ALL && vi.cid != cid))
			continue;
		rc = vsock_pmd_vm_stats_get(vi.cid, st);
		if (rc == 0) {
			print_vm(&vi, st, &c);
			found++;
		}
	}
	free(st);
	if (rc == 0 && !found && cid != VSOCK_PMD_CID_ALL)
		rc = no_vm(cid);
	fflush(stdout);
	return rc;
}

int display_lcore_stats(void)
{
	struct vsock_pmd_config c;
	unsigned int i;
	int rc = vsock_pmd_config_get(&c);

	if (rc < 0)
		return rc;
	printf("\n  " BANNER " lcore statistics " BANNER "\n");
	for (i = 0; i < c.nb_lcores; i++) {
		struct vsock_pmd_lcore_stats ls;
		double busy;

		rc = vsock_pmd_lcore_stats_get(i, &ls);
		if (rc < 0)
			break;
		busy = ls.polls ? 100.0 * (double)ls.busy_polls / (double)ls.polls : 0;
		printf("  lcore %-3u VMs: %-3u polls: %-14" PRIu64 " busy: %-14" PRIu64
		       " empty: %-14" PRIu64 " (%.2f%% busy)\n", ls.lcore_id, ls.nb_vms,
		       ls.polls, ls.busy_polls, ls.polls - ls.busy_polls, busy);
		if (ls.cycles)
			printf("            CPU cycles/packet=%.2f (busy cycles=%" PRIu64
			       " / packets=%" PRIu64 ") at %" PRIu64
			       " MHz; busy %.2f%% of cycles\n",
			       ls.cycles_pkts ? (double)ls.busy_cycles / (double)ls.cycles_pkts : 0,
			       ls.busy_cycles, ls.cycles_pkts, c.tsc_hz / 1000000,
			       100.0 * (double)ls.busy_cycles / (double)ls.cycles);
	}
	printf("  " BANNER "##################" BANNER "\n");
	fflush(stdout);
	return rc;
}

int display_stats(void)
{
	int rc = display_vm_stats(VSOCK_PMD_CID_ALL);

	return rc < 0 ? rc : display_lcore_stats();
}

static void print_features(uint64_t f)
{
	static const struct { unsigned int bit; const char *name; } names[] = {
		{ VIRTIO_VSOCK_F_SEQPACKET, "SEQPACKET" },
		{ VIRTIO_RING_F_INDIRECT_DESC, "INDIRECT_DESC" },
		{ VIRTIO_RING_F_EVENT_IDX, "EVENT_IDX" },
		{ 30, "PROTOCOL_FEATURES" },
		{ VIRTIO_F_VERSION_1, "VERSION_1" },
	};
	unsigned int i;

	printf("0x%" PRIx64, f);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (f & (1ULL << names[i].bit))
			printf(" %s", names[i].name);
	}
}

static void print_groups(const struct vsock_pmd_vm_info *vi)
{
	unsigned int g;

	if (vi->nb_groups == 0)
		printf("none (host only)");
	for (g = 0; g < vi->nb_groups; g++)
		printf("%s%s", g ? "," : "", vi->groups[g]);
}

/* socket-mode= and socket-group= as configured; unset, the umask and the process decide. */
static void print_socket_perms(const struct vsock_pmd_vm_info *vi)
{
	struct group gr, *res = NULL;
	char buf[1024];

	printf("      socket-mode ");
	if (vi->socket_mode)
		printf("%04o", vi->socket_mode);
	else
		printf("from the umask");
	printf(", socket-group ");
	if (!vi->socket_group_set) {
		printf("the app's\n");
		return;
	}
	getgrgid_r((gid_t)vi->socket_gid, &gr, buf, sizeof(buf), &res);
	printf("%s (gid %u)\n", res ? res->gr_name : "?", vi->socket_gid);
}

/* The DPDK memory and what each pool of the engine holds of it (doc/operators-guide.md). */
static void print_memory(void)
{
	struct vsock_pmd_memory *m = malloc(sizeof(*m));
	unsigned int i;

	if (!m || vsock_pmd_memory_get(m) < 0) {
		free(m);
		return;
	}
	printf("  DPDK memory: heap %.1f MiB (%s), %.1f MiB in use; engine pools %" PRIu64
	       " bytes (%.1f MiB)\n", (double)m->heap_bytes / (1 << 20),
	       m->can_grow ? "hugepages, grows on demand" : "fixed by -m",
	       (double)m->heap_used_bytes / (1 << 20), m->pools_bytes,
	       (double)m->pools_bytes / (1 << 20));
	for (i = 0; i < m->nb_pools; i++) {
		const struct vsock_pmd_mem_pool *p = &m->pools[i];

		printf("      %-24s NUMA %d: %" PRIu64 " bytes", p->name, p->socket, p->bytes);
		if (p->objects)
			printf(", %u mbufs of %u bytes, %u in use", p->objects, p->obj_bytes,
			       p->in_use);
		else if (p->memzones > 1)
			printf(" in %u memzones", p->memzones);
		printf("\n");
	}
	free(m);
}

int display_config(void)
{
	struct vsock_pmd_config c;
	unsigned int i;
	int rc = vsock_pmd_config_get(&c);

	if (rc < 0)
		return rc;
	printf("  main lcore %u (control); %u worker lcore%s:", c.main_lcore, c.nb_lcores,
	       c.nb_lcores == 1 ? "" : "s");
	for (i = 0; i < c.nb_lcores; i++) {
		struct vsock_pmd_lcore_stats ls;

		if (vsock_pmd_lcore_stats_get(i, &ls) == 0)
			printf(" %u (%u VM%s)", ls.lcore_id, ls.nb_vms, ls.nb_vms == 1 ? "" : "s");
	}
	printf("\n  burst %u; polling %s; record-burst-stats %s; record-core-cycles %s\n",
	       c.burst, c.paused ? "stopped" : "started", c.record_burst_stats ? "on" : "off",
	       c.record_core_cycles ? "on" : "off");
	for (i = 0; i < c.nb_vms; i++) {
		struct vsock_pmd_vm_info vi;

		if (vsock_pmd_vm_info_get(i, &vi) < 0)
			continue;
		printf("  VM cid %" PRIu64 ": ", vi.cid);
		if (vi.running) {
			printf("lcore %d, rings rx %u tx %u, %u connection%s, features ", vi.lcore,
			       vi.ring_size[VSOCK_PMD_Q_RX], vi.ring_size[VSOCK_PMD_Q_TX], vi.conns,
			       vi.conns == 1 ? "" : "s");
			print_features(vi.features);
		} else {
			printf("no guest attached");
		}
		printf("\n      placed on lcore %u (%s), NUMA node %d; groups ", vi.placed_lcore,
		       vi.pinned ? "pinned" : "balanced", vi.numa_socket);
		print_groups(&vi);
		printf("\n      socket %s\n      uds    %s\n", vi.socket_path, vi.uds_path);
		printf("      tx-buffer-size %u, queue-size %u, max-connections %u, max-pipes %u "
		       "(%u in use), line-timeout-ms %u, connect-timeout-ms %u\n",
		       vi.tx_buffer_size, vi.queue_size, vi.max_conns, vi.max_pipes, vi.pipes,
		       vi.line_timeout_ms, vi.connect_timeout_ms);
		print_socket_perms(&vi);
	}
	print_memory();
	fflush(stdout);
	return 0;
}

/* "1020 established, 3 connecting": how many connections are in each state. */
static void print_conn_states(const struct vsock_pmd_conn_info *ci, int n)
{
	const char *names[8];
	unsigned int counts[8], nb = 0, k;
	int i;

	for (i = 0; i < n; i++) {
		for (k = 0; k < nb && strcmp(names[k], ci[i].state) != 0; k++)
			;
		if (k == nb && nb < RTE_DIM(names)) {
			names[nb] = ci[i].state;
			counts[nb++] = 0;
		}
		if (k < nb)
			counts[k]++;
	}
	for (k = 0; k < nb; k++)
		printf("%s %u %s", k ? "," : ":", counts[k], names[k]);
}

int display_conns(uint64_t cid, unsigned int start)
{
	struct vsock_pmd_conn_info *ci;
	int n = vsock_pmd_conns_get_all(cid, &ci), i, end;

	if (n == -ENOENT)
		return no_vm(cid);
	if (n < 0)
		return n;
	printf("  VM cid %" PRIu64 ": %d connection%s", cid, n, n == 1 ? "" : "s");
	print_conn_states(ci, n);
	printf("\n");
	end = start < (unsigned int)n ? (int)RTE_MIN((unsigned int)n, start + DISPLAY_CONNS_PAGE)
				      : n;
	if (n > 0 && start >= (unsigned int)n)
		printf("  none from %u on: show conn %" PRIu64 " lists them from 0\n", start, cid);
	else if (n > 0)
		printf("  %-10s %-10s %-9s %-12s %10s %10s %15s %15s %8s %8s\n", "guest-port",
		       "host-port", "type", "state", "from-guest", "to-guest", "guest-credit",
		       "host-credit", "q-host", "q-guest");
	for (i = (int)start; i < end; i++) {
		char gc[24], hc[24];

		snprintf(gc, sizeof(gc), "%u/%u", ci[i].guest_credit, ci[i].our_buf_alloc);
		snprintf(hc, sizeof(hc), "%u/%u", ci[i].host_credit, ci[i].peer_buf_alloc);
		printf("  %-10u %-10u %-9s %-12s %10u %10u %15s %15s %8u %8u\n", ci[i].guest_port,
		       ci[i].host_port, ci[i].type, ci[i].state, ci[i].from_guest_bytes,
		       ci[i].to_guest_bytes, gc, hc, ci[i].queued_to_host, ci[i].queued_to_guest);
	}
	if (end < n)
		printf("  ... %d more: show conn %" PRIu64 " %d\n", n - end, cid, end);
	free(ci);
	fflush(stdout);
	return 0;
}
