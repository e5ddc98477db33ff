/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared by the fault tests: one app serving two VMs on its one worker lcore.
 *
 * - VM 3 suffers the fault. Its frontend and guest driver are the datapath tests' (o.dp:
 *   vfe_vsock + vfe_guest), attached and detached by each case as it needs.
 * - VM 5 is a bystander that stays attached; fx_peer_check() moves checked bytes both ways
 *   through it during and after each fault.
 * - The app's resources (/vsock/resources: mbufs in use, open descriptors, connections) are
 *   read before a case and must come back to those values after it.
 *
 * Nothing here reports TAP lines (tap.h counts per translation unit): calls return a result
 * and leave a description of a failure in fx_env.why.
 */
#ifndef TESTS_FAULTS_FAULTS_UTIL_H
#define TESTS_FAULTS_FAULTS_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "ops_util.h"

#define FX_CID 3
#define FX_PEER_CID 5

struct fx_env {
	/** The app; VM 3's frontend and driver in o.dp. */
	struct ops_env o;
	/** VM 5's driver (sock, uds, v, g, attached). */
	struct dp_env peer;
	int peer_lfd;
	uint32_t peer_port;
	uint64_t seed;
	char why[256];
};

/** What /vsock/resources reports. */
struct fx_res {
	uint64_t mbufs_in_use;
	uint64_t mbufs_total;
	uint64_t open_fds;
	uint64_t conns;
	uint64_t rss;
};

uint64_t fx_now_ms(void);

/**
 * Start the app with VMs 3 and 5 and the extra application options @p extra
 * (NULL-terminated, may be NULL); attach VM 5 with a host listener. 0 or -1 (why set).
 */
int fx_start(struct fx_env *f, const char *const *extra);

/** Detach both VMs, SIGTERM the app: its wait status (log printed if @p dump_log). */
int fx_stop(struct fx_env *f, bool dump_log);

/** Poll whichever guest drivers are attached; pause briefly when both were idle. */
void fx_tick(struct fx_env *f);

/** Evaluate @p cond, ticking both guests between tries, for up to @p ms: its last value. */
#define FX_WAIT(f, cond, ms) ({ \
	uint64_t fx_deadline_ = fx_now_ms() + (ms); \
	bool fx_ok_; \
	while (!(fx_ok_ = (cond)) && fx_now_ms() < fx_deadline_) \
		fx_tick(f); \
	fx_ok_; })

/** Read /vsock/resources. 0 or -1. */
int fx_res(struct fx_env *f, struct fx_res *r);

/**
 * Wait up to @p ms (ticking the guests) until mbufs in use, open descriptors and
 * connections are back to @p base. The last reading goes to @p now. Whether they are.
 */
bool fx_res_back(struct fx_env *f, const struct fx_res *base, unsigned int ms,
		struct fx_res *now);

/**
 * VM 5 connects to the host, 3000 checked bytes each way, closes; the host reads EOF.
 * Ticks VM 3's guest too while it waits. 0, or -1 with why set.
 */
int fx_peer_check(struct fx_env *f);

/**
 * Wait up to @p ms for the far side of host socket @p fd to be gone: reads (and drops) what
 * is still there until EOF or ECONNRESET, ticking the guests. 0 (EOF), -ECONNRESET, or
 * -ETIMEDOUT.
 */
int fx_host_gone(struct fx_env *f, int fd, unsigned int ms);

/** A counter of VM @p cid from /vsock/stats ("rx_ring_full", "errors.conn_timeout"). */
uint64_t fx_stat(struct fx_env *f, unsigned int cid, const char *path);

#endif /* TESTS_FAULTS_FAULTS_UTIL_H */
