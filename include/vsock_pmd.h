/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_H
#define VSOCK_PMD_H

/**
 * dpdk-vsock: a poll-mode vhost-user backend for virtio-vsock.
 *
 * A program initialises the EAL, fills a struct vsock_pmd_conf and calls
 * vsock_pmd_start() on the main lcore. Every worker lcore of the EAL core
 * list then polls the virtqueues of the devices assigned to it; the main
 * lcore stays free for control work. vsock_pmd_stop() undoes everything.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/un.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Most vhost-user devices (VMs) one process serves. */
#define VSOCK_PMD_MAX_VMS 256
/** Packets handled per virtqueue per poll, as testpmd's "set burst". */
#define VSOCK_PMD_BURST_DEFAULT 32
#define VSOCK_PMD_BURST_MAX 512
/**
 * Bytes of guest buffers (headers included) one VM moves per queue in one round of its
 * worker, the first packet always taken: the rest waits for the VM's next round, so that
 * large packets leave the lcore to the other VMs between rounds (budget_cuts counts it).
 */
#define VSOCK_PMD_ROUND_BYTES (256u * 1024)
/** Payload mbufs per VM (its share of its NUMA node's pool): default and bounds. */
#define VSOCK_PMD_MBUFS_DEFAULT 8192
#define VSOCK_PMD_MBUFS_MIN 64
#define VSOCK_PMD_MBUFS_MAX (1u << 20)

/** Longest usable Unix socket path, without the terminating NUL. */
#define VSOCK_PMD_PATH_MAX (sizeof(((struct sockaddr_un *)0)->sun_path) - 1)

/** Guest-to-guest routing groups one VM may belong to (doc/multi-vm.md). */
#define VSOCK_PMD_MAX_VM_GROUPS 8
/** Distinct group names in one configuration. */
#define VSOCK_PMD_MAX_GROUPS 64
/** Longest group name, NUL included. */
#define VSOCK_PMD_GROUP_NAME_MAX 32

/*
 * Per-VM limits (struct vsock_pmd_vm_conf): bounds and the default a 0 field stands for
 * (doc/operators-guide.md, "Per-VM limits").
 */
/** Bytes held per connection for guest data the host has not read; our buf_alloc. */
#define VSOCK_PMD_TX_BUFFER_DEFAULT (256u * 1024)
#define VSOCK_PMD_TX_BUFFER_MIN 1024u
#define VSOCK_PMD_TX_BUFFER_MAX (64u * 1024 * 1024)
/** Largest virtqueue accepted: the default is the largest virtio allows. */
#define VSOCK_PMD_QUEUE_SIZE_MAX 32768u
/** Connections per VM, CONNECT lines in progress included. */
#define VSOCK_PMD_MAX_CONNS_DEFAULT 1023u
#define VSOCK_PMD_MAX_CONNS_MAX 16384u
/**
 * Pipe connections one VM holds at once: those its guest opens to other guests and to native
 * listeners, and those native programs open to it. The process's pool holds the sum of every
 * VM's max_pipes, so none can take another's. The default shares
 * VSOCK_PMD_PIPES_DEFAULT_TOTAL among the VMs, at least VSOCK_PMD_MAX_PIPES_DEFAULT_MIN each.
 */
#define VSOCK_PMD_PIPES_DEFAULT_TOTAL 1024u
#define VSOCK_PMD_MAX_PIPES_DEFAULT_MIN 16u
#define VSOCK_PMD_MAX_PIPES_MAX 16384u

/*
 * Open file descriptors (dpdk-vsock-app(8), DESCRIPTORS; doc/security-model.md). Besides one
 * host socket per connection, up to its max_conns (a guest-to-guest or native connection
 * holds none), a VM holds what follows; a process serving VMs needs RLIMIT_NOFILE for all of
 * them at once, or a guest at its limit takes descriptors from the others.
 */
/**
 * Held by each VM from vsock_pmd_start() on: its uds listener, that listener's epoll set, its
 * vhost-user listening socket.
 */
#define VSOCK_PMD_FDS_VM_OPEN 3u
/**
 * vhost-user connections of one VM at a time: the running frontend's and one more, a
 * reconnecting frontend's that DPDK accepts before it sees the old one closed. A third is
 * refused (closed at once, logged).
 */
#define VSOCK_PMD_FRONTEND_CONNS 2u
/**
 * Added by a VM while it runs: a host program's connect accepted only to be refused when the
 * table is full; per frontend connection its socket, up to 8 memory-region descriptors and the
 * kick and call eventfds of the 2 rings; our own copies of the running rings' kick eventfds.
 */
