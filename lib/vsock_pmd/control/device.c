/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device model: the table of every VM's device, its rings loaded from the frontend's
 * memory table and checked against it, the ring counters and kicks kept across frontends,
 * and the hybrid vsock listener and connection table that outlive frontends. What loads
 * the rings when is vhost_user.c's.
 *
 * Callers: DPDK's vhost-events control thread (through vhost_user.c), the EAL alarm thread
 * (detached_host_poll.c), the control API, and the main lcore at start and stop; never a
 * polling lcore. The device lock serialises them; workers never take it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <linux/virtio_config.h>

#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_vhost.h>

#include "conn.h"
#include "datapath.h"
#include "device.h"
#include "ep_route.h"
#include "ep_sibling.h"
#include "ep_uds.h"
#include "log.h"
#include "placement.h"
#include "sock_path.h"
#include "virtq.h"
#include "worker.h"

/* Each device and its mbufs live on the NUMA node of the lcore that polls it. */
static struct vsock_dev *devs[VSOCK_PMD_MAX_VMS];
static unsigned int nb_devs;
/* Comparison switch of vsock_pmd_conf, the same for every device. */
static bool used_per_entry;
static pthread_mutex_t devs_lock = PTHREAD_MUTEX_INITIALIZER;

/* Our own descriptor of a ring's kick eventfd (DPDK may close its one at any time), or -1. */
static void vsock_dev_kick_fd_set(struct vsock_dev *dev, uint16_t q, int kickfd)
{
	if (dev->dp.kick_fd[q] >= 0)
		close(dev->dp.kick_fd[q]);
	dev->dp.kick_fd[q] = kickfd >= 0 ? fcntl(kickfd, F_DUPFD_CLOEXEC, 0) : -1;
}

/*
 * Poll mode: nobody else reads the kick eventfds, so their counters are the kicks since the
 * last read. poll() first so that the read never blocks, whatever the fd's flags. In notify
 * and adaptive modes the worker sleeping on them is their only reader, and counts them.
 */
void vsock_dev_kicks_drain(struct vsock_dev *dev)
{
	uint16_t q;

	if (workers_may_sleep())
		return;
	for (q = 0; q < VSOCK_NR_VQ; q++) {
		struct pollfd p = { .fd = dev->dp.kick_fd[q], .events = POLLIN };
		uint64_t v;

		if (p.fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & POLLIN) &&
		    read(p.fd, &v, sizeof(v)) == sizeof(v))
			dev->history.kicks[q] += v;
	}
}

/* The ring counters go into the history because virtq_init() zeroes them. */
void vsock_dev_rings_detached(struct vsock_dev *dev)
{
	uint16_t q;
	int e;

	vsock_dev_kicks_drain(dev);
	for (q = 0; q < VSOCK_NR_VQ; q++) {
		struct virtq_stats *old = &dev->history.vq[q], *cur = &dev->dp.vq[q].stats;

		vsock_dev_kick_fd_set(dev, q, -1);
		old->dequeued += cur->dequeued;
		old->ungot += cur->ungot;
		old->completed += cur->completed;
		old->used_idx_stores += cur->used_idx_stores;
		old->notify_yes += cur->notify_yes;
		old->notify_no += cur->notify_no;
		for (e = 0; e < VIRTQ_ERR_MAX; e++)
			old->errors[e] += cur->errors[e];
		memset(cur, 0, sizeof(*cur));
	}
}

/* Whether [p, p + len) lies inside one region of the device's memory, as we map it. */
static bool vsock_dev_in_memory(const struct vsock_dev *dev, const volatile void *p,
				uint64_t len)
{
	uint64_t a = (uintptr_t)p;
	unsigned int i;

	for (i = 0; i < dev->gmem.nregions; i++) {
		const struct guest_mem_region *r = &dev->gmem.regions[i];

		if (a >= r->hva && a - r->hva <= r->size && len <= r->size - (a - r->hva))
			return true;
	}
	return false;
}

/*
 * Whether every byte the worker may touch of ring @p vr is guest memory. DPDK checked the
 * ring's size when it translated the addresses (SET_VRING_ADDR, SET_VRING_KICK,
 * SET_MEM_TABLE), not when SET_VRING_NUM changed the size afterwards.
 */
static bool vsock_dev_ring_in_memory(const struct vsock_dev *dev,
				     const struct rte_vhost_vring *vr)
{
	uint64_t n = vr->size, event = dev->features & (1ULL << VIRTIO_RING_F_EVENT_IDX) ? 2 : 0;

	if (dev->features & (1ULL << VIRTIO_F_RING_PACKED))
		return vsock_dev_in_memory(dev, vr->desc_packed, sizeof(*vr->desc_packed) * n) &&
		       vsock_dev_in_memory(dev, vr->driver_event, sizeof(*vr->driver_event)) &&
		       vsock_dev_in_memory(dev, vr->device_event, sizeof(*vr->device_event));
	return vsock_dev_in_memory(dev, vr->desc, sizeof(*vr->desc) * n) &&
	       vsock_dev_in_memory(dev, vr->avail, sizeof(*vr->avail) + 2 * n + event) &&
	       vsock_dev_in_memory(dev, vr->used,
			       sizeof(*vr->used) + sizeof(vr->used->ring[0]) * n + event);
}

