/* SPDX-License-Identifier: BSD-3-Clause */
/* Command line and config file parsing: good inputs, and bad ones named precisely. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "args.h"
#include "tap.h"

static char dir[64];
static char err[APP_ERR_LEN];

/* Parse a whitespace-separated command line after "--" and validate it. */
static int run(struct app_opts *opts, const char *cmdline)
{
	char buf[4096], *argv[64], *save, *tok;
	int argc = 0;

	snprintf(buf, sizeof(buf), "-- %s", cmdline);
	for (tok = strtok_r(buf, " ", &save); tok && argc < 63; tok = strtok_r(NULL, " ", &save))
		argv[argc++] = tok;
	argv[argc] = NULL;
	app_opts_init(opts);
	err[0] = '\0';
	if (app_args_parse(argc, argv, opts, err, sizeof(err)) < 0 ||
	    app_opts_validate(opts, err, sizeof(err)) < 0)
		return -1;
	return app_opts_check_host(opts, err, sizeof(err));
}

/* Expect failure with a message containing @p needle. */
static void bad(const char *cmdline, const char *needle)
{
	struct app_opts opts;
	int rc = run(&opts, cmdline);

	if (!tap_ok(rc < 0 && strstr(err, needle), "rejects '%s' naming '%s'", cmdline, needle))
		tap_diag("rc %d, message: %s", rc, err);
}

static void vm_arg(char *out, size_t len, unsigned int cid, const char *extra)
{
	snprintf(out, len, "--vm cid=%u,socket=%s/vm%u.sock,uds=%s/vm%u.vsock%s",
		 cid, dir, cid, dir, cid, extra);
}

/* @p tmpl with every "%D" replaced by the test directory, in @p out. */
static char *expand_dir(const char *tmpl, char *out, size_t len)
{
	size_t o = 0;

	for (; *tmpl != '\0' && o + 1 < len; tmpl++) {
		if (tmpl[0] == '%' && tmpl[1] == 'D') {
			o += (size_t)snprintf(out + o, len - o, "%s", dir);
			tmpl++;
		} else {
			out[o++] = *tmpl;
		}
	}
	out[o < len ? o : len - 1] = '\0';
	return out;
}

static void test_good(void)
{
	struct app_opts opts;
	char cmd[1024], a[256], b[256];

	vm_arg(a, sizeof(a), 3, "");
	tap_ok(run(&opts, a) == 0, "one VM accepted: %s", err);
	tap_ok(opts.pmd.nb_vms == 1 && opts.pmd.vms[0].cid == 3, "cid 3 parsed");
	tap_ok(opts.pmd.burst == VSOCK_PMD_BURST_DEFAULT, "default burst %u", opts.pmd.burst);
	snprintf(cmd, sizeof(cmd), "%s/vm3.sock", dir);
	tap_ok(strcmp(opts.pmd.vms[0].socket_path, cmd) == 0, "socket path kept");
	snprintf(cmd, sizeof(cmd), "%s/vm3.vsock", dir);
	tap_ok(strcmp(opts.pmd.vms[0].uds_path, cmd) == 0, "uds path kept");

	vm_arg(a, sizeof(a), 3, "");
	vm_arg(b, sizeof(b), 0x10, "");
	snprintf(cmd, sizeof(cmd), "%s %s --burst 512", a, b);
	tap_ok(run(&opts, cmd) == 0 && opts.pmd.nb_vms == 2 && opts.pmd.vms[1].cid == 16 &&
	       opts.pmd.burst == 512, "two VMs and burst 512");

	snprintf(cmd, sizeof(cmd), "--vm uds=%s/u,cid=4294967294,socket=%s/s", dir, dir);
	tap_ok(run(&opts, cmd) == 0 && opts.pmd.vms[0].cid == 0xfffffffeULL,
	       "keys in any order, largest valid cid");
	tap_ok(run(&opts, "-h") < 0 && strstr(err, "no VM"), "help alone still needs no VM "
	       "to parse, validation asks for one");
	tap_ok(app_args_parse(2, (char *[]){ "--", "--help", NULL }, &opts, err,
			      sizeof(err)) == 0 && opts.help, "--help recognised");
}