#define VSOCK_PMD_FDS_VM_RUN (1u + VSOCK_PMD_FRONTEND_CONNS * (1u + 8u + 2u * 2u) + 2u)
/** Held by each worker lcore: its wake-up eventfd and its two epoll sets. */
#define VSOCK_PMD_FDS_WORKER 3u
/** CONNECT-line and connect timeouts, in milliseconds. */
#define VSOCK_PMD_TIMEOUT_MS_DEFAULT 2000u
#define VSOCK_PMD_TIMEOUT_MS_MAX 3600000u

/** One VM: its context ID and where its sockets live. */
struct vsock_pmd_vm_conf {
	/** The guest's CID, returned by VHOST_USER_GET_CONFIG. */
	uint64_t cid;
	/** vhost-user socket QEMU connects to (the app is the server), unless @p client. */
	char socket_path[VSOCK_PMD_PATH_MAX + 1];
	/**
	 * Connect to socket_path instead, where the frontend listens, and connect again
	 * whenever the connection drops (RTE_VHOST_USER_CLIENT): the backend can then be
	 * restarted under a running frontend (doc/beyond-the-peers.md says what QEMU 7.2 does).
	 */
	bool client;
	/** Hybrid vsock Unix socket (Firecracker convention). */
	char uds_path[VSOCK_PMD_PATH_MAX + 1];
	/**
	 * Poll this VM on worker lcore @p lcore. Otherwise (false, the zeroed default) it goes
	 * to the worker with the fewest VMs when vsock_pmd_start() places them all.
	 */
	bool pinned;
	unsigned int lcore;
	/**
	 * Guest-to-guest routing: a guest may connect to another guest's CID only when both
	 * VMs share one of these groups (rust-vmm vhost-device-vsock's groups). None: the
	 * guest reaches the host only.
	 */
	unsigned int nb_groups;
	char groups[VSOCK_PMD_MAX_VM_GROUPS][VSOCK_PMD_GROUP_NAME_MAX];
	/*
	 * Limits; 0 stands for the default. vsock_pmd_vm_info_get() reports the values in force.
	 */
	/**
	 * Bytes held per connection for data from the guest the host has not read yet
	 * (VSOCK_PMD_TX_BUFFER_MIN..MAX, default VSOCK_PMD_TX_BUFFER_DEFAULT), advertised to
	 * the guest as buf_alloc: with it full the guest waits for credit, nothing is dropped.
	 * vhost-device-vsock's tx-buffer-size.
	 */
	uint32_t tx_buffer_size;
	/**
	 * Largest virtqueue accepted, 1..VSOCK_PMD_QUEUE_SIZE_MAX (the default): a frontend
	 * asking for a larger ring (SET_VRING_NUM) is refused. vhost-device-vsock's queue-size.
	 */
	uint32_t queue_size;
	/** Connections, 1..VSOCK_PMD_MAX_CONNS_MAX (default VSOCK_PMD_MAX_CONNS_DEFAULT). */
	uint32_t max_conns;
	/**
	 * Pipe connections (guest-to-guest and native API) at once, 1..VSOCK_PMD_MAX_PIPES_MAX;
	 * the next is refused (RST to the guest, -ENOBUFS to a native program) and counted in
	 * pipes_refused. Default: VSOCK_PMD_PIPES_DEFAULT_TOTAL / nb_vms, at least
	 * VSOCK_PMD_MAX_PIPES_DEFAULT_MIN.
	 */
	uint32_t max_pipes;
	/** A host program's CONNECT line must end within this (1..VSOCK_PMD_TIMEOUT_MS_MAX). */
	uint32_t line_timeout_ms;
	/**
	 * A connect must be answered within this (1..VSOCK_PMD_TIMEOUT_MS_MAX): the guest's
	 * RESPONSE to a host CONNECT, or another guest's accept of this guest's REQUEST.
	 */
	uint32_t connect_timeout_ms;
	/**
	 * Permission bits (e.g. 0660) of uds_path and, unless @p client (the frontend owns
	 * socket_path then), of socket_path. Whoever may connect to uds_path can talk to the
	 * guest. 0: as the process umask makes them (0755 under the usual 022: the owner only).
	 */
	uint32_t socket_mode;
	/** Give those sockets to group @p socket_gid; otherwise they keep the process's group. */
	bool socket_group_set;
	uint32_t socket_gid;
};

