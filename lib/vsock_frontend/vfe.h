/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vfe: a userspace vhost-user frontend, for the tests and the benchmark.
 *
 * It plays both QEMU (the vhost-user control messages, guest memory shared
 * through a memfd) and the guest's virtio driver (split or packed virtqueues),
 * in the calling process, so that tests and vsock-perf drive the backend without a VM.
 *
 * Layers, each usable on its own:
 *   struct vfe_conn   one vhost-user connection and its messages;
 *   struct vfe_mem    guest memory, optionally split into several regions;
 *   struct vfe_vq     the driver side of one virtqueue, split or packed;
 *   struct vfe_vsock  a whole vhost-user-vsock device, attached as QEMU does.
 *
 * Every call returns 0 (or a documented non-negative value) or a negative
 * errno value; nothing exits the process. When a call fails because of what
 * the backend did, vfe_conn.err says what was seen. Not thread-safe: use one
 * object from one thread.
 */
#ifndef VSOCK_FRONTEND_VFE_H
#define VSOCK_FRONTEND_VFE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/virtio_ring.h>
#include <linux/virtio_vsock.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------- */
/* vhost-user protocol (QEMU docs/interop/vhost-user.rst)                  */

/** Front-end request codes this library knows by name. */
enum vfe_request {
	VFE_REQ_GET_FEATURES = 1,
	VFE_REQ_SET_FEATURES = 2,
	VFE_REQ_SET_OWNER = 3,
	VFE_REQ_RESET_OWNER = 4,
	VFE_REQ_SET_MEM_TABLE = 5,
	VFE_REQ_SET_VRING_NUM = 8,
	VFE_REQ_SET_VRING_ADDR = 9,
	VFE_REQ_SET_VRING_BASE = 10,
	VFE_REQ_GET_VRING_BASE = 11,
	VFE_REQ_SET_VRING_KICK = 12,
	VFE_REQ_SET_VRING_CALL = 13,
	VFE_REQ_GET_PROTOCOL_FEATURES = 15,
	VFE_REQ_SET_PROTOCOL_FEATURES = 16,
	VFE_REQ_GET_QUEUE_NUM = 17,
	VFE_REQ_SET_VRING_ENABLE = 18,
	VFE_REQ_GET_CONFIG = 24,
};

/** Header flags. */
#define VFE_MSG_VERSION 0x1u
#define VFE_MSG_VERSION_MASK 0x3u
#define VFE_MSG_REPLY 0x4u
#define VFE_MSG_NEED_REPLY 0x8u

/** Feature bit 30: the backend speaks GET/SET_PROTOCOL_FEATURES. */
#define VFE_F_PROTOCOL_FEATURES 30

/** Protocol feature bits. */
#define VFE_PROTOCOL_F_MQ 0
#define VFE_PROTOCOL_F_REPLY_ACK 3
#define VFE_PROTOCOL_F_CONFIG 9

/** Kick/call payload: bit 8 set means "no file descriptor" (polling). */
#define VFE_VRING_NOFD 0x100u

#define VFE_MAX_REGIONS 8
#define VFE_CONFIG_MAX 256
#define VFE_MAX_FDS VFE_MAX_REGIONS

struct vfe_vring_state {
	uint32_t index;
	uint32_t num;
};

struct vfe_vring_addr {
	uint32_t index;
	uint32_t flags;
	/* Front-end (QEMU) virtual addresses, translated through the mem table. */
	uint64_t desc;
	uint64_t used;
	uint64_t avail;
	uint64_t log;
};

struct vfe_mem_region_desc {
	uint64_t gpa;
	uint64_t size;
	uint64_t uaddr;
	uint64_t mmap_offset;
};

struct vfe_mem_table {
	uint32_t nregions;
	uint32_t padding;
	struct vfe_mem_region_desc region[VFE_MAX_REGIONS];
};

struct vfe_config {
	uint32_t offset;
	uint32_t size;
	uint32_t flags;
	uint8_t data[VFE_CONFIG_MAX];
};

