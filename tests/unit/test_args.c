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
	if (app_args_parse(argc, argv, opts, err, sizeof(err)) < 0)
		return -1;
	return app_opts_validate(opts, err, sizeof(err));
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
	       opts.pmd.burst == 512, "two VMs (hex cid) and burst 512");

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
	snprintf(a, sizeof(a), "--vm cid=0xffffffff,socket=%s/s,uds=%s/u", dir, dir);
	bad(a, "reserved");
	snprintf(a, sizeof(a), "--vm cid=0x100000003,socket=%s/s,uds=%s/u", dir, dir);
	bad(a, "out of range");
	snprintf(a, sizeof(a), "--vm cid=-3,socket=%s/s,uds=%s/u", dir, dir);
	bad(a, "cid '-3' is not a number");
	snprintf(a, sizeof(a), "--vm cid=3x,socket=%s/s,uds=%s/u", dir, dir);
	bad(a, "cid '3x' is not a number");
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
	bad(b, "share a socket path");
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
	bad(a, "lcore 'x' is not a number");
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
	bad(cmd, "mbufs per VM '1' is not a number in");
	snprintf(cmd, sizeof(cmd), "%s --used-publish sometimes", a);
	bad(cmd, "used publication 'sometimes'");
	snprintf(cmd, sizeof(cmd), "%s --wait-mode nap", a);
	bad(cmd, "wait mode 'nap'");
	snprintf(cmd, sizeof(cmd), "%s --stats-period 0", a);
	bad(cmd, "statistics period '0'");
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
	rc = tap_done();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		tap_diag("could not remove %s", dir);
	return rc;
}