/** How a worker lcore waits when its rings and sockets have nothing for it. */
enum vsock_pmd_wait_mode {
	/** Keep polling: the guest never needs to kick us (the default). */
	VSOCK_PMD_WAIT_POLL = 0,
	/**
	 * Sleep in epoll on the guests' kick eventfds and the host sockets, as the kernel's
	 * vhost-vsock and rust-vmm's vhost-device-vsock do. For comparisons: it costs a guest
	 * kick (a VM exit on real hardware) and a wakeup per idle-to-busy transition.
	 */
	VSOCK_PMD_WAIT_NOTIFY,
	/**
	 * Poll while there is work and for idle_us after it; then back off (pause instructions
	 * between polls, for idle_us more); then sleep as VSOCK_PMD_WAIT_NOTIFY does until a
	 * guest kick or a host socket wakes the lcore, which polls again. Idle VMs cost almost
	 * no CPU; the first packet after a sleep pays one wakeup (doc/beyond-the-peers.md).
	 */
	VSOCK_PMD_WAIT_ADAPTIVE,
};

/** VSOCK_PMD_WAIT_ADAPTIVE: microseconds without work before backing off. */
#define VSOCK_PMD_IDLE_US_DEFAULT 1000
#define VSOCK_PMD_IDLE_US_MAX 10000000

/** Everything vsock_pmd_start() needs. */
struct vsock_pmd_conf {
	/** Packets per virtqueue per poll, 1..VSOCK_PMD_BURST_MAX. */
	unsigned int burst;
	/**
	 * Publish every used entry with its own used->idx store (the kernel's behaviour before
	 * used-ring batching) instead of one store per burst. For comparisons only.
	 */
	bool used_per_entry;
	enum vsock_pmd_wait_mode wait_mode;
	/**
	 * VSOCK_PMD_WAIT_ADAPTIVE: idle time before the backoff, 1..VSOCK_PMD_IDLE_US_MAX;
	 * 0 means VSOCK_PMD_IDLE_US_DEFAULT.
	 */
	unsigned int idle_us;
	/**
	 * Payload mbufs per VM, VSOCK_PMD_MBUFS_MIN..VSOCK_PMD_MBUFS_MAX: the VMs polled from
	 * one NUMA node share one pool of this many times their number. When it runs out, data
	 * waits (in the guest's ring or the host socket) instead of being dropped.
	 */
	unsigned int mbufs_per_vm;
	unsigned int nb_vms;
	struct vsock_pmd_vm_conf vms[VSOCK_PMD_MAX_VMS];
};

/**
 * Fill @p conf with the defaults: no VM, burst VSOCK_PMD_BURST_DEFAULT, batched, polling,
 * VSOCK_PMD_MBUFS_DEFAULT mbufs per VM.
 */
void vsock_pmd_conf_init(struct vsock_pmd_conf *conf);

/**
 * Check that no VM's sockets overlap another's, as vsock_pmd_start() does first. A guest
 * connecting to host port P reaches "<uds_path>_<P>", so no socket_path or uds_path of any VM
 * may be a uds_path (of any VM, its own included) followed by '_' and digits, and no two of
 * those paths may be the same. Paths are compared with their directory resolved (realpath():
 * "/r/./v" and "/r/v" are one path). Needs no EAL.
 *
 * @return 0, or -EINVAL with a sentence naming both VMs and both keys in @p err.
 */
int vsock_pmd_conf_check_paths(const struct vsock_pmd_conf *conf, char *err, size_t err_len);

/**
 * Register every VM's vhost-user socket and start polling on all worker
 * lcores. Call once, on the main lcore, after rte_eal_init().
 *
 * @return 0, or a negative errno value (-EINVAL for a configuration
 *   vsock_pmd_conf_check_paths() refuses, -EEXIST when something other than a socket is
 *   at a VM's socket path); on failure nothing is left behind (no socket file, no lcore
 *   running).
 */
int vsock_pmd_start(const struct vsock_pmd_conf *conf);

/**
 * Detach every guest, stop the worker lcores and remove the sockets.
 * Safe to call when vsock_pmd_start() failed or was never called.
 */
void vsock_pmd_stop(void);

/*
 * Operating a running accelerator: statistics and live settings.
 *
 * Every function below may be called from any control thread (the main lcore, a
 * console, the telemetry thread) while vsock_pmd_start() is in effect; before it and
 * after vsock_pmd_stop() they return -ENODEV. None of them slows the datapath: the
 * worker lcores keep plain per-lcore counters that these calls only read.
 */

