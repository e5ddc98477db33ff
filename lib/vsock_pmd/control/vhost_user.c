/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost-user glue: one librte_vhost socket per VM, GET_CONFIG answered with the VM's CID,
 * the messages that change a running device's rings, and the device lifecycle handed to the
 * polling workers. The device itself (its table, its rings, its connection table) is
 * device.c's.
 *
 * Every callback here runs on DPDK's vhost-events control thread, never on a polling lcore.
 * The device lock serialises them; workers never take it.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/types.h>

#include <linux/virtio_config.h>
#include <linux/virtio_vsock.h>

#include <rte_byteorder.h>
#include <rte_vhost.h>

#include "conn.h"
#include "detached_host_poll.h"
#include "device.h"
#include "ep_sibling.h"
#include "log.h"
#include "sock_path.h"
#include "vhost_user.h"
#include "vhost_user_msg.h"
#include "worker.h"

/* Features the device offers. VHOST_USER_F_PROTOCOL_FEATURES is needed for GET_CONFIG. */
#define VSOCK_FEATURES \
	((1ULL << VIRTIO_F_VERSION_1) | (1ULL << VHOST_USER_F_PROTOCOL_FEATURES) | \
	 (1ULL << VIRTIO_RING_F_INDIRECT_DESC) | (1ULL << VIRTIO_RING_F_EVENT_IDX) | \
	 (1ULL << VIRTIO_VSOCK_F_SEQPACKET) | (1ULL << VIRTIO_F_RING_PACKED))
#define VSOCK_PROTOCOL_FEATURES (1ULL << VHOST_USER_PROTOCOL_F_CONFIG)

/*
 * Every frontend connection maps to its VM here, from new_connection to
 * destroy_connection. Several may exist at once for one VM (DPDK accepts a
 * reconnecting QEMU before it notices the old connection closed), but only
 * the one in dev->dp.vid drives the rings. Under the device lock.
 */
#define VSOCK_MAX_VIDS 1024	/* librte_vhost's MAX_VHOST_DEVICE */
static struct vsock_dev *vid_devs[VSOCK_MAX_VIDS];

static struct vsock_dev *vid_dev(int vid)
{
	return vid >= 0 && vid < VSOCK_MAX_VIDS ? vid_devs[vid] : NULL;
}

/* The device @p vid drives, or NULL if @p vid is not the running frontend of its VM. */
static struct vsock_dev *vid_running_dev(int vid)
{
	struct vsock_dev *dev = vid_dev(vid);

	return dev && dev->running && dev->dp.vid == vid ? dev : NULL;
}

/* The device whose vhost-user socket is @p path. */
static struct vsock_dev *path_dev(const char *path)
{
	unsigned int i;

	for (i = 0; i < vsock_devs_count(); i++) {
		struct vsock_dev *dev = vsock_dev_at(i);

		if (strcmp(dev->conf.socket_path, path) == 0)
			return dev;
	}
	return NULL;
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

static enum rte_vhost_msg_result pre_msg_handle(int vid, void *raw)
{
	struct vhost_user_msg *msg = raw;
	enum rte_vhost_msg_result res = RTE_VHOST_MSG_RESULT_NOT_HANDLED;
	struct vsock_dev *dev;

	vsock_devs_lock();
	dev = vid_dev(vid);
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
			detached_host_poll_arm();
		}
		if (msg->request == VHOST_USER_SET_VRING_BASE &&
		    msg->payload.state.index < VSOCK_NR_VQ)
			dev->rebase[msg->payload.state.index] = true;
		break;
	default:
		break;
	}
out:
	vsock_devs_unlock();
	return res;
}

static enum rte_vhost_msg_result post_msg_handle(int vid, void *raw)
{
	struct vhost_user_msg *msg = raw;
	struct vsock_dev *dev;

