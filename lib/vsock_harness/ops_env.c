/* SPDX-License-Identifier: BSD-3-Clause */
/* The operator environment (ops_env.h). */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ops_env.h"
#include "tap.h"

#define APP_START_MS 15000
#define APP_STOP_MS 10000
#define WAIT_PAUSE_US 2000

void ops_runtime_dir(const struct ops_env *o, char *buf, size_t len)
{
	app_proc_eal_dir(o->prefix, buf, len);
}

/* As the datapath tests. */
void ops_pin_off_worker(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

int ops_start(struct ops_env *o, bool two_vms, bool console, const char *const *extra)
{
	return ops_start_vms(o, two_vms, console, extra, NULL);
}

int ops_start_vms(struct ops_env *o, bool two_vms, bool console, const char *const *extra,
		const char *vm_opts)
{
	static const char *const eal_base[] = { APP_PROC_EAL_DEFAULT };
	const char *eal[16], *args[24], *socks[3];
	char vm3[400], vm5[400], uds5[128], prefix_arg[64];
	unsigned int n = 0, i;
	struct dp_env *e = &o->dp;

	memset(o, 0, sizeof(*o));
	if (app_proc_init(&e->app) < 0)
		return -1;
	snprintf(o->prefix, sizeof(o->prefix), "vsock-ops-%d", (int)getpid());
	for (i = 0; i < sizeof(eal_base) / sizeof(eal_base[0]); i++)
		eal[i] = eal_base[i];
	snprintf(prefix_arg, sizeof(prefix_arg), "--file-prefix=%s", o->prefix);
	eal[i++] = prefix_arg;
	eal[i] = NULL;

	app_proc_path(&e->app, "vm3.sock", e->sock, sizeof(e->sock));
	app_proc_path(&e->app, "vm3.vsock", e->uds, sizeof(e->uds));
	if (vm_opts == NULL)
		vm_opts = "";
	snprintf(vm3, sizeof(vm3), "cid=%d,socket=%s,uds=%s%s%s", DP_CID, e->sock, e->uds,
		*vm_opts ? "," : "", vm_opts);
	args[n++] = "--vm";
	args[n++] = vm3;
	socks[0] = e->sock;
	socks[1] = NULL;
	if (two_vms) {
		app_proc_path(&e->app, "vm5.sock", o->sock5, sizeof(o->sock5));
		snprintf(vm5, sizeof(vm5), "cid=5,socket=%s,uds=%s%s%s", o->sock5,
			app_proc_path(&e->app, "vm5.vsock", uds5, sizeof(uds5)),
			*vm_opts ? "," : "", vm_opts);
		args[n++] = "--vm";
		args[n++] = vm5;
		socks[1] = o->sock5;
		socks[2] = NULL;
	}
	if (console)
		args[n++] = "-i";
	for (i = 0; extra != NULL && extra[i] != NULL && n < 23; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	e->app.stdin_pipe = console;
	if (app_proc_start(&e->app, eal, args, socks, APP_START_MS) < 0) {
		app_proc_fini(&e->app);
		return -1;
	}
	ops_pin_off_worker();
	return 0;
}

int ops_start_many(struct ops_env *o, const struct ops_many *v, struct dp_env *const *envs)
{
	const char *eal[] = { "--no-huge", "-m", v->mem_mb ? v->mem_mb : "512", "--no-pci",
		"--no-shconf", "-l", "0-1", "--log-level=lib.eal:error", NULL, NULL };
	const char **args = calloc(2 * (size_t)v->n + 1, sizeof(*args));
	const char **socks = calloc((size_t)v->n + 1, sizeof(*socks));
	char (*vm)[400] = calloc(v->n, sizeof(*vm));
	char prefix_arg[64];
	unsigned int i;
	int rc = -1;

	memset(o, 0, sizeof(*o));
	if (args == NULL || socks == NULL || vm == NULL || app_proc_init(&o->dp.app) < 0)
		goto out;
	o->dp.app.nofile_soft = v->nofile_soft;
	o->dp.app.nofile_hard = v->nofile_hard;
	snprintf(o->prefix, sizeof(o->prefix), "vsock-ops-%d", (int)getpid());
	snprintf(prefix_arg, sizeof(prefix_arg), "--file-prefix=%s", o->prefix);
	eal[8] = prefix_arg;
	for (i = 0; i < v->n; i++) {
		struct dp_env *e = envs[i];
		char name[32];

		snprintf(name, sizeof(name), "vm%u.sock", v->first_cid + i);
		app_proc_path(&o->dp.app, name, e->sock, sizeof(e->sock));
		snprintf(name, sizeof(name), "vm%u.vsock", v->first_cid + i);
		app_proc_path(&o->dp.app, name, e->uds, sizeof(e->uds));
		snprintf(vm[i], sizeof(vm[i]), "cid=%u,socket=%s,uds=%s%s", v->first_cid + i,
			e->sock, e->uds, v->keys ? v->keys : "");
		args[2 * i] = "--vm";
		args[2 * i + 1] = vm[i];
		socks[i] = e->sock;
	}
	rc = app_proc_start(&o->dp.app, eal, args, v->wait ? socks : NULL, 30000);
out:
	free(args);
	free(socks);
	free(vm);
	return rc < 0 ? -1 : 0;
}

int ops_stop(struct ops_env *o)
{
	int status = 0;

	if (o->dp.app.pid >= 0) {
		status = dp_app_stop(&o->dp, false);
	} else {
		/* Already exited (quit): only the frontend and the files are left. */
		dp_detach(&o->dp);
		app_proc_fini(&o->dp.app);
	}

	app_proc_remove_eal_files(o->prefix);
	return status;
}

long ops_log_mark(const struct ops_env *o)
{
	struct stat st;

	return stat(o->dp.app.log, &st) == 0 ? (long)st.st_size : 0;
}

/* The log from @p mark on, NUL-terminated, or NULL. Free it. */
static char *log_from(const struct ops_env *o, long mark)
{
	FILE *f = fopen(o->dp.app.log, "r");
	char *buf = NULL;
	long end;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (end = ftell(f)) >= mark &&
			fseek(f, mark, SEEK_SET) == 0) {
		buf = malloc((size_t)(end - mark) + 1);
		if (buf != NULL)
			buf[fread(buf, 1, (size_t)(end - mark), f)] = '\0';
	}
	fclose(f);
	return buf;
}

unsigned int ops_log_count(const struct ops_env *o, long mark, const char *needle)
{
	char *buf = log_from(o, mark), *p;
	unsigned int n = 0;

	for (p = buf; p != NULL && (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	free(buf);
	return n;
}

bool ops_log_has(const struct ops_env *o, long mark, const char *needle)
{
	return ops_log_count(o, mark, needle) > 0;
}

/* Whether @p needle came after @p mark before @p deadline; the guest is polled meanwhile. */
static bool wait_log(struct ops_env *o, long mark, const char *needle, uint64_t deadline)
{
	bool found;

	while (!(found = ops_log_has(o, mark, needle)) && dp_now_ns() < deadline) {
		if (o->dp.attached)
			vfe_guest_poll(&o->dp.g);
		usleep(WAIT_PAUSE_US);
	}
	return found;
}

bool ops_cmd(struct ops_env *o, const char *cmd, const char *expect, unsigned int ms,
		long *mark_out)
{
	long mark = ops_log_mark(o);
	uint64_t deadline = dp_now_ns() + (uint64_t)ms * 1000000u;

	if (mark_out != NULL)
		*mark_out = mark;
	if (app_proc_send(&o->dp.app, cmd) < 0)
		return false;
	/* The console echoes the command: look for the answer after the echo. */
	mark += (long)strlen(cmd);
	if (!wait_log(o, mark, expect, deadline)) {
		tap_diag("'%s': no '%s' within %u ms", cmd, expect, ms);
		return false;
	}
	/*
	 * The app's stdout is line-buffered: a long answer arrives a line at a time, and a
	 * caller that looks for a line after @p expect could look before it came.
	 */
	if (mark_out != NULL && !wait_log(o, mark, OPS_PROMPT, deadline)) {
		tap_diag("'%s': its answer did not end with a prompt within %u ms", cmd, ms);
		return false;
	}
	return true;
}

int ops_tel(const struct ops_env *o, const char *cmd, char *out, size_t len)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char dir[200];
	ssize_t n;
	int fd, rc = 0;

	ops_runtime_dir(o, dir, sizeof(dir));
	if (strlen(dir) + sizeof("/dpdk_telemetry.v2") > sizeof(a.sun_path))
		return -ENAMETOOLONG;
	memcpy(a.sun_path, dir, strlen(dir));
	strcat(a.sun_path, "/dpdk_telemetry.v2");
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* An app that cannot answer must fail the test, not hang it. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval){ .tv_sec = 10 },
		       sizeof(struct timeval)) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	/* The greeting ({"version": ..., "max_output_len": ...}) comes first. */
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
			recv(fd, out, len - 1, 0) <= 0 ||
			send(fd, cmd, strlen(cmd), MSG_NOSIGNAL) != (ssize_t)strlen(cmd)) {
		rc = -errno;
	} else {
		n = recv(fd, out, len - 1, 0);
		if (n <= 0)
			rc = n < 0 ? -errno : -EPIPE;
		else
			out[n] = '\0';
	}
	/*
	 * Wait for the app to close its end, which it does once it reads our EOF: otherwise
	 * its descriptor for this query can still be open (its thread not yet run, on a busy
	 * machine) when the next query counts the app's descriptors (open_fds).
	 */
	if (rc == 0 && shutdown(fd, SHUT_WR) == 0) {
		char end[64];

		while (recv(fd, end, sizeof(end), 0) > 0)
			;
	}
	close(fd);
	return rc;
}