/** One message as it travels on the socket: 12-byte header, payload. */
struct vfe_msg {
	uint32_t request;
	uint32_t flags;
	uint32_t size;
	union {
		uint64_t u64;
		struct vfe_vring_state state;
		struct vfe_vring_addr addr;
		struct vfe_mem_table mem;
		struct vfe_config config;
		uint8_t raw[sizeof(struct vfe_config)];
	} p;
} __attribute__((packed));

#define VFE_MSG_HDR_SIZE 12u

/* ---------------------------------------------------------------------- */
/* Connection                                                              */

struct vfe_conn {
	int fd;
	/** How long to wait for one reply before -ETIMEDOUT. */
	unsigned int reply_timeout_ms;
	/** Protocol features sent with SET_PROTOCOL_FEATURES (REPLY_ACK use). */
	uint64_t protocol_features;
	/** Why the last call failed, when the backend was the cause. */
	char err[192];
};

/**
 * Connect to the backend's vhost-user socket at @p path, retrying while it
 * does not exist or refuses, for up to @p timeout_ms.
 */
int vfe_conn_open(struct vfe_conn *c, const char *path, unsigned int timeout_ms);

/** Close the socket (as a killed QEMU would); safe on a closed connection. */
void vfe_conn_close(struct vfe_conn *c);

/** Send one message (header + m->size payload bytes) with @p nfds fds. */
int vfe_conn_send(struct vfe_conn *c, const struct vfe_msg *m, const int *fds,
		unsigned int nfds);

/**
 * Receive one reply to @p request: checks the request code, the reply and
 * version flags and, if @p size is not 0, the payload size.
 */
int vfe_conn_recv(struct vfe_conn *c, uint32_t request, uint32_t size, struct vfe_msg *m);

/**
 * Send a request that has no reply of its own; if REPLY_ACK is negotiated
 * ask for the acknowledgement and return -EIO when the backend reports
 * failure.
 */
int vfe_conn_request(struct vfe_conn *c, struct vfe_msg *m, const int *fds, unsigned int nfds);

/**
 * Round trip (GET_FEATURES) to be sure the backend has handled every message
 * sent before: without REPLY_ACK, set requests are not answered.
 */
int vfe_conn_sync(struct vfe_conn *c);

int vfe_get_features(struct vfe_conn *c, uint64_t *features);
int vfe_set_features(struct vfe_conn *c, uint64_t features);
int vfe_set_owner(struct vfe_conn *c);
int vfe_get_protocol_features(struct vfe_conn *c, uint64_t *features);
/** Also records @p features so that later requests honour REPLY_ACK. */
int vfe_set_protocol_features(struct vfe_conn *c, uint64_t features);
int vfe_get_queue_num(struct vfe_conn *c, uint64_t *num);
/** Read @p size bytes of device config space at @p offset into @p buf. */
int vfe_get_config(struct vfe_conn *c, uint32_t offset, uint32_t size, void *buf);
/** The guest CID from virtio-vsock config space (le64 at offset 0). */
int vfe_get_config_cid(struct vfe_conn *c, uint64_t *cid);
struct vfe_mem;
/** Send every region of @p mem, one fd per region. */
int vfe_set_mem_table(struct vfe_conn *c, const struct vfe_mem *mem);
int vfe_set_vring_num(struct vfe_conn *c, uint32_t index, uint32_t num);
int vfe_set_vring_addr(struct vfe_conn *c, const struct vfe_vring_addr *addr);
int vfe_set_vring_base(struct vfe_conn *c, uint32_t index, uint32_t base);
/** Stop ring @p index; the backend answers with its next avail index. */
int vfe_get_vring_base(struct vfe_conn *c, uint32_t index, uint32_t *base);
/** @p fd < 0 sends VFE_VRING_NOFD. */
int vfe_set_vring_kick(struct vfe_conn *c, uint32_t index, int fd);
int vfe_set_vring_call(struct vfe_conn *c, uint32_t index, int fd);
int vfe_set_vring_enable(struct vfe_conn *c, uint32_t index, bool enable);

