/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared by the hostile tests: one app serving two VMs on its one worker lcore.
 *
 * - VM 3 is the attacker. The test drives it through a raw guest (struct rawg): the frontend's
 *   rings with a minimal driver on top (rx buffers kept posted, every packet the app writes
 *   logged), so that a test can also write descriptors and indices by hand.
 * - VM 5 is a bystander with a well-behaved driver (vfe_guest). After every hostile case
 *   hu_peer_check() opens a connection from it to a host listener, moves checked bytes both
 *   ways and closes it: the attack must not have touched it.
 *
 * Nothing here reports TAP lines (tap.h counts per translation unit): calls return a result
 * and leave a description of a failure in hu_env.why.
 */
#ifndef TESTS_HOSTILE_HOSTILE_UTIL_H
#define TESTS_HOSTILE_HOSTILE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops_util.h"
#include "vfe.h"

#define HU_ATTACKER_CID 3
#define HU_PEER_CID 5
#define HU_HOST_CID 2
/** The app's buf_alloc per connection, in every header it sends. */
#define HU_APP_BUF_ALLOC (256u * 1024)
/** The app's connections per VM (CONN_MAX_DEFAULT). */
#define HU_APP_MAX_CONNS 1023
/** Bytes per raw guest rx buffer, and room per tx packet. */
#define RG_RX_LEN 4096u
#define RG_TX_LEN (44u + 65536u)
#define RG_LOG_MAX 4096
/* Guest-physical layout of rg_conf_default's memory: two 16 MiB regions, 1 MiB hole. */
#define RG_REGION0_END (16ull << 20)
#define RG_MEM_END (33ull << 20)
/** An address far beyond any guest memory. */
#define RG_FAR_AWAY (1ull << 40)
/** Cookie of a tx chain a test built itself: its completion frees no raw guest buffer. */
#define RG_FOREIGN ((void *)(uintptr_t)0xffffffu)

struct hu_env {
	/** The app (VM 3 in o.dp.sock/uds, VM 5 in o.sock5), telemetry, log marks. */
	struct ops_env o;
	/** VM 5's driver; only its sock, uds, v, g and attached fields are used. */
	struct dp_env peer;
	int peer_lfd;
	uint32_t peer_port;
	uint64_t peer_seed;
	char why[256];
};

/** One packet the app wrote into a raw guest rx buffer. */
struct rg_pkt {
	struct vfe_vsock_pkt p;
	uint32_t used_len;
	uint8_t payload[64];	/* its first bytes */
};

struct rawg {
	struct vfe_vsock v;
	bool attached;
	uint16_t ring;
	uint8_t **rx_buf;
	uint64_t *rx_gpa;
	uint8_t **tx_buf;
	uint64_t *tx_gpa;
	uint16_t *tx_free;
	uint16_t tx_nfree;
	/** Used entries that named no chain in flight (vfe_vq_get_used -EIO). */
	uint64_t bad_used;
	uint64_t tx_completed;
	/** rg_poll() leaves the rx ring alone: what the app writes fills it and stays. */
	bool rx_held;
	unsigned int nlog;
	bool log_overflow;
	struct rg_pkt log[RG_LOG_MAX];
};

uint64_t hu_now_ms(void);

/** Start the app with both VMs, attach VM 5 and its host listener. 0 or -1 (why set). */
int hu_start(struct hu_env *h);

/**
 * hu_start() with the extra application options @p extra, @p vm_opts added to both VMs'
 * --vm (e.g. "group=g"), and VM 5's driver configured by @p peer_gc (each may be NULL).
 */
int hu_start_with(struct hu_env *h, const char *const *extra, const char *vm_opts,
		const struct vfe_guest_conf *peer_gc);

/** Detach VM 5, SIGTERM the app: its wait status (the log is printed if @p dump_log). */
int hu_stop(struct hu_env *h, bool dump_log);

/**
 * VM 5 connects to the host, 3000 checked bytes each way, guest close answered with RST,
 * host reads EOF. 0, or -1 with why set.
 */
int hu_peer_check(struct hu_env *h);

/** The worker lcore of VM @p cid from /vsock/vms, or -1. */
int hu_vm_lcore(struct hu_env *h, unsigned int cid);

/** A counter of VM @p cid from /vsock/stats (e.g. "conns_reset", "errors.pkt_op"). */
uint64_t hu_stat(struct hu_env *h, unsigned int cid, const char *path);

/** Wait up to @p ms for @p needle in the app log after @p mark. */
bool hu_log_wait(struct hu_env *h, long mark, const char *needle, unsigned int ms);

/** Whether the app process is still running. */
bool hu_app_alive(struct hu_env *h);

/**
 * rg_attach()'s defaults: 128-entry rings, 32 MiB in two 16 MiB regions with a 1 MiB hole
 * (region 1 is [17 MiB, 33 MiB)), 8-entry indirect tables; the layout VFE_RING names.
 */
extern const struct vfe_vsock_conf rg_conf_default;

