/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Run the app under test (the binary named by $VSOCK_APP) as a child in a
 * fresh run directory under /tmp, with its output captured in a log file
 * there, so that tests can run in parallel and show the log on failure.
 *
 * Typical use:
 *   app_proc_init(&p);
 *   snprintf(vm, sizeof(vm), "cid=3,socket=%s/vm3.sock,uds=%s/vm3.vsock", p.dir, p.dir);
 *   app_proc_start(&p, NULL, (const char *[]){ "--vm", vm, NULL }, socks, 10000);
 *   ... attach with the frontend ...
 *   status = app_proc_stop(&p, 5000);   (WIFEXITED/WEXITSTATUS apply)
 *   app_proc_fini(&p);
 */
#ifndef VSOCK_HARNESS_APP_PROC_H
#define VSOCK_HARNESS_APP_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/** EAL arguments used when app_proc_start() gets none: small, no devices. */
#define APP_PROC_EAL_DEFAULT "--no-huge", "-m", "512", "--no-pci", "--no-shconf", \
	"-l", "0-1", "--log-level=lib.eal:error"

struct app_proc {
	pid_t pid;
	/** The run directory, e.g. /tmp/vsock-test-AbC123. */
	char dir[64];
	/** The child's stdout and stderr. */
	char log[96];
	/** Set before app_proc_start() to give the child a pipe as stdin (default /dev/null). */
	bool stdin_pipe;
	/** The write end of that pipe once started, -1 otherwise; app_proc_fini() closes it. */
	int stdin_fd;
	/**
	 * Set before app_proc_start() to start the child with these RLIMIT_NOFILE limits, soft
	 * and hard (lowering them needs no privilege); 0 (the default) leaves the test's own.
	 */
	unsigned long nofile_soft, nofile_hard;
};

/** Create the run directory (stdin_pipe false, nofile limits the test's). Returns 0 or -errno. */
int app_proc_init(struct app_proc *p);

/** "<dir>/<name>" in @p buf; returns @p buf. */
char *app_proc_path(const struct app_proc *p, const char *name, char *buf, size_t len);

/**
 * Start $VSOCK_APP <eal_args> -- <app_args> (both NULL-terminated; NULL
 * eal_args means APP_PROC_EAL_DEFAULT) and wait until every socket path in
 * @p wait_socks (NULL-terminated, may be NULL) exists, for up to
 * @p timeout_ms. On failure (the app exited, or the timeout) the child is
 * killed, the log printed as TAP diagnostics, and -errno returned.
 */
int app_proc_start(struct app_proc *p, const char *const *eal_args,
		const char *const *app_args, const char *const *wait_socks,
		unsigned int timeout_ms);

/**
 * Wait up to @p timeout_ms for the child to exit by itself. Returns its
 * waitpid() status, or -ETIMEDOUT (the child is then killed).
 */
int app_proc_wait(struct app_proc *p, unsigned int timeout_ms);

/** SIGTERM, then app_proc_wait(). */
int app_proc_stop(struct app_proc *p, unsigned int timeout_ms);

/** Socket files left in the run directory. */
unsigned int app_proc_sockets_left(const struct app_proc *p);

/** Whether a line of the log contains @p needle, ignoring case. */
bool app_proc_log_contains(const struct app_proc *p, const char *needle);

/** Print the log as TAP diagnostics ("# " lines). */
void app_proc_dump_log(const struct app_proc *p);

/** Write @p line and a newline to the child's stdin pipe. Returns 0 or -errno. */
int app_proc_send(struct app_proc *p, const char *line);

/** Kill the child if still running and remove the run directory. */
void app_proc_fini(struct app_proc *p);

/**
 * The EAL's runtime directory for --file-prefix @p prefix in @p buf (where
 * dpdk-telemetry.py looks for it too): $RUNTIME_DIRECTORY, /var/run as root,
 * else $XDG_RUNTIME_DIR, else /tmp; then dpdk/<prefix>.
 */
void app_proc_eal_dir(const char *prefix, char *buf, size_t len);

/**
 * Remove what an EAL with --file-prefix @p prefix leaves behind once every
 * process of it exited: its runtime directory and its /dev/hugepages files.
 */
void app_proc_remove_eal_files(const char *prefix);

#endif /* VSOCK_HARNESS_APP_PROC_H */