/* ---------------------------------------------------------------------- */
/* Guest memory                                                            */

struct vfe_mem_conf {
	/** Total bytes; a multiple of the page size. 0 means 8 MiB. */
	size_t size;
	/** Regions, 1..VFE_MAX_REGIONS; 0 means 1. Sizes are equal. */
	unsigned int nregions;
	/** Guest-physical address of region 0. */
	uint64_t gpa_base;
	/**
	 * Guest-physical hole between consecutive regions. 0 makes them
	 * adjacent, so one buffer may span two regions (the backend maps each
	 * region separately and must translate such a buffer in pieces).
	 */
	uint64_t gap;
};

struct vfe_mem_region {
	uint64_t gpa;
	uint64_t size;
	/** Offset of the region in the memfd (and in vfe_mem.base). */
	uint64_t offset;
};

/** One memfd, mapped once here; regions are consecutive slices of it. */
struct vfe_mem {
	int fd;
	uint8_t *base;
	size_t size;
	unsigned int nregions;
	struct vfe_mem_region region[VFE_MAX_REGIONS];
	/** Bump allocator: next free offset in the memfd. */
	size_t brk;
};

int vfe_mem_init(struct vfe_mem *m, const struct vfe_mem_conf *conf);
void vfe_mem_fini(struct vfe_mem *m);

/**
 * Pointer to guest-physical [gpa, gpa + len), or NULL if any byte of it is
 * outside guest memory (a gap between regions included).
 */
void *vfe_mem_ptr(const struct vfe_mem *m, uint64_t gpa, size_t len);

/** Guest-physical address of @p p (inside vfe_mem.base), or UINT64_MAX. */
uint64_t vfe_mem_gpa(const struct vfe_mem *m, const void *p);

/**
 * Zeroed guest memory of @p len bytes aligned to @p align (a power of 2),
 * never spanning two regions. Returns NULL when full; @p gpa may be NULL.
 * Nothing is ever freed: size the memory for the test.
 */
void *vfe_mem_alloc(struct vfe_mem *m, size_t len, size_t align, uint64_t *gpa);

/* ---------------------------------------------------------------------- */
/* Virtqueue (split or packed), driver side                               */

/** One buffer of a chain. */
struct vfe_buf {
	uint64_t gpa;
	uint32_t len;
	/** Device-writable (VRING_DESC_F_WRITE). */
	bool writable;
};

/** Packed: a chain's first descriptor, whose flags publish it. */
struct vfe_vq_pending {
	uint16_t idx;
	uint16_t flags;
};

/**
 * Per-head bookkeeping, kept outside guest memory so that whatever the
 * backend writes there cannot corrupt the driver's free list.
 */
struct vfe_vq_slot {
	void *cookie;
	/** Descriptors of the chain starting here; 0 when not in flight. */
	uint16_t ndesc;
	/** Next descriptor in the chain or in the free list. */
	uint16_t next;
};

/** Wrap counter bit of a packed ring position (vhost-user vring base encoding). */
#define VFE_PACKED_WRAP 0x8000u

/**
 * The rings live in guest memory and are public so that hostile tests can
 * write descriptors and indices directly.
 *
 * Packed layout (vfe_vq_init_packed()): desc/avail/used are the descriptor
 * ring and the driver and device event suppression structures. avail_idx,
 * last_used and kicked_avail then count ring descriptors, free-running: count
 * c is ring index c % num with wrap counter 1 on even laps (c / num), so
 * that a test can do the same arithmetic on either layout (one-descriptor
 * chains make used entries and descriptors the same).
 */
