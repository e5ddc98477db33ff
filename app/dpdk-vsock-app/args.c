/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The application's options, from the command line (cmdline.c) or a config file
 * (config.c): each value's parser, the long options, and the checks across VMs.
 * Everything is validated before the first socket is created, so a bad configuration
 * leaves nothing behind. Nothing here reads a file: this is what the readers use.
 */
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_common.h>

#include "args.h"

/* Reserved context IDs (virtio spec 5.10.4, <linux/vm_sockets.h>). */
#define CID_HYPERVISOR 0
#define CID_LOCAL 1
#define CID_HOST 2
#define CID_ANY 0xffffffffULL

/* A guest connecting to host port P reaches "<uds>_<P>": room for "_4294967295". */
#define UDS_PORT_SUFFIX_MAX 11

static int fail(char *err, size_t err_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t err_len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, err_len, fmt, ap);
	va_end(ap);
	return -1;
}

void app_opts_init(struct app_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	vsock_pmd_conf_init(&opts->pmd);
}

/*
 * Digits only: strtoull() alone would take a sign, leading spaces, "0x" and a leading 0 as
 * octal, and "010" is 10 to vhost-device-vsock but 8 to QEMU's -device: refused, not guessed.
 */
int app_num_parse(const char *what, const char *s, uint64_t min, uint64_t max, uint64_t *val,
		  char *err, size_t err_len)
{
	char range[48] = "";
	uint64_t v = 0;
	const char *c;

	if (min != 0 || max != UINT64_MAX)
		snprintf(range, sizeof(range), " in %" PRIu64 "..%" PRIu64, min, max);
	if (s[0] == '0' && s[1] >= '0' && s[1] <= '9')
		return fail(err, err_len, "%s '%s' has a leading zero: numbers are decimal here "
			    "(QEMU would read it as octal); write it without", what, s);
	for (c = s; *c >= '0' && *c <= '9'; c++) {
		if (v > (UINT64_MAX - (uint64_t)(*c - '0')) / 10)
			break;
		v = v * 10 + (uint64_t)(*c - '0');
	}
	if (c == s || *c != '\0' || v < min || v > max)
		return fail(err, err_len, "%s '%s' is not a decimal number%s", what, s, range);
	*val = v;
	return 0;
}

/* app_num_parse() for the unsigned int and uint32_t values of the options and keys. */
static int num_u32(const char *what, const char *s, uint32_t min, uint32_t max, uint32_t *val,
		   char *err, size_t err_len)
{
	uint64_t v;

	if (app_num_parse(what, s, min, max, &v, err, err_len) < 0)
		return -1;
	*val = (uint32_t)v;
	return 0;
}

int app_burst_parse(const char *s, unsigned int *burst, char *err, size_t err_len)
{
	return num_u32("burst size", s, 1, VSOCK_PMD_BURST_MAX, burst, err, err_len);
}

int app_mbufs_parse(const char *s, unsigned int *mbufs, char *err, size_t err_len)
{
	return num_u32("mbufs per VM", s, VSOCK_PMD_MBUFS_MIN, VSOCK_PMD_MBUFS_MAX, mbufs, err,
		       err_len);
}

int app_stats_period_parse(const char *s, unsigned int *period, char *err, size_t err_len)
{
	return num_u32("statistics period (seconds)", s, 1, APP_STATS_PERIOD_MAX, period, err,
		       err_len);
}

static int copy_path(char *dst, const char *val, const char *key, size_t max,
		     char *err, size_t err_len)
{
	size_t len = strlen(val);

	if (len == 0)
		return fail(err, err_len, "--vm: %s= needs a path", key);
	if (len > max)
		return fail(err, err_len, "--vm: %s path '%s' is longer than %zu bytes "
			    "(a Unix socket path limit)", key, val, max);
	memcpy(dst, val, len + 1);
	return 0;
}