static void test_bad_args(void)
{
	char a[256], b[512];

	bad("", "no VM configured");
	vm_arg(a, sizeof(a), 3, "");
	snprintf(b, sizeof(b), "%s --vm cid=3,socket=%s/x.sock,uds=%s/x.vsock", a, dir, dir);
	bad(b, "duplicate VM cid 3");
	for (unsigned int cid = 0; cid <= 2; cid++) {
		vm_arg(a, sizeof(a), cid, "");
		bad(a, "reserved");
	}
	snprintf(a, sizeof(a), "--vm cid=4294967295,socket=%s/s,uds=%s/u", dir, dir);
	bad(a, "reserved");
	snprintf(a, sizeof(a), "--vm cid=4294967299,socket=%s/s,uds=%s/u", dir, dir);
	bad(a, "out of range");
	snprintf(a, sizeof(a), "--vm cid=-3,socket=%s/s,uds=%s/u", dir, dir);
	bad(a, "cid '-3' is not a decimal number");
	snprintf(a, sizeof(a), "--vm cid=3x,socket=%s/s,uds=%s/u", dir, dir);
	bad(a, "cid '3x' is not a decimal number");
	vm_arg(a, sizeof(a), 3, ",colour=blue");
	bad(a, "unknown key 'colour'");
	vm_arg(a, sizeof(a), 3, ",oops");
	bad(a, "'oops' is not key=value");
	snprintf(a, sizeof(a), "--vm socket=%s/s,uds=%s/u", dir, dir);
	bad(a, "missing cid=");
	snprintf(a, sizeof(a), "--vm cid=3,uds=%s/u", dir);
	bad(a, "missing socket=");
	snprintf(a, sizeof(a), "--vm cid=3,socket=%s/s", dir);
	bad(a, "missing uds=");
	snprintf(a, sizeof(a), "--vm cid=3,socket=,uds=%s/u", dir);
	bad(a, "socket= needs a path");
	snprintf(a, sizeof(a), "--vm cid=3,socket=%s/%0100d,uds=%s/u", dir, 0, dir);
	bad(a, "longer than");
	/* The uds path needs room for "_<port>" (guest-to-host connects). */
	snprintf(a, sizeof(a), "--vm cid=3,socket=%s/s,uds=%s/%090d", dir, dir, 0);
	bad(a, "uds path");
	snprintf(a, sizeof(a), "--vm cid=3,socket=%s/same,uds=%s/same", dir, dir);
	bad(a, "same path");
	vm_arg(a, sizeof(a), 3, "");
	snprintf(b, sizeof(b), "%s --vm cid=4,socket=%s/vm3.sock,uds=%s/x", a, dir, dir);
	bad(b, "VM cid 3 socket= '");
	bad(b, "' and VM cid 4 socket= '");
	bad("--vm cid=3,socket=/nonexistent-dir/s.sock,uds=/tmp/u", "'/nonexistent-dir' does not exist");
	bad("--vm cid=3,socket=/etc/passwd/s.sock,uds=/tmp/u", "does not exist");
	vm_arg(a, sizeof(a), 3, "");
	snprintf(b, sizeof(b), "%s --burst 0", a);
	bad(b, "burst size '0'");
	snprintf(b, sizeof(b), "%s --burst 513", a);
	bad(b, "burst size '513'");
	snprintf(b, sizeof(b), "%s --burst many", a);
	bad(b, "burst size 'many'");
	bad("--frobnicate", "unknown option '--frobnicate'");
	bad("--vm", "needs a value");
	snprintf(b, sizeof(b), "%s stray", a);
	bad(b, "unexpected argument 'stray'");
}

