/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared by the wait-mode tests and the measurement program: the app with one VM (CID 3,
 * ops_util.h) in a given wait mode, two connections on it (A opened by the guest, B by a
 * host program through CONNECT), the app's CPU time, and checked transfers that start after
 * the app has been idle.
 *
 * Nothing here reports TAP lines (tap.h counts per translation unit).
 */
#ifndef TESTS_MODES_MODES_UTIL_H
#define TESTS_MODES_MODES_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "ops_util.h"

#define MD_PORT_A 6000	/* the guest connects to the host listener here */
#define MD_PORT_B 6001	/* a host program CONNECTs to the guest here */
/** Largest transfer of one md_* call. */
#define MD_MAX_LEN 65536u

/** One direction of one connection: the sender's stream and the receiver's check. */
struct md_dir {
	struct pattern tx;
	uint64_t sent;
	struct dp_stream rx;
};

/** Which connection and which way. */
enum md_way {
	MD_A_G2H,	/* connection A, guest -> host */
	MD_A_H2G,
	MD_B_H2G,	/* connection B, host -> guest */
	MD_B_G2H,
	MD_NB_WAYS
};

struct md_env {
	struct ops_env o;
	int lfd;			/* host listener of MD_PORT_A */
	int fd_a, fd_b;			/* host ends */
	struct vfe_guest_conn *gc_a, *gc_b;	/* guest ends */
	struct md_dir dir[MD_NB_WAYS];
	/** Longest the test's own loop went without running during the last md_* transfer. */
	uint64_t max_gap_ns;
	char why[256];
};

/**
 * Start the app with the extra options @p extra (NULL-terminated), attach VM 3 and open
 * both connections. 0, or -1 with why set.
 */
int md_start(struct md_env *m, const char *const *extra);

/**
 * Open both connections afresh (after a guest driver reload): the old host ends are closed,
 * the streams start over. 0, or -1 with why set.
 */
int md_connect(struct md_env *m);

/** Close the connections, detach, SIGTERM the app: its wait status. */
int md_stop(struct md_env *m, bool dump_log);

/** The app's user + system CPU time so far, in seconds (/proc/<pid>/stat). */
double md_app_cpu(const struct md_env *m);

/**
 * Nanoseconds the app's worker lcore thread has spent runnable but waiting for a CPU
 * (/proc/<pid>/task/<tid>/schedstat), or UINT64_MAX: what scheduling noise cost it.
 */
uint64_t md_worker_rq_wait(const struct md_env *m);

/** The app's lost_kicks, summed over its worker lcores (/vsock/lcores); 0 before any. */
uint64_t md_lost_kicks(struct md_env *m);

/** Share of one core the app used over @p ms while the test slept. */
double md_idle_cpu(struct md_env *m, unsigned int ms);

/** Sleep @p us without touching the guest or the sockets. */
void md_sleep_us(unsigned int us);

/** Spin @p us while polling the guest driver (completions, buffers), touching no socket. */
void md_spin_us(struct md_env *m, unsigned int us);

/**
 * Send @p len (1..MD_MAX_LEN) checked bytes one @p way and wait up to @p ms for the other
 * end to have received and checked all of them. Nanoseconds from the send to the last
 * byte checked, or -1 (why set: late, corrupt, or not sent).
 */
int64_t md_one_way(struct md_env *m, enum md_way way, uint32_t len, unsigned int ms);

/** Send @p len (1..MD_MAX_LEN) checked bytes one @p way, without waiting for them: 0 or -1. */
int md_send(struct md_env *m, enum md_way way, uint32_t len, unsigned int ms);

/** Wait up to @p ms until everything sent one @p way arrived intact: 0 or -1 (why set). */
int md_recv_all(struct md_env *m, enum md_way way, unsigned int ms);

/**
 * Round trip on connection B (@p from_host: host -> guest -> host) or A (guest -> host ->
 * guest): @p len bytes one way, then as many back. Nanoseconds, or -1 (why set).
 */
int64_t md_round_trip(struct md_env *m, bool from_host, uint32_t len, unsigned int ms);

/**
 * Whether the device asks for a kick at the next buffer the guest makes available on its tx
 * ring (EVENT_IDX: avail_event is the next avail index). A worker that sleeps asks.
 */
bool md_tx_kick_armed(const struct md_env *m);

/**
 * The race a lost kick needs: wait up to @p ms for the worker to sleep (tx kick armed), then
 * for it to wake up on its timeout and disarm the kick, and make @p len bytes available on
 * the tx ring at once, while the worker's round may already have looked at the ring; it arms
 * the kick again after that round and must then see them. Nanoseconds from the send to the
 * last byte checked at the host, or -1 (why set).
 */
int64_t md_race_rearm(struct md_env *m, uint32_t len, unsigned int ms);

#endif /* TESTS_MODES_MODES_UTIL_H */