	vsock_devs_lock();
	dev = vid_dev(vid);
	/*
	 * Any message may complete what a change left half done (SET_MEM_TABLE before the
	 * SET_VRING_ADDR that moves the rings into the new memory): try again after each.
	 */
	if (dev && dev->remapping && dev->running && dev->dp.vid == vid) {
		if (vsock_dev_load_rings(dev, true) == 0) {
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
	vsock_devs_unlock();
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
	vsock_devs_lock();
	dev = path_dev(path);
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
	vsock_devs_unlock();
	return rc;
}

static void destroy_connection(int vid)
{
	struct vsock_dev *dev;

	vsock_devs_lock();
	dev = vid_dev(vid);
	if (dev) {
		vid_devs[vid] = NULL;
		dev->frontend_conns--;
		VSOCK_LOG(INFO, "VM cid %" PRIu64 ": frontend disconnected (vid %d)",
			  dev->conf.cid, vid);
	}
	vsock_devs_unlock();
}

static int new_device(int vid)
{
	struct vsock_dev *dev;
	int rc = -1;

	vsock_devs_lock();
	dev = vid_dev(vid);
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
	if (vsock_dev_load_rings(dev, false) < 0)
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
	vsock_devs_unlock();
	return rc;
}

static void destroy_device(int vid)
{
	struct vsock_dev *dev;
	uint16_t q;

	vsock_devs_lock();
	dev = vid_running_dev(vid);
	if (!dev)
		goto out;
	if (!dev->remapping)
		worker_detach(dev->worker, &dev->dp);
	vsock_dev_rings_detached(dev);
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
	detached_host_poll_arm();
	VSOCK_LOG(INFO, "VM cid %" PRIu64 ": stopped", dev->conf.cid);
out:
	vsock_devs_unlock();
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

static int vsock_dev_vhost_register(struct vsock_dev *dev)
{
	const char *path = dev->conf.socket_path;
	mode_t old_umask;
	int rc;

	/*
	 * A client's socket is the frontend's: DPDK connects, and reconnects every second
	 * until it is back if it goes away.
	 */
	if (!dev->conf.client) {
		rc = vm_sock_clear_stale(&dev->conf, "socket", path);
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
	 * there to vm_sock_perm_end() only our own user can connect. A client's socket is the
	 * frontend's, made with the frontend's permissions: socket-mode/-group leave it alone.
	 */
	old_umask = dev->conf.client ? 0 : vm_sock_perm_begin(&dev->conf);
	rc = rte_vhost_driver_start(path);
	if (!dev->conf.client && vm_sock_perm_end(&dev->conf, rc < 0 ? NULL : path, old_umask) < 0)
		return -EPERM;
	if (rc < 0) {
		VSOCK_LOG(ERR, "VM cid %" PRIu64 ": cannot start vhost-user socket %s",
			  dev->conf.cid, path);
		return -EIO;
	}
	VSOCK_LOG(INFO, "VM cid %" PRIu64 ": vhost-user socket %s", dev->conf.cid, path);
	return 0;
}

int vsock_vhost_start(void)
{
	unsigned int i;
	int rc;

	for (i = 0; i < vsock_devs_count(); i++) {
		struct vsock_dev *dev = vsock_dev_at(i);

		rc = vsock_dev_vhost_register(dev);
		if (rc < 0)
			return rc;
		VSOCK_LOG(INFO, "VM cid %" PRIu64 ": placed on lcore %u (%s), NUMA node %d",
			  dev->conf.cid, worker_lcore(dev->worker),
			  dev->conf.pinned ? "pinned" : "balanced", dev->numa_node);
	}
	return 0;
}

void vsock_vhost_stop(void)
{
	unsigned int i;

	for (i = 0; i < vsock_devs_count(); i++) {
		struct vsock_dev *dev = vsock_dev_at(i);

		if (dev->registered && rte_vhost_driver_unregister(dev->conf.socket_path) < 0)
			VSOCK_LOG(ERR, "VM cid %" PRIu64 ": cannot unregister %s", dev->conf.cid,
				  dev->conf.socket_path);
		dev->registered = false;
	}
}