struct vfe_vq {
	struct vfe_mem *mem;
	uint16_t num;
	/** VIRTIO_F_RING_PACKED layout. */
	bool packed;
	union {
		struct vring_desc *desc;
		struct vring_packed_desc *pdesc;
	};
	union {
		struct vring_avail *avail;
		struct vring_packed_desc_event *driver_event;
	};
	union {
		struct vring_used *used;
		struct vring_packed_desc_event *device_event;
	};
	uint64_t desc_gpa;
	uint64_t avail_gpa;
	uint64_t used_gpa;
	/** eventfds, non-blocking: the driver writes kick, the device call. */
	int kick_fd;
	int call_fd;
	/** VIRTIO_RING_F_EVENT_IDX negotiated: used_event/avail_event apply. */
	bool event_idx;
	/** With event_idx, vfe_vq_get_used() asks for a call per used entry. */
	bool track_used_event;
	/** Driver's copy of avail->idx (free-running); published on demand. */
	uint16_t avail_idx;
	/** Next used index to consume. */
	uint16_t last_used;
	/** avail_idx at the last vfe_vq_kick_needed(), for vring_need_event(). */
	uint16_t kicked_avail;
	uint16_t free_head;
	uint16_t num_free;
	/** Entries per indirect table (0: no indirect tables). */
	uint16_t indirect_max;
	/** One indirect table per head, num * indirect_max entries. */
	struct vring_desc *indirect;
	uint64_t indirect_gpa;
	struct vfe_vq_slot *slot;
	/** Packed: first descriptors of chains added, made available at publish. */
	struct vfe_vq_pending *pending;
	uint16_t npending;
};

/**
 * Lay out a ring of @p num entries (a power of 2) in @p mem, with both
 * indices starting at @p start (as after SET_VRING_BASE @p start), and
 * create its eventfds. @p indirect_max > 0 reserves one indirect table of
 * that many entries per head.
 */
int vfe_vq_init(struct vfe_vq *vq, struct vfe_mem *mem, uint16_t num, uint16_t start,
		uint16_t indirect_max);
void vfe_vq_fini(struct vfe_vq *vq);

/**
 * Lay out a packed ring of @p num entries (a power of 2 here) in @p mem,
 * starting at position @p start (index | wrap counter << 15, as
 * SET_VRING_BASE carries it; a new ring starts at VFE_PACKED_WRAP). The
 * other calls of this section work on it unless they say otherwise.
 */
int vfe_vq_init_packed(struct vfe_vq *vq, struct vfe_mem *mem, uint16_t num, uint16_t start,
		uint16_t indirect_max);

/** The SET_VRING_BASE value for the ring's next available descriptor. */
uint16_t vfe_vq_base(const struct vfe_vq *vq);

/** The SET_VRING_ADDR payload for this ring as ring @p index. */
void vfe_vq_addr(const struct vfe_vq *vq, uint32_t index, struct vfe_vring_addr *addr);

/**
 * Add a chain of @p n buffers and put its head in the avail ring (not yet
 * published). Returns the head, -EINVAL for n == 0, -ENOSPC when out of
 * descriptors.
 */
int vfe_vq_add(struct vfe_vq *vq, const struct vfe_buf *bufs, unsigned int n, void *cookie);

/** Same, as one descriptor pointing at an indirect table of @p n entries. */
int vfe_vq_add_indirect(struct vfe_vq *vq, const struct vfe_buf *bufs, unsigned int n,
		void *cookie);

/** Put @p head in the next avail slot without any bookkeeping (raw tests; split only). */
void vfe_vq_push_avail(struct vfe_vq *vq, uint16_t head);

/** Hand every added chain to the device: store avail->idx. */
void vfe_vq_publish(struct vfe_vq *vq);

/** Whether the device asked to be kicked for what was published since. */
bool vfe_vq_kick_needed(struct vfe_vq *vq);

/**
 * Whether the device asks to be kicked for the next buffer published (split: avail_event at
 * avail_idx, or no NO_NOTIFY flag without EVENT_IDX; packed: any event flag but DISABLE). A
 * polling device that asks has stopped polling this ring until the kick.
 */