/* Placement, groups and the tuning options added for many VMs, faults and the benchmark. */
static void test_more_options(void)
{
	struct app_opts opts;
	char a[256], cmd[512];

	vm_arg(a, sizeof(a), 3, ",lcore=1,group=red,group=blue,group=red");
	tap_ok(run(&opts, a) == 0 && opts.pmd.vms[0].pinned && opts.pmd.vms[0].lcore == 1 &&
	       opts.pmd.vms[0].nb_groups == 2 && strcmp(opts.pmd.vms[0].groups[0], "red") == 0 &&
	       strcmp(opts.pmd.vms[0].groups[1], "blue") == 0,
	       "lcore=1 pins, groups kept once each in order: %s", err);
	vm_arg(a, sizeof(a), 3, "");
	tap_ok(run(&opts, a) == 0 && !opts.pmd.vms[0].pinned && opts.pmd.vms[0].nb_groups == 0,
	       "no lcore= means balanced, no group= means no sibling");
	vm_arg(a, sizeof(a), 3, ",lcore=x");
	bad(a, "lcore 'x' is not a decimal number");
	vm_arg(a, sizeof(a), 3, ",group=");
	bad(a, "group name '' must have 1 to");
	vm_arg(a, sizeof(a), 3, ",group=a/b");
	bad(a, "group name 'a/b' may only hold");

	vm_arg(a, sizeof(a), 3, "");
	snprintf(cmd, sizeof(cmd), "%s --mbufs 1024 --used-publish per-entry --wait-mode notify "
		 "--stats-period 5", a);
	tap_ok(run(&opts, cmd) == 0 && opts.pmd.mbufs_per_vm == 1024 && opts.pmd.used_per_entry &&
	       opts.pmd.wait_mode == VSOCK_PMD_WAIT_NOTIFY && opts.stats_period == 5,
	       "--mbufs, --used-publish, --wait-mode, --stats-period parsed: %s", err);
	snprintf(cmd, sizeof(cmd), "%s --mbufs 1", a);
	bad(cmd, "mbufs per VM '1' is not a decimal number in");
	snprintf(cmd, sizeof(cmd), "%s --used-publish sometimes", a);
	bad(cmd, "used publication 'sometimes'");
	snprintf(cmd, sizeof(cmd), "%s --wait-mode nap", a);
	bad(cmd, "wait mode 'nap'");
	snprintf(cmd, sizeof(cmd), "%s --stats-period 0", a);
	bad(cmd, "statistics period (seconds) '0'");
}

static void test_paths(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char path[128], a[256];
	int fd, live;
	FILE *f;

	/* A regular file where the socket should go is never overwritten. */
	snprintf(path, sizeof(path), "%s/vm5.sock", dir);
	f = fopen(path, "w");
	fclose(f);
	vm_arg(a, sizeof(a), 5, "");
	bad(a, "exists and is not a socket");
	unlink(path);

	/* A socket nobody listens on is stale (a crashed run) and may be replaced. */
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	strcpy(sa.sun_path, path);
	bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	{
		struct app_opts opts;

		tap_ok(run(&opts, a) == 0, "stale socket accepted: %s", err);
	}
	unlink(path);

	/* A socket a live process serves belongs to it. */
	live = socket(AF_UNIX, SOCK_STREAM, 0);
	bind(live, (struct sockaddr *)&sa, sizeof(sa));
	listen(live, 1);
	bad(a, "in use by a running process");
	close(live);
	unlink(path);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	fputs(text, f);
	fclose(f);
}