int vsock_dev_load_rings(struct vsock_dev *dev, bool resume)
{
	struct guest_mem_region regions[GUEST_MEM_MAX_REGIONS];
	int vid = dev->dp.vid;
	uint32_t i;
	uint16_t q;

	/* virtq_split_init() zeroes the ring counters: keep what they counted so far. */
	vsock_dev_rings_detached(dev);
	free(dev->mem);
	dev->mem = NULL;
	if (rte_vhost_get_mem_table(vid, &dev->mem) < 0 ||
	    dev->mem->nregions > GUEST_MEM_MAX_REGIONS) {
		VSOCK_LOG(ERR, "VM cid %" PRIu64 ": no usable memory table", dev->conf.cid);
		return -EINVAL;
	}
	for (i = 0; i < dev->mem->nregions; i++) {
		const struct rte_vhost_mem_region *r = &dev->mem->regions[i];

		regions[i] = (struct guest_mem_region){
			.gpa = r->guest_phys_addr,
			.size = r->size,
			.hva = r->host_user_addr,
		};
	}
	if (guest_mem_init(&dev->gmem, regions, dev->mem->nregions) < 0) {
		VSOCK_LOG(ERR, "VM cid %" PRIu64 ": overlapping or empty memory regions",
			  dev->conf.cid);
		return -EINVAL;
	}
	for (q = 0; q < VSOCK_NR_VQ; q++) {
		struct virtq *vq = &dev->dp.vq[q];
		struct rte_vhost_vring vring;
		uint16_t last_avail, last_used;

		if (rte_vhost_get_vhost_vring(vid, q, &vring) < 0 || !vring.desc) {
			VSOCK_LOG(ERR, "VM cid %" PRIu64 ": vring %u not set up", dev->conf.cid, q);
			return -EINVAL;
		}
		if (!vsock_dev_ring_in_memory(dev, &vring)) {
			VSOCK_LOG(ERR, "VM cid %" PRIu64 ": vring %u of size %u lies outside guest "
				  "memory", dev->conf.cid, q, vring.size);
			return -EFAULT;
		}
		if (resume && !dev->rebase[q]) {
			last_avail = vq->last_avail_idx;
			last_used = vq->last_used_idx;
		} else {
			rte_vhost_get_vring_base(vid, q, &last_avail, &last_used);
		}
		/*
		 * The layout is the device's, negotiated once (QEMU: packed=on). Packed ring
		 * positions come and go in DPDK's vring base encoding, wrap counter in bit 15.
		 */
		if ((dev->features & (1ULL << VIRTIO_F_RING_PACKED) ?
		     virtq_packed_init(vq, &dev->gmem, vring.desc_packed, vring.driver_event,
				       vring.device_event, vring.size, last_avail, last_used,
				       dev->features) :
		     virtq_split_init(vq, &dev->gmem, vring.desc, vring.avail, vring.used,
				      vring.size, last_avail, last_used, dev->features)) < 0) {
			VSOCK_LOG(ERR, "VM cid %" PRIu64 ": vring %u of size %u refused",
				  dev->conf.cid, q, vring.size);
			return -EINVAL;
		}
		vq_set_per_entry_publish(vq, used_per_entry);
		/*
		 * Reading a kick eventfd consumes the kicks in it: one reader, the worker when it
		 * sleeps on it, else the statistics (vsock_dev_kicks_drain()).
		 */
		vsock_dev_kick_fd_set(dev, q, vring.kickfd);
		/* Polling: the guest need not kick us (notify mode asks only while idle). */
		vq_disable_guest_kicks(vq);
		dev->dp.notify_pending[q] = false;
		dev->dp.broken_reported[q] = false;
	}
	return 0;
}