/* Group names go in logs and the console: letters, digits, '-', '_' and '.' only. */
static int add_group(struct vsock_pmd_vm_conf *vm, const char *name, char *err, size_t err_len)
{
	size_t len = strlen(name), i;

	if (len == 0 || len >= VSOCK_PMD_GROUP_NAME_MAX)
		return fail(err, err_len, "--vm: group name '%s' must have 1 to %d characters",
			    name, VSOCK_PMD_GROUP_NAME_MAX - 1);
	for (i = 0; i < len; i++) {
		if (!isalnum((unsigned char)name[i]) && !strchr("-_.", name[i]))
			return fail(err, err_len, "--vm: group name '%s' may only hold letters, "
				    "digits, '-', '_' and '.'", name);
	}
	for (i = 0; i < vm->nb_groups; i++) {
		if (strcmp(vm->groups[i], name) == 0)
			return 0;
	}
	if (vm->nb_groups == VSOCK_PMD_MAX_VM_GROUPS)
		return fail(err, err_len, "--vm: at most %d groups per VM",
			    VSOCK_PMD_MAX_VM_GROUPS);
	memcpy(vm->groups[vm->nb_groups++], name, len + 1);
	return 0;
}

/* vhost-device-vsock's groups=a+b: every name a group= of ours. */
static int add_groups(struct vsock_pmd_vm_conf *vm, char *list, char *err, size_t err_len)
{
	char *save, *name;

	if (*list == '\0' || *list == '+' || list[strlen(list) - 1] == '+' || strstr(list, "++"))
		return fail(err, err_len, "--vm: groups '%s' must be group names joined by '+'",
			    list);
	for (name = strtok_r(list, "+", &save); name; name = strtok_r(NULL, "+", &save)) {
		if (add_group(vm, name, err, err_len) < 0)
			return -1;
	}
	return 0;
}

/* The CID vhost-device-vsock gives a VM described without one. */
#define PEER_DEFAULT_CID 3

/* socket-mode=: octal permission bits, as chmod(1) and systemd's SocketMode= take them. */
static int parse_socket_mode(const char *val, uint32_t *mode, char *err, size_t err_len)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(val, &end, 8);
	if (*val < '0' || *val > '7' || *end != '\0' || errno != 0 || v > 0777)
		return fail(err, err_len, "--vm: socket-mode '%s' is not an octal mode such as "
			    "0660 (digits 0-7, at most 0777)", val);
	if ((v & 0600) != 0600)
		return fail(err, err_len, "--vm: socket-mode '%s' must let the owner read and "
			    "write (0600): the app itself is the owner", val);
	*mode = (uint32_t)v;
	return 0;
}

/* socket-group=: a group name or a numeric gid, which must exist on this host. */
static int parse_socket_group(const char *val, uint32_t *gid, char *err, size_t err_len)
{
	struct group gr, *res = NULL;
	char buf[4096];
	uint32_t v;

	if (*val != '\0' && val[strspn(val, "0123456789")] == '\0') {
		if (num_u32("--vm: socket-group (gid)", val, 0, UINT32_MAX, &v, err, err_len) < 0)
			return -1;
		getgrgid_r((gid_t)v, &gr, buf, sizeof(buf), &res);
	} else {
		getgrnam_r(val, &gr, buf, sizeof(buf), &res);
	}
	if (res == NULL)
		return fail(err, err_len, "--vm: socket-group '%s' is not a group name or gid "
			    "on this host", val);
	*gid = (uint32_t)res->gr_gid;
	return 0;
}

/* The --vm keys that are per-VM limits (vsock_pmd.h): their range and their field. */
static const struct limit_key {
	const char *key;
	uint32_t min, max;
	size_t off;
	/* vhost-device-vsock's key: its defaults may differ from ours. */
	bool peer;
} limit_keys[] = {
	{ "tx-buffer-size", VSOCK_PMD_TX_BUFFER_MIN, VSOCK_PMD_TX_BUFFER_MAX,
	  offsetof(struct vsock_pmd_vm_conf, tx_buffer_size), true },
	{ "queue-size", 1, VSOCK_PMD_QUEUE_SIZE_MAX,
	  offsetof(struct vsock_pmd_vm_conf, queue_size), true },
	{ "max-connections", 1, VSOCK_PMD_MAX_CONNS_MAX,
	  offsetof(struct vsock_pmd_vm_conf, max_conns), false },
	{ "max-pipes", 1, VSOCK_PMD_MAX_PIPES_MAX,
	  offsetof(struct vsock_pmd_vm_conf, max_pipes), false },
	{ "line-timeout-ms", 1, VSOCK_PMD_TIMEOUT_MS_MAX,
	  offsetof(struct vsock_pmd_vm_conf, line_timeout_ms), false },
	{ "connect-timeout-ms", 1, VSOCK_PMD_TIMEOUT_MS_MAX,
	  offsetof(struct vsock_pmd_vm_conf, connect_timeout_ms), false },
};