static void test_config(void)
{
	struct app_opts opts;
	char path[128], text[1024], cmd[512];

	snprintf(path, sizeof(path), "%s/good.conf", dir);
	snprintf(text, sizeof(text),
		 "# two VMs\n"
		 "burst 64\n"
		 "\n"
		 "vm cid=7,socket=%s/a.sock,uds=%s/a.vsock   # trailing comment\n"
		 "  vm\tcid=8,socket=%s/b.sock,uds=%s/b.vsock\n", dir, dir, dir, dir);
	write_file(path, text);
	snprintf(cmd, sizeof(cmd), "--config %s", path);
	tap_ok(run(&opts, cmd) == 0 && opts.pmd.nb_vms == 2 && opts.pmd.vms[0].cid == 7 &&
	       opts.pmd.vms[1].cid == 8 && opts.pmd.burst == 64, "config file read: %s", err);

	snprintf(cmd, sizeof(cmd), "--config %s --vm cid=9,socket=%s/c,uds=%s/d --burst 8",
		 path, dir, dir);
	tap_ok(run(&opts, cmd) == 0 && opts.pmd.nb_vms == 3 && opts.pmd.burst == 8,
	       "config file combined with --vm, later options win");

	snprintf(cmd, sizeof(cmd), "--config %s --vm cid=8,socket=%s/c,uds=%s/d", path, dir, dir);
	bad(cmd, "duplicate VM cid 8");

	snprintf(path, sizeof(path), "%s/bad.conf", dir);
	write_file(path, "burst 32\nvm-count 3\n");
	snprintf(cmd, sizeof(cmd), "--config %s", path);
	bad(cmd, "bad.conf:2: unknown key 'vm-count'");

	write_file(path, "burst\n");
	bad(cmd, "bad.conf:1: 'burst' needs a value");

	write_file(path, "vm cid=3,socket=/tmp/s\n");
	bad(cmd, "bad.conf:1: --vm 'cid=3,socket=/tmp/s': missing uds=");

	snprintf(cmd, sizeof(cmd), "--config %s/missing.conf", dir);
	bad(cmd, "cannot read config file");

	/* Every long option with a value is a config key; the console and nesting stay out. */
	snprintf(path, sizeof(path), "%s/tune.conf", dir);
	snprintf(text, sizeof(text), "vm cid=3,socket=%s/t.sock,uds=%s/t.vsock\n"
		 "mbufs 2048\nused-publish per-entry\nwait-mode notify\nstats-period 3\n",
		 dir, dir);
	write_file(path, text);
	snprintf(cmd, sizeof(cmd), "--config %s", path);
	tap_ok(run(&opts, cmd) == 0 && opts.pmd.mbufs_per_vm == 2048 && opts.pmd.used_per_entry &&
	       opts.pmd.wait_mode == VSOCK_PMD_WAIT_NOTIFY && opts.stats_period == 3,
	       "tuning keys read from a config file: %s", err);
	snprintf(path, sizeof(path), "%s/bad.conf", dir);
	write_file(path, "interactive yes\n");
	snprintf(cmd, sizeof(cmd), "--config %s", path);
	bad(cmd, "bad.conf:1: 'interactive' cannot be used in a config file");
	write_file(path, "config /etc/other.conf\n");
	bad(cmd, "bad.conf:1: 'config' cannot be used in a config file");
}