bool vfe_vq_kicks_asked(const struct vfe_vq *vq);

/** Signal the kick eventfd. */
int vfe_vq_kick(struct vfe_vq *vq);

/** Used entries not consumed yet (as the device published them). */
uint16_t vfe_vq_used_pending(const struct vfe_vq *vq);

/**
 * Consume one used entry and free its chain. Returns the head id, -EAGAIN
 * when there is none, -EIO when the device returned an id that is not a
 * chain in flight (the entry is consumed anyway).
 */
int vfe_vq_get_used(struct vfe_vq *vq, uint32_t *len, void **cookie);

/** Wait until a used entry is pending: 0, or -ETIMEDOUT. */
int vfe_vq_wait_used(const struct vfe_vq *vq, unsigned int timeout_ms);

/** Calls (interrupts) received since the last check; 0 if none. */
uint64_t vfe_vq_calls(struct vfe_vq *vq);

/** Wait for a call and consume it: 0, or -ETIMEDOUT. */
int vfe_vq_wait_call(struct vfe_vq *vq, unsigned int timeout_ms);

/** VRING_AVAIL_F_NO_INTERRUPT, for rings without EVENT_IDX (packed: DISABLE). */
void vfe_vq_set_no_interrupt(struct vfe_vq *vq, bool on);

/**
 * used_event (avail->ring[num]): call me when used->idx passes this. Packed:
 * the driver event structure set to DESC at the position of count @p idx.
 */
void vfe_vq_set_used_event(struct vfe_vq *vq, uint16_t idx);

/** avail_event (used->ring[num]) as last written by the device (packed: off_wrap). */
uint16_t vfe_vq_avail_event(const struct vfe_vq *vq);

/* ---------------------------------------------------------------------- */
/* A vhost-user-vsock device, attached the way QEMU 7.2 does it            */

#define VFE_VSOCK_RX 0
#define VFE_VSOCK_TX 1
#define VFE_VSOCK_NQ 2

/** What a Linux 6.1 guest driver accepts (the ring features included). */
#define VFE_VSOCK_DRIVER_FEATURES ((1ULL << VIRTIO_F_VERSION_1) | \
		(1ULL << VIRTIO_RING_F_INDIRECT_DESC) | (1ULL << VIRTIO_RING_F_EVENT_IDX) | \
		(1ULL << VIRTIO_VSOCK_F_SEQPACKET))

/** Protocol features used when the backend offers them. */
#define VFE_VSOCK_PROTOCOL_FEATURES ((1ULL << VFE_PROTOCOL_F_CONFIG) | \
		(1ULL << VFE_PROTOCOL_F_REPLY_ACK))

struct vfe_vsock_conf {
	/** Feature bits the driver accepts; 0 means VFE_VSOCK_DRIVER_FEATURES. */
	uint64_t driver_features;
	/** 0 means VFE_VSOCK_PROTOCOL_FEATURES. */
	uint64_t protocol_features;
	/** Entries per ring; 0 means 128 (QEMU 7.2's size). */
	uint16_t ring_size;
	/** Starting avail/used index of each ring (SET_VRING_BASE). */
	uint16_t base[VFE_VSOCK_NQ];
	/** Entries per indirect table; 0 means none. */
	uint16_t indirect_max;
	/**
	 * Packed rings: VIRTIO_F_RING_PACKED is required of the backend (as
	 * QEMU's packed=on); base[] are then encoded positions, 0 meaning a new
	 * ring (VFE_PACKED_WRAP). Also turned on by VFE_RING=packed unless
	 * ring_fixed.
	 */
	bool packed;
	/**
	 * The layout is what packed says, whatever VFE_RING says: for tests that
	 * write one layout's ring structures themselves.
	 */
	bool ring_fixed;
	struct vfe_mem_conf mem;
	/** For the socket to appear; 0 means 5 s. */
	unsigned int connect_timeout_ms;
};