/* The hybrid vsock listener and the connection table outlive frontend connections. */
static int vsock_dev_open_endpoint(struct vsock_dev *dev)
{
	struct conn_table_conf cc;
	mode_t old_umask;
	int rc;

	rc = vm_sock_clear_stale(&dev->conf, "uds", dev->conf.uds_path);
	if (rc < 0)
		return rc;
	/* Bound and listened on owner-only: others get in once vm_sock_perm_end() let them. */
	old_umask = vm_sock_perm_begin(&dev->conf);
	dev->listen_fd = ep_uds_listen(dev->conf.uds_path);
	if (dev->listen_fd < 0) {
		vm_sock_perm_end(&dev->conf, NULL, old_umask);
		VSOCK_LOG(ERR, "VM cid %" PRIu64 ": cannot listen on %s: %s", dev->conf.cid,
			  dev->conf.uds_path, strerror(-dev->listen_fd));
		return dev->listen_fd;
	}
	rc = vm_sock_perm_end(&dev->conf, dev->conf.uds_path, old_umask);
	if (rc < 0)
		return rc;
	conn_table_conf_init(&cc);
	cc.guest_cid = dev->conf.cid;
	cc.uds_path = dev->conf.uds_path;
	cc.listen_fd = dev->listen_fd;
	cc.pool = placement_pool(dev->numa_node);
	cc.mbuf_quota = placement_quota(dev->numa_node);
	cc.socket_id = dev->numa_node;
	cc.route = ep_route;
	cc.incoming = ep_sibling_incoming(dev->conf.cid);
	cc.waker = worker_waker(dev->worker);
	cc.no_guest = true;
	cc.buf_alloc = dev->conf.tx_buffer_size;
	cc.max_conns = dev->conf.max_conns;
	cc.line_timeout_ms = dev->conf.line_timeout_ms;
	cc.connect_timeout_ms = dev->conf.connect_timeout_ms;
	dev->dp.conns = conn_table_create(&cc);
	if (!dev->dp.conns) {
		VSOCK_LOG(ERR, "VM cid %" PRIu64 ": cannot create its connection table: %s",
			  dev->conf.cid, rte_strerror(rte_errno));
		return -ENOMEM;
	}
	return 0;
}

static void vsock_dev_close_endpoint(struct vsock_dev *dev)
{
	vsock_dev_rings_detached(dev);
	conn_table_destroy(dev->dp.conns);
	dev->dp.conns = NULL;
	if (dev->listen_fd >= 0) {
		close(dev->listen_fd);
		/* Ours, unless someone put something else there since. */
		ep_uds_clear_stale(dev->conf.uds_path);
		dev->listen_fd = -1;
	}
}

uint32_t vm_max_pipes(const struct vsock_pmd_vm_conf *vm, unsigned int nb_vms)
{
	return vm->max_pipes ? vm->max_pipes :
	       RTE_MAX(VSOCK_PMD_PIPES_DEFAULT_TOTAL / nb_vms, VSOCK_PMD_MAX_PIPES_DEFAULT_MIN);
}

/* The limits a VM's configuration leaves at 0 get their defaults (vsock_pmd.h). */
static void vm_conf_defaults(struct vsock_pmd_vm_conf *vm, unsigned int nb_vms)
{
	vm->max_pipes = vm_max_pipes(vm, nb_vms);
	if (!vm->tx_buffer_size)
		vm->tx_buffer_size = VSOCK_PMD_TX_BUFFER_DEFAULT;
	if (!vm->queue_size)
		vm->queue_size = VSOCK_PMD_QUEUE_SIZE_MAX;
	if (!vm->max_conns)
		vm->max_conns = VSOCK_PMD_MAX_CONNS_DEFAULT;
	if (!vm->line_timeout_ms)
		vm->line_timeout_ms = VSOCK_PMD_TIMEOUT_MS_DEFAULT;
	if (!vm->connect_timeout_ms)
		vm->connect_timeout_ms = VSOCK_PMD_TIMEOUT_MS_DEFAULT;
}

int vsock_devs_create(const struct vsock_pmd_conf *conf)
{
	unsigned int i;
	int rc;

	used_per_entry = conf->used_per_entry;
	for (i = 0; i < conf->nb_vms; i++) {
		int node = (int)rte_lcore_to_socket_id(worker_lcore(placement_home(i)));
		struct vsock_dev *dev = rte_zmalloc_socket("vsock_dev", sizeof(*dev),
							   RTE_CACHE_LINE_SIZE, node);

		if (!dev)
			return -ENOMEM;
		dev->conf = conf->vms[i];
		vm_conf_defaults(&dev->conf, conf->nb_vms);
		dp_dev_init(&dev->dp, dev->conf.cid, conf->burst);
		dev->listen_fd = -1;
		dev->worker = placement_home(i);
		dev->numa_node = node;
		ep_sibling_set_waker(dev->conf.cid, worker_waker(dev->worker));
		pthread_mutex_lock(&devs_lock);
		devs[i] = dev;
		nb_devs = i + 1;
		pthread_mutex_unlock(&devs_lock);
		rc = vsock_dev_open_endpoint(dev);
		if (rc < 0)
			return rc;
	}
	/* The payload last: no frontend comes before its mbufs (vsock_vhost_start() after). */
	return placement_pools_populate(conf);
}

void vsock_devs_destroy(void)
{
	unsigned int i;

	for (i = 0; i < nb_devs; i++)
		vsock_dev_close_endpoint(devs[i]);
	pthread_mutex_lock(&devs_lock);
	for (i = 0; i < nb_devs; i++) {
		rte_free(devs[i]);
		devs[i] = NULL;
	}
	nb_devs = 0;
	pthread_mutex_unlock(&devs_lock);
}

void vsock_devs_lock(void)
{
	pthread_mutex_lock(&devs_lock);
}

void vsock_devs_unlock(void)
{
	pthread_mutex_unlock(&devs_lock);
}

unsigned int vsock_devs_count(void)
{
	return nb_devs;
}

struct vsock_dev *vsock_dev_at(unsigned int i)
{
	return i < nb_devs ? devs[i] : NULL;
}