/* vhost-device-vsock's keys and options (doc/migrating.md), and the per-VM limits. */
static void test_peer_keys(void)
{
	struct app_opts opts;
	const struct vsock_pmd_vm_conf *vm = &opts.pmd.vms[0];
	char a[512];

	snprintf(a, sizeof(a), "--vm guest_cid=7,socket=%s/s,uds_path=%s/u,tx_buffer_size=32768,"
		 "queue_size=256,groups=group1+groupA", dir, dir);
	tap_ok(run(&opts, a) == 0 && vm->cid == 7 && vm->tx_buffer_size == 32768 &&
	       vm->queue_size == 256 && vm->nb_groups == 2 &&
	       strcmp(vm->groups[1], "groupA") == 0 && opts.peer_keys,
	       "their keys with '_': %s", err);
	snprintf(a, sizeof(a), "--vm guest-cid=7,socket=%s/s,uds=%s/u,group=red,groups=blue+red,"
		 "max-connections=5,line-timeout-ms=100,connect-timeout-ms=200,lcore=1", dir, dir);
	tap_ok(run(&opts, a) == 0 && vm->nb_groups == 2 && vm->max_conns == 5 &&
	       vm->line_timeout_ms == 100 && vm->connect_timeout_ms == 200 && vm->pinned,
	       "their keys and ours mixed in one VM: %s", err);
	snprintf(a, sizeof(a), "--vm socket=%s/s,uds-path=%s/u", dir, dir);
	tap_ok(run(&opts, a) == 0 && vm->cid == 3, "no guest-cid with their keys: cid 3, as "
	       "theirs: %s", err);
	snprintf(a, sizeof(a), "--vm cid=3,socket=%s/s,uds=%s/u", dir, dir);
	tap_ok(run(&opts, a) == 0 && !opts.peer_keys && vm->tx_buffer_size == 0 &&
	       vm->queue_size == 0 && vm->max_conns == 0,
	       "our keys alone: limits left to the library's defaults");
	snprintf(a, sizeof(a), "--guest-cid=4 --socket=%s/s --uds-path=%s/u --tx-buffer-size=65536 "
		 "--queue-size=1024 --groups=g1", dir, dir);
	tap_ok(run(&opts, a) == 0 && opts.pmd.nb_vms == 1 && vm->cid == 4 &&
	       vm->tx_buffer_size == 65536 && vm->queue_size == 1024 && vm->nb_groups == 1,
	       "their single-VM options: %s", err);

	/* Their VMs without groups get one notice; with a group, or with ours, none. */
	snprintf(a, sizeof(a), "--vm guest-cid=3,socket=%s/a,uds-path=%s/b "
		 "--vm guest-cid=4,socket=%s/c,uds-path=%s/d", dir, dir, dir, dir);
	tap_ok(run(&opts, a) == 0 && app_opts_notice(&opts) &&
	       strstr(app_opts_notice(&opts), "default"), "notice: their VMs name no group");
	snprintf(a, sizeof(a), "--vm guest-cid=3,socket=%s/a,uds-path=%s/b,groups=x "
		 "--vm guest-cid=4,socket=%s/c,uds-path=%s/d", dir, dir, dir, dir);
	tap_ok(run(&opts, a) == 0 && !app_opts_notice(&opts), "no notice once a group is named");
	snprintf(a, sizeof(a), "--vm cid=3,socket=%s/a,uds=%s/b --vm cid=4,socket=%s/c,uds=%s/d",
		 dir, dir, dir, dir);
	tap_ok(run(&opts, a) == 0 && !app_opts_notice(&opts), "no notice for our own keys");

	snprintf(a, sizeof(a), "--vm guest-cid=5,socket=%s/s,forward-cid=1", dir);
	bad(a, "forward-cid= (vhost-device-vsock's AF_VSOCK");
	snprintf(a, sizeof(a), "--vm guest_cid=5,socket=%s/s,forward_listen=9001+9002", dir);
	bad(a, "forward-listen= (");
	snprintf(a, sizeof(a), "--guest-cid=5 --socket=%s/s --forward-cid=1", dir);
	bad(a, "--forward-cid (vhost-device-vsock's");
	snprintf(a, sizeof(a), "--vm guest-cid=x,socket=%s/s,uds-path=%s/u", dir, dir);
	bad(a, "guest-cid 'x' is not a decimal number");
	snprintf(a, sizeof(a), "--vm guest-cid=3,socket=%s/s,uds-path=%s/u,groups=a++b", dir, dir);
	bad(a, "joined by '+'");
	snprintf(a, sizeof(a), "--vm guest-cid=3,socket=%s/s,uds-path=%s/u,groups=a+", dir, dir);
	bad(a, "joined by '+'");
	snprintf(a, sizeof(a), "--vm guest-cid=3,socket=%s/s,uds-path=%s/u,groups=a+b!", dir, dir);
	bad(a, "may only hold");
	snprintf(a, sizeof(a), "--guest-cid=3 --socket=%s/s,x --uds-path=%s/u", dir, dir);
	bad(a, "a value with ','");
	snprintf(a, sizeof(a), "--guest-cid=3 --socket=%s/s", dir);
	bad(a, "missing uds= (uds-path=)");

	static const struct { const char *kv, *msg; } limits[] = {
		{ "tx-buffer-size=1023", "tx-buffer-size '1023' is not a decimal number in 1024..67108864" },
		{ "tx-buffer-size=67108865", "tx-buffer-size '67108865' is not a decimal number in" },
		{ "tx-buffer-size=64k", "tx-buffer-size '64k'" },
		{ "queue-size=0", "queue-size '0' is not a decimal number in 1..32768" },
		{ "queue-size=32769", "queue-size '32769'" },
		{ "max-connections=0", "max-connections '0' is not a decimal number in 1..16384" },
		{ "max-connections=16385", "max-connections '16385'" },
		{ "line-timeout-ms=0", "line-timeout-ms '0' is not a decimal number in 1..3600000" },
		{ "connect-timeout-ms=-5", "connect-timeout-ms '-5'" },
	};
	for (unsigned int i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		snprintf(a, sizeof(a), "--vm guest-cid=3,socket=%s/s,uds-path=%s/u,%s", dir, dir,
			 limits[i].kv);
		bad(a, limits[i].msg);
	}
}

/* Write @p text to "<dir>/<name>" and load it with --config. */
static int load(struct app_opts *opts, const char *name, const char *text)
{
	char path[128], cmd[160];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return -2;
	fputs(text, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "--config %s", path);
	return run(opts, cmd);
}

static void bad_yaml(const char *text, const char *needle)
{
	struct app_opts opts;
	int rc = load(&opts, "bad.yaml", text);

	if (!tap_ok(rc < 0 && strstr(err, needle), "YAML refused naming '%s'", needle))
		tap_diag("rc %d, message: %s", rc, err);
}