/* Where the value of @p path starts in @p json (just after "key": ), or NULL. */
static const char *json_find(const char *json, const char *path)
{
	char part[96], key[100];
	const char *p = json, *dot;

	while (p != NULL && *path) {
		size_t l;

		dot = strchr(path, '.');
		l = dot != NULL ? (size_t)(dot - path) : strlen(path);
		if (l >= sizeof(part))
			return NULL;
		memcpy(part, path, l);
		part[l] = '\0';
		snprintf(key, sizeof(key), "\"%s\":", part);
		p = strstr(p, key);
		if (p != NULL)
			p += strlen(key);
		path += l + (dot != NULL);
	}
	while (p != NULL && *p == ' ')
		p++;
	return p;
}

int ops_json_u64(const char *json, const char *path, uint64_t *v)
{
	const char *p = json_find(json, path);
	char *end;

	if (p == NULL || *p < '0' || *p > '9')
		return -ENOENT;
	*v = strtoull(p, &end, 10);
	return 0;
}

int ops_json_str(const char *json, const char *path, char *out, size_t len)
{
	const char *p = json_find(json, path), *q;

	if (p == NULL || *p != '"' || (q = strchr(p + 1, '"')) == NULL ||
			(size_t)(q - p - 1) >= len)
		return -ENOENT;
	memcpy(out, p + 1, (size_t)(q - p - 1));
	out[q - p - 1] = '\0';
	return 0;
}

uint64_t ops_tel_u64(const struct ops_env *o, const char *cmd, const char *path)
{
	static char buf[OPS_TEL_MAX];
	uint64_t v;

	if (ops_tel(o, cmd, buf, sizeof(buf)) < 0 || ops_json_u64(buf, path, &v) < 0)
		return UINT64_MAX;
	return v;
}