struct vfe_vsock {
	struct vfe_conn conn;
	struct vfe_mem mem;
	struct vfe_vq vq[VFE_VSOCK_NQ];
	/** GET_FEATURES answer. */
	uint64_t device_features;
	/** Sent with SET_FEATURES (bit 30 included when offered). */
	uint64_t features;
	/** GET_PROTOCOL_FEATURES answer (0 without bit 30). */
	uint64_t device_protocol_features;
	/** Sent with SET_PROTOCOL_FEATURES. */
	uint64_t protocol_features;
	/** guest_cid read with GET_CONFIG. */
	uint64_t cid;
};

/**
 * The environment variable that picks the ring layout of every test driven
 * through this frontend: "packed" or "split" (unset or empty: split). The
 * test suites named *-packed set VFE_RING=packed.
 */
#define VFE_RING_ENV "VFE_RING"

/** What VFE_RING asks for: 1 packed rings, 0 split, -EINVAL for another value. */
int vfe_ring_env(void);

/**
 * Connect to @p path and do what QEMU does up to a running device:
 * GET_FEATURES, GET/SET_PROTOCOL_FEATURES, SET_OWNER, GET_CONFIG, then
 * vfe_vsock_start(). @p conf may be NULL for the defaults. The rings are
 * packed if conf->packed, or if VFE_RING says so and not conf->ring_fixed
 * (-EINVAL for a VFE_RING value vfe_ring_env() does not know). On failure
 * everything is released and v->conn.err may tell why.
 */
int vfe_vsock_attach(struct vfe_vsock *v, const char *path, const struct vfe_vsock_conf *conf);

/**
 * (Re)start the device on the current connection with the rings as they
 * are: SET_FEATURES, SET_MEM_TABLE, then per ring NUM, BASE (@p base, NULL
 * for each ring's avail index), ADDR, KICK, CALL, then ENABLE both. DPDK
 * reports new_device once both rings are complete and enabled.
 */
int vfe_vsock_start(struct vfe_vsock *v, const uint16_t *base);

/**
 * Stop the device as QEMU 7.2 does: SET_VRING_ENABLE 0 on both rings, then
 * GET_VRING_BASE on each (DPDK calls destroy_device at the first one).
 * The backend's next avail index of each ring goes to @p base (may be NULL).
 */
int vfe_vsock_stop(struct vfe_vsock *v, uint16_t *base);

/**
 * vfe_vsock_stop(), then close the connection unless @p keep_conn; the
 * guest memory and the rings stay until vfe_vsock_close().
 */
int vfe_vsock_detach(struct vfe_vsock *v, uint16_t *base, bool keep_conn);

/** Close the socket without a word (QEMU killed) and free everything. */
void vfe_vsock_close(struct vfe_vsock *v);

/**
 * A virtio-vsock header in host byte order. Deliberately the frontend's own, as its parser
 * is (vfe_vsock_parse()): it plays the guest's driver, an implementation apart from the
 * engine's codec (base/vsock_pkt.h), so that a mistake in one is not repeated by the other.
 */
struct vfe_vsock_pkt {
	uint64_t src_cid;
	uint64_t dst_cid;
	uint32_t src_port;
	uint32_t dst_port;
	/** Payload bytes after the header. */
	uint32_t len;
	uint16_t type;
	uint16_t op;
	uint32_t flags;
	uint32_t buf_alloc;
	uint32_t fwd_cnt;
};

/** Encode @p pkt as the 44-byte little-endian header at @p h. */
void vfe_vsock_build(struct virtio_vsock_hdr *h, const struct vfe_vsock_pkt *pkt);

/** Decode the header at @p buf of @p len bytes: 0, or -EINVAL if too short. */
int vfe_vsock_parse(const void *buf, size_t len, struct vfe_vsock_pkt *pkt);

#ifdef __cplusplus
}
#endif

#endif /* VSOCK_FRONTEND_VFE_H */