/** "Every VM" for vsock_pmd_stats_clear(). */
#define VSOCK_PMD_CID_ALL UINT64_MAX
/** Room for the named error counters of one VM (protocol errors by kind). */
#define VSOCK_PMD_ERR_MAX 48
/** Longest connection state or error name, NUL included. */
#define VSOCK_PMD_NAME_MAX 24

/** A VM's two virtqueues, as virtio-vsock numbers them. */
enum vsock_pmd_queue {
	VSOCK_PMD_Q_RX = 0,	/**< host -> guest */
	VSOCK_PMD_Q_TX = 1,	/**< guest -> host */
	VSOCK_PMD_NB_QUEUES
};

/** Counters of one virtqueue. */
struct vsock_pmd_queue_stats {
	uint64_t packets;		/**< descriptor chains completed */
	uint64_t bursts;		/**< polls that moved at least one packet */
	uint64_t used_idx_flushes;	/**< used->idx stores (batches made visible) */
	uint64_t interrupts;		/**< interrupts sent to the guest */
	uint64_t kicks;			/**< guest notifications seen (polled: needs none) */
	uint64_t ring_errors;		/**< malformed chains (the queue is then stopped) */
	/** Bursts cut at VSOCK_PMD_ROUND_BYTES: the rest waited for the next round. */
	uint64_t budget_cuts;
	/** Bursts by packets moved, counted while record-burst-stats is on. */
	uint64_t burst_hist[VSOCK_PMD_BURST_MAX + 1];
};

/** One named error counter, e.g. { "hdr_op", 2 }. */
struct vsock_pmd_err_count {
	char name[VSOCK_PMD_NAME_MAX];
	uint64_t count;
};

/** Counters of one VM since start (or since the last vsock_pmd_stats_clear()). */
struct vsock_pmd_vm_stats {
	uint64_t cid;
	uint64_t from_guest_pkts;	/**< vsock packets taken from the guest */
	uint64_t from_guest_bytes;	/**< their payload bytes */
	uint64_t to_guest_pkts;		/**< vsock packets written to the guest */
	uint64_t to_guest_bytes;	/**< their payload bytes */
	uint64_t host_read_bytes;	/**< read from host sockets */
	uint64_t host_written_bytes;	/**< written to host sockets */
	struct vsock_pmd_queue_stats q[VSOCK_PMD_NB_QUEUES];
	uint64_t conns_opened;		/**< connections established */
	uint64_t conns_closed;		/**< ended by shutdown or a peer's close */
	uint64_t conns_reset;		/**< ended by an RST we sent (error, timeout) */
	uint64_t conns_refused;		/**< connects nobody accepted (host: no guest attached) */
	uint64_t conns_table_full;	/**< connects refused: connection table full */
	uint64_t pipes_refused;		/**< pipe connects refused: max_pipes in use */
	uint64_t credit_stalls;		/**< host data held back: the guest had no credit */
	uint64_t mempool_exhausted;	/**< packets left in the ring: no buffer */
	uint64_t tx_backpressure;	/**< guest bursts cut short by the connections */
	uint64_t rx_ring_full;		/**< polls with data owed and no guest buffer */
	uint64_t rst_dropped;		/**< RSTs not sent: their queue was full */
	uint64_t short_packets;		/**< tx chains shorter than a header */
	uint64_t small_rx_buffers;	/**< rx buffers too small for a header */
	uint64_t errors_total;		/**< sum of errors[] */
	unsigned int nb_errors;
	/** Protocol errors by kind: hdr_* (bad header), conn_* (protocol), ring_* (virtqueue). */
	struct vsock_pmd_err_count errors[VSOCK_PMD_ERR_MAX];
};

/** Counters of one worker lcore. */
struct vsock_pmd_lcore_stats {
	unsigned int lcore_id;
	unsigned int nb_vms;		/**< VMs it polls now */
	uint64_t polls;			/**< rounds over its VMs */
	uint64_t busy_polls;		/**< rounds that found work; the rest were empty */
	/**
	 * Sleeps (wait modes notify and adaptive) that ran to their timeout while a guest tx
	 * buffer waited that no kick announced: a kick lost between the guest and us. Never
	 * expected with a driver that follows the spec; each one delayed a packet by the
	 * sleep's timeout.
	 */
	uint64_t lost_kicks;
	/**
	 * Sleeps (wait modes notify and adaptive) that a wake ended: the far side of a
	 * guest-to-guest or native connection changed it (or the control side had a request)
	 * while the worker slept, rather than a guest kick, a host socket or the timeout.
	 */
	uint64_t wakeups;
	/* While record-core-cycles is on: */
	uint64_t cycles;		/**< TSC cycles of all rounds */
	uint64_t busy_cycles;		/**< TSC cycles of busy rounds */
	uint64_t cycles_pkts;		/**< packets those busy rounds moved */
};

