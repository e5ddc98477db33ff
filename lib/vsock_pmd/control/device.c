/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost-user glue: one librte_vhost socket per VM, GET_CONFIG answered with
 * the VM's CID, and the device lifecycle handed to the polling workers.
 *
 * Every callback here runs on DPDK's vhost-events control thread (and
 * vsock_devs_destroy() on the main lcore, detached_poll() on the EAL alarm
 * thread); none runs on a polling lcore. The device table lock serialises
 * them; workers never take it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/virtio_config.h>
#include <linux/virtio_vsock.h>

#include <rte_alarm.h>
#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_vhost.h>

#include "conn.h"
#include "datapath.h"
#include "device.h"
#include "ep_route.h"
#include "ep_sibling.h"
#include "ep_uds.h"
#include "log.h"
#include "placement.h"
#include "vhost_user_msg.h"
#include "virtq.h"
#include "worker.h"

/* Features the device offers. VHOST_USER_F_PROTOCOL_FEATURES is needed for GET_CONFIG. */
#define VSOCK_FEATURES \
	((1ULL << VIRTIO_F_VERSION_1) | (1ULL << VHOST_USER_F_PROTOCOL_FEATURES) | \
	 (1ULL << VIRTIO_RING_F_INDIRECT_DESC) | (1ULL << VIRTIO_RING_F_EVENT_IDX) | \
	 (1ULL << VIRTIO_VSOCK_F_SEQPACKET) | (1ULL << VIRTIO_F_RING_PACKED))
#define VSOCK_PROTOCOL_FEATURES (1ULL << VHOST_USER_PROTOCOL_F_CONFIG)

/* How often the control side serves the host sockets of devices no worker polls. */
#define DETACHED_POLL_US (20 * 1000)

/* Each device and its mbufs live on the NUMA node of the lcore that polls it. */
static struct vsock_dev *devs[VSOCK_PMD_MAX_VMS];
static unsigned int nb_devs;
/* Comparison switch of vsock_pmd_conf, the same for every device. */
static bool used_per_entry;
static pthread_mutex_t devs_lock = PTHREAD_MUTEX_INITIALIZER;
/* detached_poll() is due (armed), or must not be armed again (stopping). Under devs_lock. */
static bool detached_poll_armed;
static bool detached_poll_stopping;

/*
 * Every frontend connection maps to its VM here, from new_connection to
 * destroy_connection. Several may exist at once for one VM (DPDK accepts a
 * reconnecting QEMU before it notices the old connection closed), but only
 * the one in dev->dp.vid drives the rings.
 */
#define VSOCK_MAX_VIDS 1024	/* librte_vhost's MAX_VHOST_DEVICE */
static struct vsock_dev *vid_devs[VSOCK_MAX_VIDS];

static struct vsock_dev *dev_by_vid(int vid)
{
	return vid >= 0 && vid < VSOCK_MAX_VIDS ? vid_devs[vid] : NULL;
}

/* The device @p vid drives, or NULL if @p vid is not the running frontend of its VM. */
static struct vsock_dev *running_dev_by_vid(int vid)
{
	struct vsock_dev *dev = dev_by_vid(vid);

	return dev && dev->running && dev->dp.vid == vid ? dev : NULL;
}

static struct vsock_dev *dev_by_path(const char *path)
{
	unsigned int i;

	for (i = 0; i < nb_devs; i++) {
		if (strcmp(devs[i]->conf.socket_path, path) == 0)
			return devs[i];
	}
	return NULL;
}

/* Whether no worker polls @p dev: no frontend drives it, or its rings are being replaced. */
static bool dev_off_worker(const struct vsock_dev *dev)
{
	return !dev->running || dev->remapping;
}

static void detached_poll(void *arg);

/* Called with devs_lock held whenever a device leaves its worker. */
static void detached_poll_arm(void)
{
	int rc;

	if (detached_poll_armed || detached_poll_stopping)
		return;
	rc = rte_eal_alarm_set(DETACHED_POLL_US, detached_poll, NULL);
	if (rc < 0)
		VSOCK_LOG(ERR, "cannot serve host sockets of detached VMs: %s", strerror(-rc));
	else
		detached_poll_armed = true;
}

