/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The operator environment of the tests and vsock-perf: the app started with its
 * console on a pipe and its own telemetry socket (--file-prefix), console commands
 * with their answers awaited in the app's log, and telemetry queries with a minimal JSON
 * lookup. The guest side is the datapath environment (dp_env.h: frontend + vfe_guest
 * driver).
 */
#ifndef VSOCK_HARNESS_OPS_ENV_H
#define VSOCK_HARNESS_OPS_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dp_env.h"

/** Telemetry replies are at most this long (DPDK 22.11's output buffer). */
#define OPS_TEL_MAX 16384

struct ops_env {
	struct dp_env dp;
	char prefix[48];	/* --file-prefix, unique per test process */
	char sock5[128];	/* a second VM (CID 5) when started with two */
};

/**
 * Start the app with VM 3 (and VM 5 if @p two_vms), --file-prefix, and the extra
 * application options @p extra (NULL-terminated, may be NULL). @p console: -i with stdin
 * on a pipe. Returns 0 or -1 (the log is printed).
 */
int ops_start(struct ops_env *o, bool two_vms, bool console, const char *const *extra);

/** ops_start() with @p vm_opts (e.g. "group=g", may be NULL) added to each VM's --vm. */
int ops_start_vms(struct ops_env *o, bool two_vms, bool console, const char *const *extra,
		const char *vm_opts);

/** What ops_start_many() starts: VMs @p first_cid .. first_cid + n - 1, alike. */
struct ops_many {
	unsigned int n;
	unsigned int first_cid;
	/** Appended to every --vm (",max-connections=50"), or NULL. */
	const char *keys;
	/** The EAL's -m in MiB (without hugepages); NULL for APP_PROC_EAL_DEFAULT's. */
	const char *mem_mb;
	/** The app's RLIMIT_NOFILE (struct app_proc); 0 leaves the test's own. */
	unsigned long nofile_soft, nofile_hard;
	/** Return once every VM's vhost-user socket exists; false: once the app runs. */
	bool wait;
};

/**
 * Start the app with --file-prefix and the VMs @p v describes: VM i's sockets are
 * "vm<cid>.sock" and "vm<cid>.vsock" in the run directory, written to envs[i]->sock and
 * envs[i]->uds for its frontend and host programs. Returns 0 or -1 (the log is printed).
 */
int ops_start_many(struct ops_env *o, const struct ops_many *v, struct dp_env *const *envs);

/** SIGTERM the app, clean up; its wait status. */
int ops_stop(struct ops_env *o);

/** Run the test's thread on CPU 0, off the one the app's worker spins on. */
void ops_pin_off_worker(void);

/** Bytes in the app's log so far: the start of what a command prints next. */
long ops_log_mark(const struct ops_env *o);

/** Whether the log, from @p mark on, contains @p needle. */
bool ops_log_has(const struct ops_env *o, long mark, const char *needle);

/** How many times @p needle appears in the log from @p mark on. */
unsigned int ops_log_count(const struct ops_env *o, long mark, const char *needle);

/** The console's prompt (-i), printed again once a command's answer is whole. */
#define OPS_PROMPT "vsock> "

/**
 * Type @p cmd on the console and wait (polling the guest if attached) up to @p ms for
 * @p expect in what follows. Returns whether it appeared; its mark goes to @p mark_out, and
 * then the wait goes on to the prompt after the answer, so that every line of it is there
 * for the caller to look at.
 */
bool ops_cmd(struct ops_env *o, const char *cmd, const char *expect, unsigned int ms,
		long *mark_out);

/** Run one telemetry command: the JSON reply in @p out, 0 or -errno. */
int ops_tel(const struct ops_env *o, const char *cmd, char *out, size_t len);

/**
 * The number at @p path ("from_guest_pkts", "tx.packets", "conns.6000_5000.from_guest_bytes")
 * in @p json: each dotted part is looked up after the previous one. 0, or -ENOENT.
 */
int ops_json_u64(const char *json, const char *path, uint64_t *v);

/** The string at @p path, copied into @p out. 0, or -ENOENT. */
int ops_json_str(const char *json, const char *path, char *out, size_t len);

/** Telemetry @p cmd, then the number at @p path; UINT64_MAX if anything failed. */
uint64_t ops_tel_u64(const struct ops_env *o, const char *cmd, const char *path);

/** The runtime directory of the app's --file-prefix (where its telemetry socket is). */
void ops_runtime_dir(const struct ops_env *o, char *buf, size_t len);

#endif /* VSOCK_HARNESS_OPS_ENV_H */