static void test_yaml(void)
{
	struct app_opts opts;
	char text[1024];

	snprintf(text, sizeof(text), "# theirs\nvms:\n  - guest_cid: 3\n    socket: %s/a\n"
		 "    uds_path: %s/b\n    tx_buffer_size: 65536\n    queue_size: 1024\n"
		 "    groups: group1+groupA\n  - guest_cid: 4\n    socket: \"%s/c\"\n"
		 "    uds_path: %s/d\nburst: 64\n", dir, dir, dir, dir);
	tap_ok(load(&opts, "v.yaml", text) == 0 && opts.pmd.nb_vms == 2 &&
	       opts.pmd.vms[0].tx_buffer_size == 65536 && opts.pmd.vms[0].nb_groups == 2 &&
	       opts.pmd.vms[1].cid == 4 && opts.pmd.burst == 64,
	       "their YAML, a quoted value and one of our options: %s", err);
	tap_ok(load(&opts, "v.conf", text) == 0 && opts.pmd.nb_vms == 2,
	       "recognised by content under another name: %s", err);
	snprintf(text, sizeof(text), "vm cid=3,socket=%s/a,uds=%s/b\n", dir, dir);
	tap_ok(load(&opts, "ours.conf", text) == 0 && opts.pmd.nb_vms == 1,
	       "our line format still read: %s", err);

	bad_yaml("vms:\n  - guest_cid: 3\n   socket: x\n", "bad.yaml:3:");
	bad_yaml("vms: 3\n", "bad.yaml:1:6: expected a list of VMs after 'vms:', found a value");
	bad_yaml("vms:\n  - 3\n", "bad.yaml:2:5: expected a map describing vms[0], found a value");
	bad_yaml("vms:\n  - guest_cid: [3]\n", "bad.yaml:2:16: expected a value for 'guest_cid', "
		 "found a list");
	bad_yaml("vms: []\n", "bad.yaml:1:6: expected at least one VM");
	bad_yaml("burst: 64\n", "bad.yaml:1:1: expected a 'vms:' list");
	bad_yaml("- 1\n", "bad.yaml:1:1: expected a map with a 'vms:' list, found a list");
	bad_yaml("vms:\n  - guest_cid: 3\n    colour: blue\n", "bad.yaml:2:5: vms[0]: unknown "
		 "key 'colour'");
	bad_yaml("vms:\n  - guest_cid: 3\n    socket: /tmp/a\n    uds_path: /tmp/b\n"
		 "    queue_size: 99999\n", "vms[0]: queue-size '99999' is not a decimal number in");
	bad_yaml("vms:\n  - guest_cid: 3\n    forward-cid: 1\n", "vms[0]: forward-cid= (");
	bad_yaml("vms:\n  - &a {guest_cid: 3}\n  - *a\n", "bad.yaml:3:5: aliases");
	bad_yaml("vms:\n  - guest_cid: 3\n---\nvms: []\n", "one document only");
	bad_yaml("vms: [\n", "bad.yaml:2:1:");
	bad_yaml("frobnicate: 1\nvms:\n  - guest_cid: 3\n", "bad.yaml:1:1: unknown key "
		 "'frobnicate'");
}

/*
 * Every number is decimal: one that looks octal or hexadecimal, or has a sign, is
 * refused with a message, wherever it is given (option, key, their key and option, config
 * file, YAML), never read in another base.
 */