/** What a VM is doing now (not counters: never cleared). */
struct vsock_pmd_vm_info {
	uint64_t cid;
	char socket_path[VSOCK_PMD_PATH_MAX + 1];
	char uds_path[VSOCK_PMD_PATH_MAX + 1];
	bool running;		/**< a guest driver is attached and its rings are polled */
	int lcore;		/**< lcore polling it, -1 when not running */
	unsigned int placed_lcore;	/**< lcore that polls it whenever a guest is attached */
	bool pinned;		/**< placed by configuration (lcore=), not balanced */
	int numa_socket;	/**< NUMA node of its connection table and mbufs */
	unsigned int nb_groups;	/**< guest-to-guest routing groups, as configured */
	char groups[VSOCK_PMD_MAX_VM_GROUPS][VSOCK_PMD_GROUP_NAME_MAX];
	uint32_t socket_mode;	/**< as configured (vsock_pmd_vm_conf), 0: the umask's */
	bool socket_group_set;
	uint32_t socket_gid;
	uint64_t features;	/**< virtio features negotiated (valid while running) */
	uint16_t ring_size[VSOCK_PMD_NB_QUEUES];
	bool ring_broken[VSOCK_PMD_NB_QUEUES];	/**< stopped: the guest broke the ring */
	uint32_t conns;		/**< open connections */
	uint32_t pipes;		/**< pipe connections of its share in use */
	/* The limits in force (struct vsock_pmd_vm_conf, defaults filled in). */
	uint32_t tx_buffer_size;
	uint32_t queue_size;
	uint32_t max_conns;
	uint32_t max_pipes;
	uint32_t line_timeout_ms;
	uint32_t connect_timeout_ms;
};

/** Settings in force. */
struct vsock_pmd_config {
	unsigned int main_lcore;
	unsigned int nb_lcores;		/**< worker lcores */
	unsigned int nb_vms;
	unsigned int burst;
	bool paused;			/**< vsock_pmd_pause() in effect */
	bool record_burst_stats;
	bool record_core_cycles;
	uint64_t tsc_hz;		/**< for cycles and rates */
};

/** One connection, as vsock_pmd_conns_get() reports it. */
struct vsock_pmd_conn_info {
	uint32_t guest_port;
	uint32_t host_port;
	char type[VSOCK_PMD_NAME_MAX];	/**< "stream" or "seqpacket" */
	char state[VSOCK_PMD_NAME_MAX];	/**< "connecting", "established", "closing", ... */
	/* Byte counters of the vsock protocol: they wrap at 2^32. */
	uint32_t from_guest_bytes;	/**< received from the guest (its sender-side tx_cnt) */
	uint32_t to_guest_bytes;	/**< sent to the guest (our sender-side tx_cnt) */
	/* Credit both ways: what each side may still send before it must wait. */
	uint32_t guest_credit;		/**< bytes the guest may still send us */
	uint32_t our_buf_alloc;		/**< our receive buffer, as advertised */
	uint32_t host_credit;		/**< bytes we may still send the guest */
	uint32_t peer_buf_alloc;	/**< the guest's receive buffer */
	uint32_t queued_to_host;	/**< guest bytes waiting for the host socket */
	uint32_t queued_to_guest;	/**< host bytes waiting for guest buffers or credit */
	/** The far side: 2 for the host (a socket or a native program), else another guest. */
	uint64_t peer_cid;
};

/** Settings in force. @return 0 or -ENODEV. */
int vsock_pmd_config_get(struct vsock_pmd_config *conf);

/**
 * What the process holds now, for leak checks and capacity planning: after every guest and
 * host program of a VM went away, each value returns to what it was before they came.
 */
struct vsock_pmd_resources {
	uint64_t mbufs_total;	/**< payload mbufs of every pool (mbufs_per_vm x VMs) */
	/** Of those, the ones holding queued data (per-lcore caches count as free). */
	uint64_t mbufs_in_use;
	uint32_t conns;		/**< open connections of every VM, CONNECT lines included */
	int64_t open_fds;	/**< file descriptors the process has open, -1 if unknown */
	uint64_t rss_bytes;	/**< resident memory of the process, 0 if unknown */
};

