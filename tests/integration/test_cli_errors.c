/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Start-up as the whole program sees it: a wrong command line makes the
 * app exit non-zero with a message naming the problem, and leave no socket
 * file behind; a socket someone else serves is never taken over; a stale
 * socket file left by a killed app does not prevent a restart.
 */
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
	/* The exit status required (2: a wrong command line), or 0 for any failure. */
	int status;
};

static const struct cli_case cases[] = {
	{ "duplicate CID",
	  { "--vm", "cid=3,socket=%D/a.sock,uds=%D/a.vsock",
	    "--vm", "cid=3,socket=%D/b.sock,uds=%D/b.vsock" },
	  { "duplicate", "cid 3" } },
	{ "host CID 2",
	  { "--vm", "cid=2,socket=%D/a.sock,uds=%D/a.vsock" },
	  { "cid 2", "reserved" } },
	{ "two VMs on one socket",
	  { "--vm", "cid=3,socket=%D/a.sock,uds=%D/a.vsock",
	    "--vm", "cid=4,socket=%D/a.sock,uds=%D/b.vsock" },
	  { "cid 3", "cid 4" } },
	{ "socket directory missing",
	  { "--vm", "cid=3,socket=%D/no-such-dir/a.sock,uds=%D/a.vsock" },
	  { "no-such-dir", "does not exist" } },
	{ "unknown --vm key",
	  { "--vm", "cid=3,socket=%D/a.sock,uds=%D/a.vsock,colour=blue" },
	  { "colour" } },
	{ "no VM",
	  { "--burst", "32" },
	  { "no vm" } },
	/* 010 is 10 to vhost-device-vsock and 8 to QEMU: neither is guessed. */
	{ "octal-looking CID",
	  { "--vm", "cid=010,socket=%D/a.sock,uds=%D/a.vsock" },
	  { "cid '010'", "leading zero" }, 2 },
	{ "hexadecimal burst",
	  { "--vm", "cid=3,socket=%D/a.sock,uds=%D/a.vsock", "--burst", "0x20" },
	  { "burst size '0x20'", "decimal" }, 2 },
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

static void
run_case(const struct cli_case *c)
{
	char bufs[8][256];
	const char *argv[9];
	struct app_proc p;
	unsigned int i;
	bool words = true;
	int rc, status;

	if (app_proc_init(&p) < 0) {
		tap_ok(0, "%s: run dir", c->name);
		return;
	}
	for (i = 0; c->args[i] != NULL; i++)
		argv[i] = expand(&p, c->args[i], bufs[i], sizeof(bufs[i]));
	argv[i] = NULL;
	rc = app_proc_start(&p, NULL, argv, NULL, 0);
	status = rc == 0 ? app_proc_wait(&p, EXIT_MS) : rc;
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) != 0 &&
		(c->status == 0 || WEXITSTATUS(status) == c->status),
		"%s: app exits with %s (status %#x)", c->name,
		c->status == 2 ? "status 2, a wrong command line" : "an error", status);
	for (i = 0; i < 3 && c->words[i] != NULL; i++)
		words = words && app_proc_log_contains(&p, c->words[i]);
	tap_ok(words, "%s: the message names the problem", c->name);
	tap_ok(app_proc_sockets_left(&p) == 0, "%s: no socket file left", c->name);
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