static void test_decimal(void)
{
	static const struct { const char *extra, *msg; } forms[] = {
		{ "--burst 032", "burst size '032' has a leading zero" },
		{ "--burst 0x20", "burst size '0x20' is not a decimal number in 1..512" },
		{ "--burst +32", "burst size '+32' is not a decimal number" },
		{ "--mbufs 01024", "mbufs per VM '01024' has a leading zero" },
		{ "--stats-period 010", "statistics period (seconds) '010' has a leading zero" },
		{ "--wait-mode adaptive --idle-us 0x10", "idle time (microseconds) '0x10' is not" },
	};
	static const struct { const char *kv, *msg; } keys[] = {
		{ "cid=010", "--vm: cid '010' has a leading zero" },
		{ "cid=0x10", "--vm: cid '0x10' is not a decimal number" },
		{ "cid=+10", "--vm: cid '+10' is not a decimal number" },
		{ "cid=1e3", "--vm: cid '1e3' is not a decimal number" },
		{ "cid=18446744073709551626", "cid '18446744073709551626' is not a decimal number" },
		{ "guest_cid=010", "--vm: guest-cid '010' has a leading zero" },
		{ "lcore=01", "--vm: lcore '01' has a leading zero" },
		{ "max-connections=0100", "--vm: max-connections '0100' has a leading zero" },
		{ "max-pipes=0x10", "--vm: max-pipes '0x10' is not a decimal number in 1..16384" },
		{ "queue_size=0x100", "--vm: queue-size '0x100' is not a decimal number" },
		{ "socket-group=00", "--vm: socket-group (gid) '00' has a leading zero" },
		{ "socket-group=", "--vm: socket-group '' is not a group name or gid" },
	};
	struct app_opts opts;
	char a[512], cmd[768], text[512];
	unsigned int i;

	vm_arg(a, sizeof(a), 3, "");
	for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		snprintf(cmd, sizeof(cmd), "%s %s", a, forms[i].extra);
		bad(cmd, forms[i].msg);
	}
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		snprintf(cmd, sizeof(cmd), "--vm socket=%s/s,uds=%s/u,%s", dir, dir, keys[i].kv);
		bad(cmd, keys[i].msg);
	}
	snprintf(cmd, sizeof(cmd), "--guest-cid=010 --socket=%s/s --uds-path=%s/u", dir, dir);
	bad(cmd, "guest-cid '010' has a leading zero");
	snprintf(text, sizeof(text), "vm cid=010,socket=%s/s,uds=%s/u\n", dir, dir);
	tap_ok(load(&opts, "octal.conf", text) < 0 &&
	       strstr(err, "octal.conf:1: --vm: cid '010' has a leading zero"),
	       "config file: cid=010 refused: %s", err);
	snprintf(text, sizeof(text), "vms:\n  - guest_cid: 010\n    socket: %s/s\n"
		 "    uds_path: %s/u\n", dir, dir);
	tap_ok(load(&opts, "octal.yaml", text) < 0 &&
	       strstr(err, "vms[0]: guest-cid '010' has a leading zero"),
	       "YAML: guest_cid: 010 refused: %s", err);
	snprintf(text, sizeof(text), "vms:\n  - guest_cid: 0x10\n    socket: %s/s\n"
		 "    uds_path: %s/u\n", dir, dir);
	tap_ok(load(&opts, "hex.yaml", text) < 0 &&
	       strstr(err, "vms[0]: guest-cid '0x10' is not a decimal number"),
	       "YAML: guest_cid: 0x10 refused: %s", err);

	/* Zero itself is a number, and a decimal one is read as written. */
	snprintf(cmd, sizeof(cmd), "--vm cid=10,socket=%s/s,uds=%s/u,lcore=0,max-connections=100",
		 dir, dir);
	tap_ok(run(&opts, cmd) == 0 && opts.pmd.vms[0].cid == 10 && opts.pmd.vms[0].lcore == 0 &&
	       opts.pmd.vms[0].max_conns == 100, "cid=10 is 10, lcore=0 is 0: %s", err);
}

/* Append VM @p cid, described as "key=value,..." in @p spec, to the YAML in @p out. */
static void yaml_vm(char *out, size_t len, unsigned int cid, const char *spec)
{
	char buf[256], *save, *kv;
	size_t o = strlen(out);

	snprintf(buf, sizeof(buf), "%s", spec);
	o += (size_t)snprintf(out + o, len - o, "  - guest_cid: %u\n", cid);
	for (kv = strtok_r(buf, ",", &save); kv && o < len; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');

		*eq = '\0';
		o += (size_t)snprintf(out + o, len - o, "    %s: %s\n", kv, eq + 1);
	}
}

/*
 * A guest connecting to host port P reaches "<uds>_<P>": no VM's path may be a uds path
 * followed by '_' and digits, nor equal another, compared with the directory resolved. Each
 * refusal names both VMs and both keys, from the command line, a config file and YAML.
 */