/**
 * Attach a raw guest to VM 3 (@p conf NULL: rg_conf_default; a ring_size of 0: 128) and post a
 * full rx ring. 0 or -errno.
 */
int rg_attach(struct rawg *g, struct hu_env *h, const struct vfe_vsock_conf *conf);

/** Close the frontend without a word (QEMU killed). */
void rg_close(struct rawg *g);

/** Take the app's rx packets (logged, buffers reposted) and tx completions. */
unsigned int rg_poll(struct rawg *g);

/**
 * Put one packet on the tx ring in one descriptor (header, then @p pkt->len payload bytes
 * from @p payload; NULL sends zeros) and publish it. 0, -ENOSPC (ring), -EINVAL.
 */
int rg_send(struct rawg *g, const struct vfe_vsock_pkt *pkt, const void *payload);

/**
 * The buffer (header, then payload) of the packet rg_send() or rg_send_raw() queued last, in
 * guest memory: what a hostile guest may rewrite while the app has not consumed it.
 */
uint8_t *rg_last_tx(const struct rawg *g);

/**
 * Keep both rings busy for @p ms: REQUESTs from guest ports after @p *gport to host port
 * @p hport, where nobody listens, so that each RST answer needs an rx buffer. Stays within
 * the rx log (each answer is logged). @return REQUESTs sent.
 */
uint64_t rg_request_storm(struct rawg *g, uint32_t *gport, uint32_t hport, unsigned int ms);

/**
 * A buffer of @p buf_len bytes (may be shorter than a header, or 0: one empty descriptor)
 * starting with @p pkt's header, zeros after it, whatever @p pkt->len says.
 */
int rg_send_raw(struct rawg *g, const struct vfe_vsock_pkt *pkt, uint32_t buf_len);

/**
 * rg_send(), with the packet cut after its first 20 bytes (inside the header) and an empty
 * descriptor before, between and after the two parts: 5 descriptors, or (@p indirect) an
 * indirect table of 5 entries. Empty buffers are legal: the app must read the packet whole.
 */
int rg_send_empties(struct rawg *g, const struct vfe_vsock_pkt *pkt, const void *payload,
		bool indirect);

/** Poll the raw guest until @p cond holds or @p ms passed: the last value of cond. */
#define RG_WAIT(g, cond, ms) ({ \
	uint64_t rg_deadline_ = hu_now_ms() + (ms); \
	bool rg_ok_; \
	while (!(rg_ok_ = (cond)) && hu_now_ms() < rg_deadline_) \
		if (rg_poll(g) == 0) \
			usleep(200); \
	rg_ok_; })

/** Index of the first logged packet from @p from on with this op and ports, or -1. */
int rg_find(const struct rawg *g, unsigned int from, uint16_t op, uint32_t guest_port,
		uint32_t host_port);

/**
 * Whether log entry @p k is exactly the RST answering a packet from guest port @p gport to
 * host port @p hport of @p type: 2:hport -> 3:gport, len 0, flags 0, used len 44.
 * Otherwise describes it in @p why.
 */
bool rg_is_rst(const struct rawg *g, int k, uint32_t gport, uint32_t hport, uint16_t type,
		char *why, size_t len);
/* The same, for an RST that must come from @p src_cid (a sibling VM the guest addressed). */
bool rg_is_rst_from(const struct rawg *g, int k, uint64_t src_cid, uint32_t gport,
		uint32_t hport, uint16_t type, char *why, size_t len);

/** A REQUEST (or another op) from the raw guest: src 3:@p gport, dst 2:@p hport, stream. */
struct vfe_vsock_pkt rg_hdr(uint16_t op, uint32_t gport, uint32_t hport);

/** The descriptor field a rewrite writes (hu_flip_choose()). */
enum hu_flip_field {
	HU_FLIP_ADDR,
	HU_FLIP_LEN,
	HU_FLIP_FLAGS,	/* NEXT, WRITE and INDIRECT, any mix */
	HU_FLIP_INDEX,	/* a descriptor index: next (split) or buffer id (packed) */
};

/** One rewrite of a descriptor while the app may be walking it. */
struct hu_flip {
	unsigned int queue;	/* VFE_VSOCK_RX or VFE_VSOCK_TX */
	uint16_t desc;		/* its index in that ring */
	enum hu_flip_field field;
	uint64_t value;		/* host byte order */
};

/**
 * The rewrite that random word @p r picks on rings of @p ring entries (a power of 2), for a
 * test to apply to its own descriptor layout. Mostly lengths that keep chains valid, so that
 * many chains are walked while they change; otherwise an address (outside guest memory,
 * across region 0's end, wrapping, or one of @p good_gpa), a length (impossible ones
 * included), flags or an index. @p benign: only lengths that keep every chain valid.
 */
struct hu_flip hu_flip_choose(uint64_t r, bool benign, uint16_t ring, const uint64_t good_gpa[8]);

#endif /* TESTS_HOSTILE_HOSTILE_UTIL_H */