/*
 * Host programs still connect to a VM that no worker polls (booting, rebooting, QEMU
 * gone). Its connection table is then the control side's, under devs_lock: the worker
 * handshake hands it to the worker at new_device and back at destroy_device (and around a
 * memory table change). So the EAL alarm thread serves it here, slowly, and the workers'
 * loop stays as it is; the table refuses what needs a guest (conn_table_set_guest()), so
 * a CONNECT line gets its close at once and an unfinished one its timeout. A worker could
 * serve these tables as well, but only with a second, slower list in its loop and the
 * table reset moved onto its lcore, for a case off the datapath.
 */
static void detached_poll(void *arg __rte_unused)
{
	bool again = false;
	unsigned int i;

	pthread_mutex_lock(&devs_lock);
	detached_poll_armed = false;
	for (i = 0; i < nb_devs; i++) {
		struct vsock_dev *dev = devs[i];

		if (!dev->dp.conns || !dev_off_worker(dev))
			continue;
		conn_poll_host(dev->dp.conns, rte_get_tsc_cycles(), HOST_POLL_BUDGET);
		again = true;
	}
	if (again)
		detached_poll_arm();
	pthread_mutex_unlock(&devs_lock);
}

/*
 * QEMU realises vhost-user-vsock only if the backend answers GET_CONFIG with
 * struct virtio_vsock_config. librte_vhost routes GET_CONFIG to vDPA drivers
 * only, so the answer is written here, before DPDK's own handler runs.
 */
static enum rte_vhost_msg_result answer_get_config(struct vsock_dev *dev,
						   struct vhost_user_msg *msg)
{
	/* Fields read once: the message is packed, so no pointers into it. */
	uint32_t offset = msg->payload.config.offset;
	uint32_t size = msg->payload.config.size;
	struct virtio_vsock_config space = {
		.guest_cid = rte_cpu_to_le_64(dev->conf.cid),
	};

	if (msg->size < VHOST_USER_CONFIG_HDR_SIZE ||
	    msg->size > sizeof(struct vhost_user_config) ||
	    size > msg->size - VHOST_USER_CONFIG_HDR_SIZE ||
	    offset > sizeof(space) || size > sizeof(space) - offset) {
		VSOCK_LOG(ERR, "VM cid %" PRIu64 ": GET_CONFIG for bytes %u+%u of an %zu-byte "
			  "config space (message size %u) refused", dev->conf.cid, offset, size,
			  sizeof(space), msg->size);
		return RTE_VHOST_MSG_RESULT_ERR;
	}
	memcpy(msg->payload.config.region, (uint8_t *)&space + offset, size);
	return RTE_VHOST_MSG_RESULT_REPLY;
}

/* Our own descriptor of a ring's kick eventfd (DPDK may close its one at any time), or -1. */
static void dev_kick_fd_set(struct vsock_dev *dev, uint16_t q, int kickfd)
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

/*
 * No worker polls @p dev any more (or its rings are about to be set up again): fold the ring
 * counters into the device's history, which virtq_init() would zero, count the kicks and
 * close the kick eventfds. Harmless when repeated.
 */
