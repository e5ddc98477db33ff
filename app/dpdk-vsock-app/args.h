/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef APP_ARGS_H
#define APP_ARGS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vsock_pmd.h>

/** What the application part of the command line (after "--") asks for. */
struct app_opts {
	struct vsock_pmd_conf pmd;
	bool help;
	/** --version: print the versions and exit. */
	bool version;
	/** -i: a command console on stdin (console.h). */
	bool interactive;
	/** --stats-period: seconds between statistics displays, 0 for none. */
	unsigned int stats_period;
	/**
	 * Some VM was described with vhost-device-vsock's keys or options (doc/migrating.md):
	 * app_opts_notice() then says where its defaults differ from ours.
	 */
	bool peer_keys;
	/** Its single-VM options (--guest-cid, --socket, ...), as "key=value," pairs. */
	char single_vm[1024];
};

/** Room for one error message; every parser writes a sentence naming the problem. */
#define APP_ERR_LEN 512

void app_opts_init(struct app_opts *opts);

/** getopt_long() values of the long options that have no short form (app_long_opts). */
enum app_opt {
	APP_OPT_VM = 256, APP_OPT_CONFIG, APP_OPT_BURST, APP_OPT_STATS_PERIOD,
	APP_OPT_USED_PUBLISH, APP_OPT_WAIT_MODE, APP_OPT_MBUFS, APP_OPT_IDLE_US, APP_OPT_VERSION,
	/* vhost-device-vsock's single-VM options: one --vm of these keys. */
	APP_OPT_PEER_VM_FIRST, APP_OPT_GUEST_CID = APP_OPT_PEER_VM_FIRST, APP_OPT_SOCKET,
	APP_OPT_UDS_PATH, APP_OPT_TX_BUFFER_SIZE, APP_OPT_QUEUE_SIZE, APP_OPT_GROUPS,
	APP_OPT_FORWARD_CID, APP_OPT_FORWARD_LISTEN,
	APP_OPT_PEER_VM_LAST = APP_OPT_FORWARD_LISTEN,
};


/** The long options, for getopt_long() (cmdline.c) and config files; a zeroed entry ends it. */
extern const struct option app_long_opts[];

/**
 * Apply long option @p opt with value @p val, from the command line or a config file;
 * --config is the readers' (cmdline.c, config.c), not an option to apply.
 */
int app_opt_apply(int opt, const char *val, struct app_opts *opts, char *err, size_t err_len);

/**
 * Parse the application arguments (argv[0] is the program name; cmdline.c). Options:
 * --vm cid=N,socket=PATH,uds=PATH (repeatable), --config FILE, --burst N, --mbufs N,
 * -i/--interactive,
 * --stats-period S, --used-publish batch|per-entry, --wait-mode poll|notify|adaptive,
 * --idle-us N, -h/--help, --version.
 * Does not validate across VMs: call app_opts_validate() afterwards.
 * @return 0, or -1 with @p err filled.
 */
int app_args_parse(int argc, char **argv, struct app_opts *opts, char *err, size_t err_len);

/** Whether @p name (without "--") is one of the long options app_args_parse() takes. */
bool app_opt_known(const char *name);

/**
 * Parse one "cid=N,socket=PATH,uds=PATH" description and append it to @p opts. Also takes
 * vhost-device-vsock's keys (guest-cid, uds-path, tx-buffer-size, queue-size, groups=a+b;
 * '_' for '-' in every key), and refuses its forward-cid/forward-listen by name.
 */
int app_vm_add(const char *spec, struct app_opts *opts, char *err, size_t err_len);

/**
 * The one number parser of the command line, the config files and the console: decimal
 * digits only (no sign, space or "0x"), in @p min..@p max. A leading zero is refused, not
 * read: vhost-device-vsock reads "010" as 10, QEMU's -device as octal 8. @p what names the
 * value in the message ("burst size", "--vm: cid").
 * @return 0 with *val set, or -1 with @p err filled.
 */
int app_num_parse(const char *what, const char *s, uint64_t min, uint64_t max, uint64_t *val,
		  char *err, size_t err_len);

/** Parse a burst size (1..VSOCK_PMD_BURST_MAX). */
int app_burst_parse(const char *s, unsigned int *burst, char *err, size_t err_len);

/** Parse --mbufs: payload mbufs per VM (VSOCK_PMD_MBUFS_MIN..VSOCK_PMD_MBUFS_MAX). */
int app_mbufs_parse(const char *s, unsigned int *mbufs, char *err, size_t err_len);

/** Parse --used-publish: "batch" (false) or "per-entry" (true). */
int app_used_publish_parse(const char *s, bool *per_entry, char *err, size_t err_len);

/** Parse --wait-mode: "poll", "notify" or "adaptive". */
int app_wait_mode_parse(const char *s, enum vsock_pmd_wait_mode *mode, char *err,
			size_t err_len);

/** Parse --idle-us: microseconds, 1..VSOCK_PMD_IDLE_US_MAX. */
int app_idle_us_parse(const char *s, unsigned int *idle_us, char *err, size_t err_len);

/** Longest --stats-period, in seconds (a day). */
#define APP_STATS_PERIOD_MAX 86400

/** Parse a statistics period in seconds (1..APP_STATS_PERIOD_MAX). */
int app_stats_period_parse(const char *s, unsigned int *period, char *err, size_t err_len);

/**
 * Apply the long option @p name (without "--") with value @p val, as a config
 * file line does; options without a value and --config are refused there.
 */
int app_opt_set(const char *name, const char *val, struct app_opts *opts, char *err,
		size_t err_len);

/**
 * Read a configuration file: one long option per line without the leading
 * "--" ("vm cid=3,socket=...", "burst 32"); '#' starts a comment. A file named
 * *.yaml or *.yml, or whose first significant line starts with "vms:" or "---", is
 * vhost-device-vsock's YAML instead (app_config_yaml_load()).
 */
int app_config_load(const char *path, struct app_opts *opts, char *err, size_t err_len);

/**
 * Read vhost-device-vsock's YAML configuration: a top-level "vms:" sequence of maps
 * with guest_cid, socket, uds_path, tx_buffer_size, queue_size and groups (and our own
 * --vm keys, '-' or '_'). Errors name the file, line and column, and what was expected.
 */
int app_config_yaml_load(const char *path, struct app_opts *opts, char *err, size_t err_len);

/**
 * The line to log at start-up, or NULL: a configuration written with vhost-device-vsock's
 * keys names no group, so its VMs, which would all reach each other there, are isolated
 * here (doc/migrating.md).
 */
const char *app_opts_notice(const struct app_opts *opts);

/**
 * Check the configuration as a whole, before anything is created: at least one VM, no
 * reserved or duplicate CID, no socket path that overlaps another
 * (vsock_pmd_conf_check_paths()), options that go together. A failure is a wrong
 * configuration (exit status 2).
 */
int app_opts_validate(const struct app_opts *opts, char *err, size_t err_len);

/**
 * Check what the configuration's socket paths find on this host: every directory exists
 * and is writable, no path exists as something other than a stale socket, and no socket is
 * served by another live process. A failure means the app cannot start here (exit status 1).
 */
int app_opts_check_host(const struct app_opts *opts, char *err, size_t err_len);

#endif /* APP_ARGS_H */