/* @p key of limit_keys into @p vm: 1 when applied, 0 when @p key is no limit, or -1. */
static int vm_limit_set(struct vsock_pmd_vm_conf *vm, const char *key, const char *val,
			bool *peer, char *err, size_t err_len)
{
	const struct limit_key *l;
	char what[48];

	for (l = limit_keys; l < limit_keys + RTE_DIM(limit_keys); l++) {
		if (strcmp(key, l->key) != 0)
			continue;
		snprintf(what, sizeof(what), "--vm: %s", key);
		if (num_u32(what, val, l->min, l->max, (uint32_t *)((char *)vm + l->off), err,
			    err_len) < 0)
			return -1;
		*peer |= l->peer;
		return 1;
	}
	return 0;
}

int app_vm_add(const char *spec, struct app_opts *opts, char *err, size_t err_len)
{
	/* Described with vhost-device-vsock's keys: its defaults may differ from ours. */
	bool peer = false;
	struct vsock_pmd_conf *conf = &opts->pmd;
	struct vsock_pmd_vm_conf vm = { 0 };
	bool have_cid = false;
	char buf[1024], what[48];
	char *save, *item;
	int rc;

	if (conf->nb_vms == VSOCK_PMD_MAX_VMS)
		return fail(err, err_len, "--vm: at most %d VMs", VSOCK_PMD_MAX_VMS);
	if (strlen(spec) >= sizeof(buf))
		return fail(err, err_len, "--vm: description is too long");
	strcpy(buf, spec);

	for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *val = strchr(item, '=');

		if (!val)
			return fail(err, err_len, "--vm: '%s' is not key=value", item);
		*val++ = '\0';
		/* vhost-device-vsock takes every key with '-' or '_': so do we. */
		for (char *k = item; *k; k++)
			*k = *k == '_' ? '-' : *k;
		rc = vm_limit_set(&vm, item, val, &peer, err, err_len);
		if (rc < 0)
			return -1;
		if (rc > 0)
			continue;
		if (strcmp(item, "cid") == 0 || strcmp(item, "guest-cid") == 0) {
			snprintf(what, sizeof(what), "--vm: %s", item);
			if (app_num_parse(what, val, 0, UINT64_MAX, &vm.cid, err, err_len) < 0)
				return -1;
			have_cid = true;
			peer |= strcmp(item, "guest-cid") == 0;
		} else if (strcmp(item, "socket") == 0) {
			if (copy_path(vm.socket_path, val, "socket", VSOCK_PMD_PATH_MAX,
				      err, err_len) < 0)
				return -1;
		} else if (strcmp(item, "uds") == 0) {
			if (copy_path(vm.uds_path, val, "uds",
				      VSOCK_PMD_PATH_MAX - UDS_PORT_SUFFIX_MAX, err, err_len) < 0)
				return -1;
		} else if (strcmp(item, "lcore") == 0) {
			if (num_u32("--vm: lcore", val, 0, RTE_MAX_LCORE - 1, &vm.lcore, err,
				    err_len) < 0)
				return -1;
			vm.pinned = true;
		} else if (strcmp(item, "group") == 0) {
			if (add_group(&vm, val, err, err_len) < 0)
				return -1;
		} else if (strcmp(item, "client") == 0) {
			if (strcmp(val, "0") != 0 && strcmp(val, "1") != 0)
				return fail(err, err_len, "--vm: client '%s' is not 0 or 1", val);
			vm.client = val[0] == '1';
		} else if (strcmp(item, "uds-path") == 0) {
			if (copy_path(vm.uds_path, val, "uds-path",
				      VSOCK_PMD_PATH_MAX - UDS_PORT_SUFFIX_MAX, err, err_len) < 0)
				return -1;
			peer = true;
		} else if (strcmp(item, "groups") == 0) {
			if (add_groups(&vm, val, err, err_len) < 0)
				return -1;
			peer = true;
		} else if (strcmp(item, "forward-cid") == 0 || strcmp(item, "forward-listen") == 0) {
			return fail(err, err_len, "--vm: %s= (vhost-device-vsock's AF_VSOCK "
				    "forwarding backend) is not supported: give the VM a uds-path= "
				    "and have host programs use its hybrid Unix sockets, or bridge "
				    "them with socat (doc/migrating.md)", item);
		} else if (strcmp(item, "socket-mode") == 0) {
			if (parse_socket_mode(val, &vm.socket_mode, err, err_len) < 0)
				return -1;
		} else if (strcmp(item, "socket-group") == 0) {
			if (parse_socket_group(val, &vm.socket_gid, err, err_len) < 0)
				return -1;
			vm.socket_group_set = true;
		} else {
			return fail(err, err_len, "--vm: unknown key '%s' (expected cid, socket, "
				    "uds, lcore, group, client, socket-mode, socket-group, "
				    "max-connections, max-pipes, line-timeout-ms, connect-timeout-ms, or "
				    "vhost-device-vsock's guest-cid, uds-path, tx-buffer-size, "
				    "queue-size, groups)", item);
		}
	}
	if (peer && !have_cid) {
		vm.cid = PEER_DEFAULT_CID;
		have_cid = true;
	}
	opts->peer_keys |= peer;
	if (!have_cid)
		return fail(err, err_len, "--vm '%s': missing cid= (guest-cid=)", spec);
	if (vm.socket_path[0] == '\0')
		return fail(err, err_len, "--vm '%s': missing socket=", spec);
	if (vm.uds_path[0] == '\0')
		return fail(err, err_len, "--vm '%s': missing uds= (uds-path=)", spec);

	/* A group is given to be let in: under the usual umask it could not write otherwise. */
	if (vm.socket_group_set && vm.socket_mode == 0)
		vm.socket_mode = 0660;
	conf->vms[conf->nb_vms++] = vm;
	return 0;
}

