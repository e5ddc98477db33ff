/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Start-up as the whole program sees it: a wrong command line makes the
 * app exit non-zero with a message naming the problem, and leave no socket
 * file behind; a socket someone else serves is never taken over; a stale
 * socket file left by a killed app does not prevent a restart.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "app_proc.h"
#include "tap.h"
#include "vfe.h"

#define EXIT_MS 15000
#define START_MS 15000

/* "%D" in a template stands for the run directory. */
struct cli_case {
	const char *name;
	const char *args[8];
	/* Every one must appear in the output, ignoring case. */
	const char *words[3];
	/* The exit status required (2: a wrong command line or config file), or 0 for any. */
	int status;
	/* A config file the case writes first, as "%D/<name>", or NULL. */
	const char *file_name, *file_text;
};

static const struct cli_case cases[] = {
	{ .name = "duplicate CID",
	  .args = { "--vm", "cid=3,socket=%D/a.sock,uds=%D/a.vsock",
	    "--vm", "cid=3,socket=%D/b.sock,uds=%D/b.vsock" },
	  .words = { "duplicate", "cid 3" }, .status = 2 },
	{ .name = "host CID 2",
	  .args = { "--vm", "cid=2,socket=%D/a.sock,uds=%D/a.vsock" },
	  .words = { "cid 2", "reserved" }, .status = 2 },
	{ .name = "two VMs on one socket",
	  .args = { "--vm", "cid=3,socket=%D/a.sock,uds=%D/a.vsock",
	    "--vm", "cid=4,socket=%D/a.sock,uds=%D/b.vsock" },
	  .words = { "VM cid 3 socket=", "VM cid 4 socket=", "same path" }, .status = 2 },
	{ .name = "socket directory missing",
	  .args = { "--vm", "cid=3,socket=%D/no-such-dir/a.sock,uds=%D/a.vsock" },
	  .words = { "no-such-dir", "does not exist" }, .status = 1 },
	{ .name = "unknown --vm key",
	  .args = { "--vm", "cid=3,socket=%D/a.sock,uds=%D/a.vsock,colour=blue" },
	  .words = { "colour" }, .status = 2 },
	{ .name = "no VM",
	  .args = { "--burst", "32" },
	  .words = { "no vm" }, .status = 2 },
	/* A guest connecting to host port P reaches <uds>_<P>: no other path may be one. */
	{ .name = "socket= is another VM's <uds>_<port>",
	  .args = { "--vm", "cid=3,socket=%D/a.sock,uds=%D/v",
	    "--vm", "cid=4,socket=%D/v_4,uds=%D/w" },
	  .words = { "VM cid 4 socket= '%D/v_4'", "VM cid 3's uds= '%D/v' followed by _4" },
	  .status = 2 },
	{ .name = "socket= is its own VM's <uds>_<port>",
	  .args = { "--vm", "cid=3,socket=%D/v_22,uds=%D/v" },
	  .words = { "VM cid 3 socket= '%D/v_22'", "VM cid 3's uds= '%D/v' followed by _22" },
	  .status = 2 },
	{ .name = "two uds= paths, one spelled with /./",
	  .args = { "--vm", "cid=3,socket=%D/a.sock,uds=%D/./v",
	    "--vm", "cid=4,socket=%D/b.sock,uds=%D/v" },
	  .words = { "VM cid 3 uds= '%D/./v'", "VM cid 4 uds= '%D/v'", "same path" },
	  .status = 2 },
	{ .name = "vhost-device-vsock's single-VM options, socket at its own <uds>_<port>",
	  .args = { "--guest-cid=5", "--socket=%D/v_9", "--uds-path=%D/v" },
	  .words = { "VM cid 5 socket= '%D/v_9'", "VM cid 5's uds= '%D/v' followed by _9" },
	  .status = 2 },
	{ .name = "config file: uds= is another VM's <uds>_<port>",
	  .args = { "--config", "%D/vms.conf" },
	  .words = { "VM cid 4 uds= '%D/v_1'", "VM cid 3's uds= '%D/v' followed by _1" },
	  .status = 2, .file_name = "vms.conf",
	  .file_text = "vm cid=3,socket=%D/a.sock,uds=%D/v\n"
		       "vm cid=4,socket=%D/b.sock,uds=%D/v_1\n" },
	{ .name = "YAML: socket is another VM's uds_path_<port>",
	  .args = { "--config", "%D/vms.yaml" },
	  .words = { "VM cid 4 socket= '%D/v_5000'",
		     "VM cid 3's uds= '%D/v' followed by _5000" },
	  .status = 2, .file_name = "vms.yaml",
	  .file_text = "vms:\n  - guest_cid: 3\n    socket: %D/a.sock\n    uds_path: %D/v\n"
		       "  - guest_cid: 4\n    socket: %D/v_5000\n    uds_path: %D/w\n" },
	/* 010 is 10 to vhost-device-vsock and 8 to QEMU: neither is guessed. */
	{ .name = "octal-looking CID",
	  .args = { "--vm", "cid=010,socket=%D/a.sock,uds=%D/a.vsock" },
	  .words = { "cid '010'", "leading zero" }, .status = 2 },
	{ .name = "hexadecimal burst",
	  .args = { "--vm", "cid=3,socket=%D/a.sock,uds=%D/a.vsock", "--burst", "0x20" },
	  .words = { "burst size '0x20'", "decimal" }, .status = 2 },
};

/* Replace every "%D" in @p tmpl by the run directory. */
static const char *
expand(const struct app_proc *p, const char *tmpl, char *buf, size_t len)
{
	size_t o = 0;

	for (; *tmpl != '\0' && o + 1 < len; tmpl++) {
		if (tmpl[0] == '%' && tmpl[1] == 'D') {
			o += (size_t)snprintf(buf + o, len - o, "%s", p->dir);
			tmpl++;
		} else {
			buf[o++] = *tmpl;
		}
	}
	buf[o < len ? o : len - 1] = '\0';
	return buf;
}

