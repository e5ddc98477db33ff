/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a configuration names on the file system, given to the library itself
 * (vsock_pmd_start(), as a program on the API does, without the app's checks before it): the
 * engine removes only a socket where it binds one, and refuses to start over anything else
 * there, a regular file or a symlink, which it leaves as it was. Each refused start must
 * leave the directory as it found it; a good configuration then starts and stops cleanly.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_eal.h>

#include <vsock_pmd.h>

#include "path_check.h"
#include "tap.h"

#define CID 3

static char dir[64];

/* "<dir>/<name>" in @p buf. */
static char *path_of(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", dir, name);
	return buf;
}

/* Entries of the run directory. */
static unsigned int entries(void)
{
	unsigned int n = 0;
	struct dirent *d;
	DIR *dp = opendir(dir);

	while (dp && (d = readdir(dp)) != NULL)
		n += d->d_name[0] != '.';
	if (dp)
		closedir(dp);
	return n;
}

static void make_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		tap_diag("cannot write %s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
}

/* One VM with these paths (names in the run directory). */
static void conf_one(struct vsock_pmd_conf *conf, const char *sock, const char *uds)
{
	vsock_pmd_conf_init(conf);
	conf->nb_vms = 1;
	conf->vms[0].cid = CID;
	path_of(sock, conf->vms[0].socket_path, sizeof(conf->vms[0].socket_path));
	path_of(uds, conf->vms[0].uds_path, sizeof(conf->vms[0].uds_path));
}

/* vsock_pmd_start() must fail; if it started after all, stop it again. */
static int start_refused(const struct vsock_pmd_conf *conf)
{
	int rc = vsock_pmd_start(conf);

	if (rc == 0)
		vsock_pmd_stop();
	return rc;
}

static void test_uds_not_socket(void)
{
	static struct vsock_pmd_conf conf;
	char file[128], link[128];
	unsigned int before;
	int rc;

	path_of("keep.txt", file, sizeof(file));
	make_file(file, "tenant data");
	before = entries();

	conf_one(&conf, "vm3.sock", "keep.txt");
	rc = start_refused(&conf);
	tap_ok(rc == -EEXIST, "uds= a regular file: start refused with -EEXIST (%d)", rc);
	tap_ok(path_holds(file, "tenant data") && entries() == before,
	       "uds= a regular file: the file untouched, nothing else left");

	path_of("vm3.vsock", link, sizeof(link));
	if (symlink(file, link) < 0)
		tap_diag("symlink: %s", strerror(errno));
	before = entries();
	conf_one(&conf, "vm3.sock", "vm3.vsock");
	rc = start_refused(&conf);
	tap_ok(rc == -EEXIST, "uds= a symlink to a file: start refused with -EEXIST (%d)", rc);
	tap_ok(path_links_to(link, file) && path_holds(file, "tenant data") && entries() == before,
	       "uds= a symlink: the link and its target untouched, nothing else left");
	unlink(link);
	unlink(file);
}

static void test_socket_not_socket(void)
{
	static struct vsock_pmd_conf conf;
	char file[128];
	unsigned int before;
	int rc;

	path_of("vm3.sock", file, sizeof(file));
	make_file(file, "not a socket");
	before = entries();
	conf_one(&conf, "vm3.sock", "vm3.vsock");
	rc = start_refused(&conf);
	tap_ok(rc < 0, "socket= a regular file: start refused (%d)", rc);
	tap_ok(path_holds(file, "not a socket") && entries() == before,
	       "socket= a regular file: the file untouched, the uds listener removed again");
	unlink(file);
}

/*
 * Overlapping paths through the API: VM 4's vhost-user socket where VM 3's guest reaches host
 * port 4, or the two uds paths spelled differently: refused with -EINVAL, nothing made.
 */
static void test_overlap(void)
{
	static const char *const socks4[] = { "v_4", "sub/../v_4", "./v" };
	static const char *const uds4[] = { "w", "w", "w" };
	static struct vsock_pmd_conf conf;
	char sub[128], err[512];
	unsigned int i;
	int rc;

	path_of("sub", sub, sizeof(sub));
	if (mkdir(sub, 0700) < 0)
		tap_diag("mkdir %s: %s", sub, strerror(errno));
	for (i = 0; i < RTE_DIM(socks4); i++) {
		unsigned int before = entries();

		conf_one(&conf, "vm3.sock", "v");
		conf.nb_vms = 2;
		conf.vms[1].cid = CID + 1;
		path_of(socks4[i], conf.vms[1].socket_path, sizeof(conf.vms[1].socket_path));
		path_of(uds4[i], conf.vms[1].uds_path, sizeof(conf.vms[1].uds_path));
		rc = vsock_pmd_conf_check_paths(&conf, err, sizeof(err));
		tap_ok(rc == -EINVAL && strstr(err, "VM cid 4 socket=") &&
		       strstr(err, "VM cid 3") && strstr(err, "uds="),
		       "VM 4 socket= %s against VM 3 uds= v: refused naming both (%s)", socks4[i],
		       err);
		rc = start_refused(&conf);
		tap_ok(rc == -EINVAL && entries() == before,
		       "vsock_pmd_start() refuses it too (%d), nothing created", rc);
	}
	rmdir(sub);
}

int main(int argc, char **argv)
{
	char *eal[] = { argv[0], "--no-huge", "-m", "256", "--no-pci", "--no-shconf", "-l",
			"0-1", "--log-level=lib.eal:error", "--log-level=lib.vhost.*:error" };
	static struct vsock_pmd_conf conf;
	char cmd[96];

	(void)argc;
	if (rte_eal_init(RTE_DIM(eal), eal) < 0) {
		tap_ok(0, "rte_eal_init");
		return tap_done();
	}
	snprintf(dir, sizeof(dir), "/tmp/vsock-paths-XXXXXX");
	if (!mkdtemp(dir)) {
		tap_ok(0, "run directory");
		return tap_done();
	}
	test_uds_not_socket();
	test_socket_not_socket();
	test_overlap();

	/* The refusals left nothing running: a good configuration starts and stops. */
	conf_one(&conf, "vm3.sock", "vm3.vsock");
	tap_ok(vsock_pmd_start(&conf) == 0 && entries() == 2,
	       "a good configuration then starts, its two sockets made");
	vsock_pmd_stop();
	tap_ok(entries() == 0, "and stops, its sockets removed");

	rte_eal_cleanup();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		tap_diag("could not remove %s", dir);
	return tap_done();
}