int app_used_publish_parse(const char *s, bool *per_entry, char *err, size_t err_len)
{
	if (strcmp(s, "batch") == 0)
		*per_entry = false;
	else if (strcmp(s, "per-entry") == 0)
		*per_entry = true;
	else
		return fail(err, err_len, "used publication '%s' is not batch or per-entry", s);
	return 0;
}

int app_wait_mode_parse(const char *s, enum vsock_pmd_wait_mode *mode, char *err,
			size_t err_len)
{
	if (strcmp(s, "poll") == 0)
		*mode = VSOCK_PMD_WAIT_POLL;
	else if (strcmp(s, "notify") == 0)
		*mode = VSOCK_PMD_WAIT_NOTIFY;
	else if (strcmp(s, "adaptive") == 0)
		*mode = VSOCK_PMD_WAIT_ADAPTIVE;
	else
		return fail(err, err_len, "wait mode '%s' is not poll, notify or adaptive", s);
	return 0;
}

int app_idle_us_parse(const char *s, unsigned int *idle_us, char *err, size_t err_len)
{
	return num_u32("idle time (microseconds)", s, 1, VSOCK_PMD_IDLE_US_MAX, idle_us, err,
		       err_len);
}

const struct option app_long_opts[] = {
	{ "vm", required_argument, NULL, APP_OPT_VM },
	{ "config", required_argument, NULL, APP_OPT_CONFIG },
	{ "burst", required_argument, NULL, APP_OPT_BURST },
	{ "mbufs", required_argument, NULL, APP_OPT_MBUFS },
	{ "interactive", no_argument, NULL, 'i' },
	{ "stats-period", required_argument, NULL, APP_OPT_STATS_PERIOD },
	{ "used-publish", required_argument, NULL, APP_OPT_USED_PUBLISH },
	{ "wait-mode", required_argument, NULL, APP_OPT_WAIT_MODE },
	{ "idle-us", required_argument, NULL, APP_OPT_IDLE_US },
	{ "guest-cid", required_argument, NULL, APP_OPT_GUEST_CID },
	{ "socket", required_argument, NULL, APP_OPT_SOCKET },
	{ "uds-path", required_argument, NULL, APP_OPT_UDS_PATH },
	{ "tx-buffer-size", required_argument, NULL, APP_OPT_TX_BUFFER_SIZE },
	{ "queue-size", required_argument, NULL, APP_OPT_QUEUE_SIZE },
	{ "groups", required_argument, NULL, APP_OPT_GROUPS },
	{ "forward-cid", required_argument, NULL, APP_OPT_FORWARD_CID },
	{ "forward-listen", required_argument, NULL, APP_OPT_FORWARD_LISTEN },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, APP_OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

/* One of vhost-device-vsock's single-VM options: a key of the VM app_args_parse() adds. */
static int single_vm_set(int opt, const char *val, struct app_opts *opts, char *err,
			 size_t err_len)
{
	const char *name = app_long_opts[0].name;
	size_t used = strlen(opts->single_vm);
	const struct option *o;

	for (o = app_long_opts; o->name; o++) {
		if (o->val == opt)
			name = o->name;
	}
	if (opt == APP_OPT_FORWARD_CID || opt == APP_OPT_FORWARD_LISTEN)
		return fail(err, err_len, "--%s (vhost-device-vsock's AF_VSOCK forwarding "
			    "backend) is not supported: use --uds-path and have host programs "
			    "use its hybrid Unix sockets, or bridge them with socat "
			    "(doc/migrating.md)", name);
	if (strchr(val, ','))
		return fail(err, err_len, "--%s '%s': a value with ',' cannot be used", name, val);
	if (snprintf(opts->single_vm + used, sizeof(opts->single_vm) - used, "%s=%s,", name,
		     val) >= (int)(sizeof(opts->single_vm) - used))
		return fail(err, err_len, "--%s: the VM's options are too long", name);
	return 0;
}

int app_opt_apply(int opt, const char *val, struct app_opts *opts, char *err, size_t err_len)
{
	if (opt >= APP_OPT_PEER_VM_FIRST && opt <= APP_OPT_PEER_VM_LAST)
		return single_vm_set(opt, val, opts, err, err_len);
	switch (opt) {
	case APP_OPT_VM:
		return app_vm_add(val, opts, err, err_len);
	case APP_OPT_BURST:
		return app_burst_parse(val, &opts->pmd.burst, err, err_len);
	case APP_OPT_MBUFS:
		return app_mbufs_parse(val, &opts->pmd.mbufs_per_vm, err, err_len);
	case APP_OPT_STATS_PERIOD:
		return app_stats_period_parse(val, &opts->stats_period, err, err_len);
	case APP_OPT_USED_PUBLISH:
		return app_used_publish_parse(val, &opts->pmd.used_per_entry, err, err_len);
	case APP_OPT_WAIT_MODE:
		return app_wait_mode_parse(val, &opts->pmd.wait_mode, err, err_len);
	case APP_OPT_IDLE_US:
		return app_idle_us_parse(val, &opts->pmd.idle_us, err, err_len);
	default:
		return fail(err, err_len, "option %d takes no value", opt);
	}
}

int app_opt_set(const char *name, const char *val, struct app_opts *opts, char *err,
		size_t err_len)
{
	const struct option *o;

	for (o = app_long_opts; o->name; o++) {
		if (strcmp(o->name, name) != 0)
			continue;
		/* A file names what to serve; how to run the console stays on the command line. */
		if (o->has_arg != required_argument || o->val == APP_OPT_CONFIG)
			return fail(err, err_len, "'%s' cannot be used in a config file", name);
		return app_opt_apply(o->val, val, opts, err, err_len);
	}
	return fail(err, err_len, "unknown key '%s' (expected vm, burst, mbufs, stats-period, "
		    "used-publish, wait-mode, idle-us)", name);
}

bool app_opt_known(const char *name)
{
	const struct option *o;

	for (o = app_long_opts; o->name; o++) {
		if (strcmp(o->name, name) == 0)
			return true;
	}
	return false;
}

static bool cid_reserved(uint64_t cid)
{
	return cid == CID_HYPERVISOR || cid == CID_LOCAL || cid == CID_HOST || cid >= CID_ANY;
}

/*
 * The socket's directory must exist and be writable; the path itself must be free or a
 * stale socket.
 */
static int check_socket_path(const char *path, const char *what, uint64_t cid,
			     char *err, size_t err_len)
{
	char dir[VSOCK_PMD_PATH_MAX + 1];
	const char *slash = strrchr(path, '/');
	struct stat st;

	if (!slash)
		strcpy(dir, ".");
	else if (slash == path)
		strcpy(dir, "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);

	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return fail(err, err_len, "VM cid %" PRIu64 ": %s directory '%s' does not exist",
			    cid, what, dir);
	if (access(dir, W_OK | X_OK) < 0)
		return fail(err, err_len, "VM cid %" PRIu64 ": %s directory '%s' is not writable",
			    cid, what, dir);
	if (lstat(path, &st) == 0) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		int fd, rc;

		if (!S_ISSOCK(st.st_mode))
			return fail(err, err_len, "VM cid %" PRIu64 ": %s path '%s' exists and is "
				    "not a socket", cid, what, path);
		/* A socket someone still accepts on belongs to a live process: never steal it. */
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (fd < 0)
			return fail(err, err_len, "socket(): %s", strerror(errno));
		strcpy(sa.sun_path, path);
		rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
		close(fd);
		if (rc == 0)
			return fail(err, err_len, "VM cid %" PRIu64 ": %s path '%s' is in use by a "
				    "running process", cid, what, path);
	}
	return 0;
}

/* Distinct group names across every VM. */
static unsigned int count_groups(const struct vsock_pmd_conf *conf)
{
	unsigned int i, g, n = 0;

	for (i = 0; i < conf->nb_vms; i++) {
		for (g = 0; g < conf->vms[i].nb_groups; g++) {
			const char *name = conf->vms[i].groups[g];
			bool seen = false;
			unsigned int j, h;

			for (j = 0; j < i && !seen; j++) {
				for (h = 0; h < conf->vms[j].nb_groups && !seen; h++)
					seen = strcmp(conf->vms[j].groups[h], name) == 0;
			}
			n += !seen;
		}
	}
	return n;
}

int app_opts_validate(const struct app_opts *opts, char *err, size_t err_len)
{
	const struct vsock_pmd_conf *conf = &opts->pmd;
	unsigned int i, j;

	if (conf->nb_vms == 0)
		return fail(err, err_len, "no VM configured: use --vm cid=N,socket=PATH,uds=PATH "
			    "or --config FILE");

	for (i = 0; i < conf->nb_vms; i++) {
		const struct vsock_pmd_vm_conf *a = &conf->vms[i];

		if (cid_reserved(a->cid))
			return fail(err, err_len, "VM cid %" PRIu64 " is reserved or out of range "
				    "(0, 1, 2 and 4294967295 and above cannot be guest CIDs)", a->cid);
		for (j = 0; j < i; j++) {
			if (a->cid == conf->vms[j].cid)
				return fail(err, err_len, "duplicate VM cid %" PRIu64, a->cid);
		}
	}
	if (vsock_pmd_conf_check_paths(conf, err, err_len) < 0)
		return -1;
	if (conf->idle_us && conf->wait_mode != VSOCK_PMD_WAIT_ADAPTIVE)
		return fail(err, err_len, "--idle-us applies to --wait-mode adaptive only");
	if (count_groups(conf) > VSOCK_PMD_MAX_GROUPS)
		return fail(err, err_len, "more than %d distinct group names", VSOCK_PMD_MAX_GROUPS);
	return 0;
}

int app_opts_check_host(const struct app_opts *opts, char *err, size_t err_len)
{
	const struct vsock_pmd_conf *conf = &opts->pmd;
	unsigned int i;

	for (i = 0; i < conf->nb_vms; i++) {
		const struct vsock_pmd_vm_conf *a = &conf->vms[i];

		/* A client connects to a socket someone else serves: nothing to check up front. */
		if ((!a->client &&
		     check_socket_path(a->socket_path, "socket", a->cid, err, err_len) < 0) ||
		    check_socket_path(a->uds_path, "uds", a->cid, err, err_len) < 0)
			return -1;
	}
	return 0;
}

const char *app_opts_notice(const struct app_opts *opts)
{
	if (!opts->peer_keys || opts->pmd.nb_vms < 2 || count_groups(&opts->pmd) != 0)
		return NULL;
	return "no VM names a group: each reaches the host only (vhost-device-vsock would put "
	       "them all in group 'default'); add groups=default to each VM that should reach "
	       "the others";
}