/* Entries of the run directory besides the app's log. */
static unsigned int
dir_entries(const struct app_proc *p)
{
	unsigned int n = 0;
	struct dirent *d;
	DIR *dp = opendir(p->dir);

	while (dp != NULL && (d = readdir(dp)) != NULL)
		n += d->d_name[0] != '.' && strcmp(d->d_name, "app.log") != 0;
	if (dp != NULL)
		closedir(dp);
	return n;
}

static void
run_case(const struct cli_case *c)
{
	char bufs[8][256], text[512], word[256], path[160];
	const char *argv[9];
	struct app_proc p;
	unsigned int i, before;
	bool words = true;
	int rc, status;
	FILE *f;

	if (app_proc_init(&p) < 0) {
		tap_ok(0, "%s: run dir", c->name);
		return;
	}
	for (i = 0; c->args[i] != NULL; i++)
		argv[i] = expand(&p, c->args[i], bufs[i], sizeof(bufs[i]));
	argv[i] = NULL;
	if (c->file_name != NULL) {
		f = fopen(app_proc_path(&p, c->file_name, path, sizeof(path)), "w");
		if (f != NULL) {
			fputs(expand(&p, c->file_text, text, sizeof(text)), f);
			fclose(f);
		}
	}
	before = dir_entries(&p);
	rc = app_proc_start(&p, NULL, argv, NULL, 0);
	status = rc == 0 ? app_proc_wait(&p, EXIT_MS) : rc;
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) != 0 &&
		(c->status == 0 || WEXITSTATUS(status) == c->status),
		"%s: app exits with %s (status %#x)", c->name,
		c->status == 2 ? "status 2, a wrong command line" : "an error", status);
	for (i = 0; i < 3 && c->words[i] != NULL; i++)
		words = words && app_proc_log_contains(&p, expand(&p, c->words[i], word,
			sizeof(word)));
	tap_ok(words, "%s: the message names the problem", c->name);
	tap_ok(app_proc_sockets_left(&p) == 0 && dir_entries(&p) == before,
		"%s: nothing created (no socket file, no other file)", c->name);
	if (!words)
		app_proc_dump_log(&p);
	app_proc_fini(&p);
}

/* A listening (@p listen) or stale socket file at @p path; returns its fd. */
static int
make_socket(const char *path, bool listening)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    (listening && listen(fd, 1) < 0)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!listening) {
		close(fd);
		return 0;
	}
	return fd;
}

/* Another process serves the path: the app must refuse and leave it alone. */
static void
test_socket_in_use(void)
{
	char sock[128], uds[128], vm[300];
	struct app_proc p;
	struct stat st;
	int fd, status;

	if (app_proc_init(&p) < 0) {
		tap_ok(0, "socket in use: run dir");
		return;
	}
	app_proc_path(&p, "busy.sock", sock, sizeof(sock));
	snprintf(vm, sizeof(vm), "cid=3,socket=%s,uds=%s", sock,
		app_proc_path(&p, "a.vsock", uds, sizeof(uds)));
	fd = make_socket(sock, true);
	if (!tap_ok(fd >= 0, "socket in use: listener at %s", sock)) {
		app_proc_fini(&p);
		return;
	}
	status = app_proc_start(&p, NULL, (const char *[]){ "--vm", vm, NULL }, NULL, 0);
	if (status == 0)
		status = app_proc_wait(&p, EXIT_MS);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) != 0,
		"socket in use: app exits with an error (status %#x)", status);
	tap_ok(app_proc_log_contains(&p, "in use"), "socket in use: the message says so");
	tap_ok(stat(sock, &st) == 0 && S_ISSOCK(st.st_mode) && app_proc_sockets_left(&p) == 1,
		"socket in use: the other process's socket is untouched, nothing else left");
	close(fd);
	app_proc_fini(&p);
}

/* A socket file nobody serves (the app was killed): start anyway. */
static void
test_stale_socket(void)
{
	char sock[128], uds[128], vm[300];
	struct app_proc p;
	struct vfe_vsock v;
	int rc, status;

	if (app_proc_init(&p) < 0) {
		tap_ok(0, "stale socket: run dir");
		return;
	}
	app_proc_path(&p, "vm3.sock", sock, sizeof(sock));
	snprintf(vm, sizeof(vm), "cid=3,socket=%s,uds=%s", sock,
		app_proc_path(&p, "vm3.vsock", uds, sizeof(uds)));
	if (make_socket(sock, false) < 0 || make_socket(uds, false) < 0)
		tap_ok(0, "stale socket: left-over socket files");
	if (!tap_ok(app_proc_start(&p, NULL, (const char *[]){ "--vm", vm, NULL }, NULL,
			0) == 0, "stale socket: app started")) {
		app_proc_fini(&p);
		return;
	}
	/* The stale file exists from the start: attaching is the real check. */
	rc = vfe_vsock_attach(&v, sock, &(struct vfe_vsock_conf){ .connect_timeout_ms = START_MS });
	if (!tap_ok(rc == 0 && v.cid == 3, "stale socket: attach and read CID 3 (rc %d)", rc))
		tap_diag("%s", v.conn.err);
	if (rc == 0)
		vfe_vsock_close(&v);
	status = app_proc_stop(&p, EXIT_MS);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
		app_proc_sockets_left(&p) == 0, "stale socket: clean exit (status %#x)", status);
	if (tap_failed)
		app_proc_dump_log(&p);
	app_proc_fini(&p);
}

int
main(void)
{
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&cases[i]);
	test_socket_in_use();
	test_stale_socket();
	return tap_done();
}