static void test_overlap(void)
{
	static const struct {
		const char *vm3, *vm4, *msg[2];
	} cases[] = {
		{ "socket=%D/a.sock,uds=%D/v", "socket=%D/v_4,uds=%D/w",
		  { "VM cid 4 socket= '%D/v_4' is VM cid 3's uds= '%D/v' followed by _4",
		    "VM cid 3's guest reaches as a host port" } },
		{ "socket=%D/a.sock,uds=%D/v", "socket=%D/b.sock,uds=%D/v_1",
		  { "VM cid 4 uds= '%D/v_1' is VM cid 3's uds= '%D/v' followed by _1" } },
		{ "socket=%D/v_5,uds=%D/v", "socket=%D/b.sock,uds=%D/w",
		  { "VM cid 3 socket= '%D/v_5' is VM cid 3's uds= '%D/v' followed by _5" } },
		{ "socket=%D/a.sock,uds=%D/./v", "socket=%D/v,uds=%D/w",
		  { "VM cid 3 uds= '%D/./v' and VM cid 4 socket= '%D/v' are the same path" } },
		{ "socket=%D/a.sock,uds=%D/lnk/v", "socket=%D/b.sock,uds=%D//v_70000",
		  { "VM cid 4 uds= '%D//v_70000' is VM cid 3's uds= '%D/lnk/v' followed by _70000" } },
		{ "socket=%D/a.sock,uds-path=%D/v", "socket=%D/sub/../v_99999999999,uds=%D/w",
		  { "VM cid 4 socket= '%D/sub/../v_99999999999' is VM cid 3's uds= '%D/v'" } },
	};
	static const char *const fine[] = {
		"socket=%D/v_x,uds=%D/w", "socket=%D/v_,uds=%D/w", "socket=%D/vv_4,uds=%D/w",
		"socket=%D/v_4_5,uds=%D/w", "socket=%D/b.sock,uds=%D/v4",
	};
	struct app_opts opts;
	char vm3[256], vm4[256], cmd[768], text[768], msg[512], path[160];
	unsigned int i, k;

	snprintf(path, sizeof(path), "%s/lnk", dir);
	if (symlink(".", path) < 0)
		tap_diag("symlink %s: %m", path);
	snprintf(path, sizeof(path), "%s/sub", dir);
	if (mkdir(path, 0700) < 0)
		tap_diag("mkdir %s: %m", path);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool cli, file, yaml;

		expand_dir(cases[i].vm3, vm3, sizeof(vm3));
		expand_dir(cases[i].vm4, vm4, sizeof(vm4));
		snprintf(cmd, sizeof(cmd), "--vm cid=3,%s --vm cid=4,%s", vm3, vm4);
		cli = run(&opts, cmd) < 0;
		for (k = 0; k < 2 && cases[i].msg[k]; k++)
			cli = cli && strstr(err, expand_dir(cases[i].msg[k], msg, sizeof(msg)));
		if (!tap_ok(cli, "overlap refused from the command line: %s", cmd))
			tap_diag("message: %s", err);
		expand_dir(cases[i].msg[0], msg, sizeof(msg));
		snprintf(text, sizeof(text), "vm cid=3,%s\nvm cid=4,%s\n", vm3, vm4);
		file = load(&opts, "overlap.conf", text) < 0 && strstr(err, msg);
		if (!tap_ok(file, "the same from a config file"))
			tap_diag("message: %s", err);
		snprintf(text, sizeof(text), "vms:\n");
		yaml_vm(text, sizeof(text), 3, vm3);
		yaml_vm(text, sizeof(text), 4, vm4);
		yaml = load(&opts, "overlap.yaml", text) < 0 && strstr(err, msg);
		if (!tap_ok(yaml, "the same from YAML"))
			tap_diag("YAML:\n%s\nmessage: %s", text, err);
	}
	for (i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
		expand_dir(fine[i], vm4, sizeof(vm4));
		snprintf(cmd, sizeof(cmd), "--vm cid=3,socket=%s/a.sock,uds=%s/v --vm cid=4,%s",
			 dir, dir, vm4);
		tap_ok(run(&opts, cmd) == 0, "no overlap: %s (%s)", vm4, err);
	}
}

int main(void)
{
	char cmd[128];
	int rc;

	snprintf(dir, sizeof(dir), "/tmp/vsock-args-XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_good();
	test_bad_args();
	test_more_options();
	test_paths();
	test_config();
	test_peer_keys();
	test_yaml();
	test_decimal();
	test_overlap();
	rc = tap_done();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		tap_diag("could not remove %s", dir);
	return rc;
}