/** Read the resources in use. @return 0 or -ENODEV. */
int vsock_pmd_resources_get(struct vsock_pmd_resources *res);

/** Most entries vsock_pmd_memory_get() lists. */
#define VSOCK_PMD_MEM_POOLS_MAX 32

/**
 * One block of DPDK memory the engine holds: a payload mempool (@p objects mbufs), or a
 * memzone it reserved for rings and tables (@p objects 0).
 */
struct vsock_pmd_mem_pool {
	char name[32];		/**< the mempool's or memzone's name, e.g. "vsock_payload_0" */
	int socket;		/**< NUMA node */
	uint32_t objects;	/**< mbufs in the pool */
	uint32_t obj_bytes;	/**< bytes per mbuf, the mempool's header and trailer included */
	uint32_t in_use;	/**< mbufs taken (per-lcore caches count as free) */
	/** Memzones: how many add up here ("RG_vsock_accept_*": one ring per listener). */
	uint32_t memzones;
	/** DPDK memory it holds: for a mempool its header, object chunks and ring memzones. */
	uint64_t bytes;
};

/** DPDK memory: what the EAL has and what the engine's pools take of it. */
struct vsock_pmd_memory {
	uint64_t heap_bytes;		/**< DPDK heap of every NUMA node, as the EAL has it now */
	uint64_t heap_used_bytes;	/**< of which allocated (by the engine, vhost, EAL) */
	/** Hugepages with dynamic memory: the heap grows on demand (--no-huge: fixed at -m). */
	bool can_grow;
	uint64_t pools_bytes;		/**< sum of pools[].bytes */
	unsigned int nb_pools;
	struct vsock_pmd_mem_pool pools[VSOCK_PMD_MEM_POOLS_MAX];
};

/** Read the DPDK memory in use, pool by pool. @return 0 or -ENODEV. */
int vsock_pmd_memory_get(struct vsock_pmd_memory *mem);

/** State of VM number @p idx (0..nb_vms-1, command-line order). @return 0, -ENODEV, -ENOENT. */
int vsock_pmd_vm_info_get(unsigned int idx, struct vsock_pmd_vm_info *info);

/** Counters of VM @p cid. @return 0, -ENODEV, or -ENOENT (no such VM). */
int vsock_pmd_vm_stats_get(uint64_t cid, struct vsock_pmd_vm_stats *st);

/** Counters of worker lcore number @p idx (0..nb_lcores-1). @return 0, -ENODEV, -ENOENT. */
int vsock_pmd_lcore_stats_get(unsigned int idx, struct vsock_pmd_lcore_stats *st);

/**
 * Restart the counters of VM @p cid, or of every VM and lcore (VSOCK_PMD_CID_ALL), from
 * zero as the getters see them. @return 0, -ENODEV, -ENOENT.
 */
int vsock_pmd_stats_clear(uint64_t cid);

/**
 * The connections of VM @p cid: up to @p max of them into @p out, read on the VM's lcore
 * between two polls. @return the number of open connections (may exceed @p max),
 * -ENODEV, -ENOENT.
 */
int vsock_pmd_conns_get(uint64_t cid, struct vsock_pmd_conn_info *out, unsigned int max);

/**
 * Every connection of VM @p cid in one snapshot, into an array malloc()ed for them
 * (*@p out, free() it; NULL when there are none). @return how many, -ENOMEM, -ENODEV,
 * -ENOENT.
 */
int vsock_pmd_conns_get_all(uint64_t cid, struct vsock_pmd_conn_info **out);

/** Packets per virtqueue per poll for every VM, at once. @return 0, -ENODEV, -EINVAL. */
int vsock_pmd_set_burst(unsigned int burst);

/** Count bursts by size (the histogram of struct vsock_pmd_queue_stats). */
int vsock_pmd_set_record_burst_stats(bool on);

/** Measure the cycles of every poll on every lcore (cycles per packet). */
int vsock_pmd_set_record_core_cycles(bool on);

/**
 * Stop polling: returns once no poll is in progress. The rings keep their descriptors and
 * host sockets their data; guests may attach and detach meanwhile. @return 0 or -ENODEV.
 */
int vsock_pmd_pause(void);

/** Poll again after vsock_pmd_pause(). @return 0 or -ENODEV. */
int vsock_pmd_resume(void);

#ifdef __cplusplus
}
#endif

#endif /* VSOCK_PMD_H */