static void dev_rings_detached(struct vsock_dev *dev)
{
	uint16_t q;
	int e;

	vsock_dev_kicks_drain(dev);
	for (q = 0; q < VSOCK_NR_VQ; q++) {
		struct virtq_stats *old = &dev->history.vq[q], *cur = &dev->dp.vq[q].stats;

		dev_kick_fd_set(dev, q, -1);
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
static bool in_guest_memory(const struct vsock_dev *dev, const volatile void *p, uint64_t len)
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
static bool ring_in_memory(const struct vsock_dev *dev, const struct rte_vhost_vring *vr)
{
	uint64_t n = vr->size, event = dev->features & (1ULL << VIRTIO_RING_F_EVENT_IDX) ? 2 : 0;

	if (dev->features & (1ULL << VIRTIO_F_RING_PACKED))
		return in_guest_memory(dev, vr->desc_packed, sizeof(*vr->desc_packed) * n) &&
		       in_guest_memory(dev, vr->driver_event, sizeof(*vr->driver_event)) &&
		       in_guest_memory(dev, vr->device_event, sizeof(*vr->device_event));
	return in_guest_memory(dev, vr->desc, sizeof(*vr->desc) * n) &&
	       in_guest_memory(dev, vr->avail, sizeof(*vr->avail) + 2 * n + event) &&
	       in_guest_memory(dev, vr->used,
			       sizeof(*vr->used) + sizeof(vr->used->ring[0]) * n + event);
}

/*
 * Map the frontend's memory table and rings into the device's virtqueues.
 * @p resume keeps the ring positions the worker reached (memory table or ring
 * replaced under a running device) unless SET_VRING_BASE gave a new one;
 * otherwise they come from SET_VRING_BASE.
 * Called with devs_lock held, on a device no worker polls.
 */
static int dev_load_rings(struct vsock_dev *dev, bool resume)
{
	struct guest_mem_region regions[GUEST_MEM_MAX_REGIONS];
	int vid = dev->dp.vid;
	uint32_t i;
	uint16_t q;

	/* virtq_split_init() zeroes the ring counters: keep what they counted so far. */
	dev_rings_detached(dev);
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
		if (!ring_in_memory(dev, &vring)) {
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
		dev_kick_fd_set(dev, q, vring.kickfd);
		/* Polling: the guest need not kick us (notify mode asks only while idle). */
		vq_disable_guest_kicks(vq);
		dev->dp.notify_pending[q] = false;
		dev->dp.broken_reported[q] = false;
	}
	return 0;
}

static enum rte_vhost_msg_result pre_msg_handle(int vid, void *raw)
{
	struct vhost_user_msg *msg = raw;
	enum rte_vhost_msg_result res = RTE_VHOST_MSG_RESULT_NOT_HANDLED;
	struct vsock_dev *dev;

	pthread_mutex_lock(&devs_lock);
	dev = dev_by_vid(vid);
	if (!dev)
		goto out;
	switch (msg->request) {
	case VHOST_USER_GET_CONFIG:
		res = answer_get_config(dev, msg);
		break;
	case VHOST_USER_SET_VRING_NUM:
		/* The ring is refused before DPDK sizes anything for it. */
		if (msg->payload.state.num > dev->conf.queue_size) {
			VSOCK_LOG(ERR, "VM cid %" PRIu64 ": ring %u of %u entries refused: larger "
				  "than its queue-size %u", dev->conf.cid, msg->payload.state.index,
				  msg->payload.state.num, dev->conf.queue_size);
			res = RTE_VHOST_MSG_RESULT_ERR;
			break;
		}
		/* fall through */
	case VHOST_USER_SET_MEM_TABLE:
	case VHOST_USER_SET_VRING_ADDR:
	case VHOST_USER_SET_VRING_BASE:
	case VHOST_USER_SET_VRING_KICK:
		/*
		 * DPDK unmaps the old regions, or moves, resizes, repositions a ring or replaces
		 * its kick eventfd, while handling these: take a running device off its worker
		 * first, and load its rings again in post_msg_handle.
		 */
		if (!dev->running || dev->dp.vid != vid)
			break;
		if (!dev->remapping) {
			worker_detach(dev->worker, &dev->dp);
			dev->remapping = true;
			detached_poll_arm();
		}
		if (msg->request == VHOST_USER_SET_VRING_BASE &&
		    msg->payload.state.index < VSOCK_NR_VQ)
			dev->rebase[msg->payload.state.index] = true;
		break;
	default:
		break;
	}
out:
	pthread_mutex_unlock(&devs_lock);
	return res;
}

static enum rte_vhost_msg_result post_msg_handle(int vid, void *raw)
{
	struct vhost_user_msg *msg = raw;
	struct vsock_dev *dev;

	pthread_mutex_lock(&devs_lock);
	dev = dev_by_vid(vid);
	/*
	 * Any message may complete what a change left half done (SET_MEM_TABLE before the
	 * SET_VRING_ADDR that moves the rings into the new memory): try again after each.
	 */
	if (dev && dev->remapping && dev->running && dev->dp.vid == vid) {
		if (dev_load_rings(dev, true) == 0) {
			dev->remapping = false;
			memset(dev->rebase, 0, sizeof(dev->rebase));
			worker_attach(dev->worker, &dev->dp);
			VSOCK_LOG(INFO, "VM cid %" PRIu64 ": rings loaded again after request %u",
				  dev->conf.cid, msg->request);
		} else {
			/*
			 * Not a reason to drop the guest's connections: the frontend may still set
			 * the rings, or stop the device (GET_VRING_BASE), which ends them.
			 */
			VSOCK_LOG(WARNING, "VM cid %" PRIu64 ": waits for its rings after request "
				  "%u", dev->conf.cid, msg->request);
		}
	}
	pthread_mutex_unlock(&devs_lock);
	return RTE_VHOST_MSG_RESULT_NOT_HANDLED;
}

static const struct rte_vhost_user_extern_ops extern_ops = {
	.pre_msg_handle = pre_msg_handle,
	.post_msg_handle = post_msg_handle,
};

static int new_connection(int vid)
{
	char path[VSOCK_PMD_PATH_MAX + 1];
	struct vsock_dev *dev;
	int rc = -1;

	if (rte_vhost_get_ifname(vid, path, sizeof(path)) < 0)
		return -1;
	pthread_mutex_lock(&devs_lock);
	dev = dev_by_path(path);
	if (!dev)
		goto out;
	if (vid >= VSOCK_MAX_VIDS) {
		VSOCK_LOG(ERR, "VM cid %" PRIu64 ": vhost device id %d out of range",
			  dev->conf.cid, vid);
		goto out;
	}
	/*
	 * Each connection may hold a memory table and ring eventfds: the descriptor budget
	 * (VSOCK_PMD_FDS_VM_RUN) counts the running frontend's and one reconnecting.
	 */
	if (dev->frontend_conns >= VSOCK_PMD_FRONTEND_CONNS) {
		VSOCK_LOG(ERR, "VM cid %" PRIu64 ": vhost-user connection (vid %d) refused: %u "
			  "are open already, the most one VM may have", dev->conf.cid, vid,
			  dev->frontend_conns);
		goto out;
	}
	if (rte_vhost_extern_callback_register(vid, &extern_ops, dev) < 0) {
		VSOCK_LOG(ERR, "VM cid %" PRIu64 ": cannot hook vhost-user messages",
			  dev->conf.cid);
		goto out;
	}
	vid_devs[vid] = dev;
	dev->frontend_conns++;
	VSOCK_LOG(INFO, "VM cid %" PRIu64 ": frontend connected (vid %d)", dev->conf.cid, vid);
	rc = 0;
out:
	pthread_mutex_unlock(&devs_lock);
	return rc;
}

static void destroy_connection(int vid)
{
	struct vsock_dev *dev;

	pthread_mutex_lock(&devs_lock);
	dev = dev_by_vid(vid);
	if (dev) {
		vid_devs[vid] = NULL;
		dev->frontend_conns--;
		VSOCK_LOG(INFO, "VM cid %" PRIu64 ": frontend disconnected (vid %d)",
			  dev->conf.cid, vid);
	}
	pthread_mutex_unlock(&devs_lock);
}

static int new_device(int vid)
{
	struct vsock_dev *dev;
	int rc = -1;

	pthread_mutex_lock(&devs_lock);
	dev = dev_by_vid(vid);
	if (!dev)
		goto out;
	if (dev->running) {
		/* One frontend drives a device; a second one would share its rings. */
		VSOCK_LOG(ERR, "VM cid %" PRIu64 ": vid %d already drives it, vid %d refused",
			  dev->conf.cid, dev->dp.vid, vid);
		goto out;
	}
	dev->dp.vid = vid;
	if (rte_vhost_get_negotiated_features(vid, &dev->features) < 0)
		goto out;
	if (rte_vhost_get_vring_num(vid) < VSOCK_NR_VQ) {
		VSOCK_LOG(ERR, "VM cid %" PRIu64 ": %u vrings, vsock needs %u", dev->conf.cid,
			  rte_vhost_get_vring_num(vid), VSOCK_NR_VQ);
		goto out;
	}
	if (dev_load_rings(dev, false) < 0)
		goto out;
	conn_table_set_seqpacket(dev->dp.conns,
				 dev->features & (1ULL << VIRTIO_VSOCK_F_SEQPACKET));
	conn_table_set_guest(dev->dp.conns, true);
	worker_attach(dev->worker, &dev->dp);
	dev->running = true;
	ep_sibling_set_running(dev->conf.cid, true);
	VSOCK_LOG(INFO, "VM cid %" PRIu64 ": running on lcore %u (features 0x%" PRIx64 ")",
		  dev->conf.cid, worker_lcore(dev->worker), dev->features);
	rc = 0;
out:
	pthread_mutex_unlock(&devs_lock);
	return rc;
}

static void destroy_device(int vid)
{
	struct vsock_dev *dev;
	uint16_t q;

	pthread_mutex_lock(&devs_lock);
	dev = running_dev_by_vid(vid);
	if (!dev)
		goto out;
	if (!dev->remapping)
		worker_detach(dev->worker, &dev->dp);
	dev_rings_detached(dev);
	dev->running = false;
	/* No new guest-to-guest connection is routed here; the table reset ends the others. */
	ep_sibling_set_running(dev->conf.cid, false);
	dev->remapping = false;
	memset(dev->rebase, 0, sizeof(dev->rebase));
	dev->dp.vid = -1;
	/*
	 * DPDK answers GET_VRING_BASE with these: the frontend resumes from them. The
	 * worker left nothing in the shadow rings, so last_used_idx is what the guest saw.
	 */
	for (q = 0; q < VSOCK_NR_VQ; q++) {
		rte_vhost_set_vring_base(vid, q, dev->dp.vq[q].last_avail_idx,
					 dev->dp.vq[q].last_used_idx);
	}
	free(dev->mem);
	dev->mem = NULL;
	/* The guest is gone or rebooting: its connections end, host sockets see EOF. */
	conn_table_reset(dev->dp.conns);
	conn_table_set_guest(dev->dp.conns, false);
	detached_poll_arm();
	VSOCK_LOG(INFO, "VM cid %" PRIu64 ": stopped", dev->conf.cid);
out:
	pthread_mutex_unlock(&devs_lock);
}

static int vring_state_changed(int vid, uint16_t queue_id, int enable)
{
	/*
	 * QEMU re-sends SET_VRING_CALL right after the device starts and DPDK reports
	 * that as disable/enable. Nothing to do: the call fd is never cached.
	 */
	VSOCK_LOG(DEBUG, "vid %d: vring %u %s", vid, queue_id, enable ? "enabled" : "disabled");
	return 0;
}

static const struct rte_vhost_device_ops device_ops = {
	.new_device = new_device,
	.destroy_device = destroy_device,
	.vring_state_changed = vring_state_changed,
	.new_connection = new_connection,
	.destroy_connection = destroy_connection,
};

/*
 * socket-mode= and socket-group=: a socket is bound while the umask lets only its owner (this
 * process's user) connect, and is given its group and mode right after, so nobody else can
 * connect before it has them. The umask is the process's: a file another thread creates in
 * that window comes out narrower, never wider. Returns the umask to restore.
 */
static mode_t sock_perm_begin(const struct vsock_dev *dev)
{
	return dev->conf.socket_mode || dev->conf.socket_group_set ? umask(0177) : 0;
}

static int sock_perm_end(const struct vsock_dev *dev, const char *path, mode_t old_umask)
{
	const struct vsock_pmd_vm_conf *c = &dev->conf;
	int rc = 0;

	if (!c->socket_mode && !c->socket_group_set)
		return 0;
	umask(old_umask);
	if (path == NULL)	/* nothing was made: only the umask to restore */
		return 0;
	if ((c->socket_group_set && chown(path, (uid_t)-1, (gid_t)c->socket_gid) < 0) ||
	    chmod(path, c->socket_mode ? (mode_t)c->socket_mode : 0777 & ~old_umask) < 0) {
		rc = -errno;
		VSOCK_LOG(ERR, "VM cid %" PRIu64 ": cannot give %s mode %04o, group %d: %s",
			  c->cid, path, c->socket_mode, c->socket_group_set ? (int)c->socket_gid :
			  -1, strerror(-rc));
	}
	return rc;
}

/*
 * Before a socket of @p dev is bound at @p path: a stale socket from a crash goes (app
 * validation refused live ones), anything else there stays and is refused by name.
 */
static int dev_clear_path(const struct vsock_dev *dev, const char *key, const char *path)
{
	int rc = ep_uds_clear_stale(path);

	if (rc == -EEXIST)
		VSOCK_LOG(ERR, "VM cid %" PRIu64 ": %s path %s exists and is not a socket: it is "
			  "left as it is; remove it or choose another path", dev->conf.cid, key,
			  path);
	else if (rc < 0)
		VSOCK_LOG(ERR, "VM cid %" PRIu64 ": cannot clear %s path %s: %s", dev->conf.cid,
			  key, path, strerror(-rc));
	return rc;
}

static int dev_register(struct vsock_dev *dev)
{
	const char *path = dev->conf.socket_path;
	mode_t old_umask;
	int rc;

	/*
	 * A client's socket is the frontend's: DPDK connects, and reconnects every second
	 * until it is back if it goes away.
	 */
	if (!dev->conf.client) {
		rc = dev_clear_path(dev, "socket", path);
		if (rc < 0)
			return rc;
	}
	if (rte_vhost_driver_register(path, dev->conf.client ? RTE_VHOST_USER_CLIENT : 0) < 0) {
		VSOCK_LOG(ERR, "VM cid %" PRIu64 ": cannot create vhost-user socket %s",
			  dev->conf.cid, path);
		return -EIO;
	}
	dev->registered = true;
	if (rte_vhost_driver_set_features(path, VSOCK_FEATURES) < 0 ||
	    rte_vhost_driver_set_protocol_features(path, VSOCK_PROTOCOL_FEATURES) < 0 ||
	    rte_vhost_driver_callback_register(path, &device_ops) < 0) {
		VSOCK_LOG(ERR, "VM cid %" PRIu64 ": cannot set up vhost-user socket %s",
			  dev->conf.cid, path);
		return -EIO;
	}
	/*
	 * A server's socket is bound and listened on inside rte_vhost_driver_start(): from
	 * there to sock_perm_end() only our own user can connect. A client's socket is the
	 * frontend's, made with the frontend's permissions: socket-mode/-group leave it alone.
	 */
	old_umask = dev->conf.client ? 0 : sock_perm_begin(dev);
	rc = rte_vhost_driver_start(path);
	if (!dev->conf.client && sock_perm_end(dev, rc < 0 ? NULL : path, old_umask) < 0)
		return -EPERM;
	if (rc < 0) {
		VSOCK_LOG(ERR, "VM cid %" PRIu64 ": cannot start vhost-user socket %s",
			  dev->conf.cid, path);
		return -EIO;
	}
	VSOCK_LOG(INFO, "VM cid %" PRIu64 ": vhost-user socket %s", dev->conf.cid, path);
	return 0;
}

/* The hybrid vsock listener and the connection table outlive frontend connections. */
static int dev_open_endpoint(struct vsock_dev *dev)
{
	struct conn_table_conf cc;
	mode_t old_umask;
	int rc;

	rc = dev_clear_path(dev, "uds", dev->conf.uds_path);
	if (rc < 0)
		return rc;
	/* Bound and listened on owner-only: others get in once sock_perm_end() let them. */
	old_umask = sock_perm_begin(dev);
	dev->listen_fd = ep_uds_listen(dev->conf.uds_path);
	if (dev->listen_fd < 0) {
		sock_perm_end(dev, NULL, old_umask);
		VSOCK_LOG(ERR, "VM cid %" PRIu64 ": cannot listen on %s: %s", dev->conf.cid,
			  dev->conf.uds_path, strerror(-dev->listen_fd));
		return dev->listen_fd;
	}
	rc = sock_perm_end(dev, dev->conf.uds_path, old_umask);
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

static void dev_close_endpoint(struct vsock_dev *dev)
{
	dev_rings_detached(dev);
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

	detached_poll_stopping = false;
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
		rc = dev_open_endpoint(dev);
		if (rc < 0)
			return rc;
	}
	/* The payload last, then the vhost-user sockets: no frontend comes before its mbufs. */
	rc = placement_pools_populate(conf);
	for (i = 0; rc == 0 && i < conf->nb_vms; i++) {
		struct vsock_dev *dev = devs[i];
		int node = dev->numa_node;

		rc = dev_register(dev);
		if (rc < 0)
			break;
		VSOCK_LOG(INFO, "VM cid %" PRIu64 ": placed on lcore %u (%s), NUMA node %d",
			  dev->conf.cid, worker_lcore(dev->worker),
			  dev->conf.pinned ? "pinned" : "balanced", node);
	}
	if (rc < 0)
		return rc;
	/* Every table is ready: host programs may connect before any frontend does. */
	pthread_mutex_lock(&devs_lock);
	detached_poll_arm();
	pthread_mutex_unlock(&devs_lock);
	return 0;
}

void vsock_devs_destroy(void)
{
	unsigned int i;

	/*
	 * No alarm may serve a table from here on; cancelling waits for one that runs. Not
	 * under devs_lock, which it takes.
	 */
	pthread_mutex_lock(&devs_lock);
	detached_poll_stopping = true;
	pthread_mutex_unlock(&devs_lock);
	rte_eal_alarm_cancel(detached_poll, (void *)-1);
	pthread_mutex_lock(&devs_lock);
	detached_poll_armed = false;
	pthread_mutex_unlock(&devs_lock);
	/*
	 * Unregistering closes the connection: DPDK calls destroy_device (which takes
	 * the device off its worker) and removes the socket file. devs_lock must not be
	 * held here, since those callbacks take it.
	 */
	for (i = 0; i < nb_devs; i++) {
		struct vsock_dev *dev = devs[i];

		if (dev->registered && rte_vhost_driver_unregister(dev->conf.socket_path) < 0)
			VSOCK_LOG(ERR, "VM cid %" PRIu64 ": cannot unregister %s", dev->conf.cid,
				  dev->conf.socket_path);
		dev->registered = false;
		dev_close_endpoint(dev);
	}
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
