/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * socket-mode= and socket-group=: who may connect to a VM's sockets. Two throwaway users
 * and a group: the user outside the group is refused (EACCES) on the uds path and on the
 * vhost-user socket; the user in the group connects to a guest port and moves checked bytes
 * both ways through the frontend. Bad values are refused with a message naming them. The
 * users and the group are removed at the end, on failure too.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ops_util.h"

#define MS 5000
#define PORT 5000
#define ROUND_BYTES 200000u
#define CHILD_S 60	/* a client child that hangs is killed by its alarm */

static struct ops_env env;
static struct dp_env *e = &env.dp;
static char group_name[32], user_in[32], user_out[32];
static bool made_group, made_in, made_out;
static char sock5[128], uds5[128];

static void
run_quiet(const char *cmd, const char *name)
{
	char line[128];

	snprintf(line, sizeof(line), "%s %s >/dev/null 2>&1", cmd, name);
	if (system(line) != 0)
		tap_diag("'%s' failed", line);
}

static void
remove_accounts(void)
{
	if (made_in)
		run_quiet("userdel", user_in);
	if (made_out)
		run_quiet("userdel", user_out);
	if (made_group)
		run_quiet("groupdel", group_name);
	made_in = made_out = made_group = false;
}

static void
on_signal(int sig)
{
	remove_accounts();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* useradd/groupadd wait on nobody: another process holding /etc/passwd's lock makes them fail. */
static bool
run_retry(const char *cmd)
{
	char line[256];
	int i;

	snprintf(line, sizeof(line), "%s >/dev/null 2>&1", cmd);
	for (i = 0; i < 20; i++) {
		if (system(line) == 0)
			return true;
		sleep(1);
	}
	tap_diag("'%s' failed", cmd);
	return false;
}

static bool
make_accounts(void)
{
	char cmd[160];
	unsigned int id = (unsigned int)getpid() % 1000000;

	snprintf(group_name, sizeof(group_name), "vsp%ug", id);
	snprintf(user_in, sizeof(user_in), "vsp%ui", id);
	snprintf(user_out, sizeof(user_out), "vsp%uo", id);
	atexit(remove_accounts);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	snprintf(cmd, sizeof(cmd), "groupadd %s", group_name);
	made_group = run_retry(cmd);
	snprintf(cmd, sizeof(cmd), "useradd -M -N -s /usr/sbin/nologin -G %s %s", group_name,
		user_in);
	made_in = made_group && run_retry(cmd);
	snprintf(cmd, sizeof(cmd), "useradd -M -N -s /usr/sbin/nologin %s", user_out);
	made_out = made_group && run_retry(cmd);
	return made_group && made_in && made_out;
}

/* In a child: become @p user with its groups from /etc/group, as login would. */
static bool
become(const char *user)
{
	struct passwd *pw = getpwnam(user);

	return pw != NULL && initgroups(user, pw->pw_gid) == 0 && setgid(pw->pw_gid) == 0 &&
		setuid(pw->pw_uid) == 0 && geteuid() == pw->pw_uid;
}

/* Blocking connect to @p path: the fd, or -errno. */
static int
connect_path(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), rc;

	if (fd < 0)
		return -errno;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

/* Child, as the user outside the group: what connecting to each socket gave (errno). */
static void
child_refused(int out)
{
	int res[2] = { -1, -1 }, fd;

	if (become(user_out)) {
		fd = connect_path(uds5);
		res[0] = fd < 0 ? -fd : 0;
		fd = connect_path(sock5);
		res[1] = fd < 0 ? -fd : 0;
	}
	_exit(write(out, res, sizeof(res)) == sizeof(res) ? 0 : 1);
}

static bool
wait_fd(int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };

	return poll(&p, 1, -1) == 1 && !(p.revents & POLLNVAL);
}

/*
 * Child, as the user in the group: CONNECT to the guest's PORT, send ROUND_BYTES of seed 41,
 * then check ROUND_BYTES of seed 42 from the guest. Exit 0 when all went and came back right.
 */
static void
child_let_in(void)
{
	static struct dp_stream s, r;
	char line[32];
	size_t len = 0;
	long n;
	int fd;

	alarm(CHILD_S);
	if (!become(user_in))
		_exit(2);
	fd = connect_path(uds5);
	if (fd < 0)
		_exit(3);
	n = snprintf(line, sizeof(line), "CONNECT %u\n", PORT);
	if (write(fd, line, (size_t)n) != n)
		_exit(4);
	/* "OK <port>\n", a byte at a time: what follows is the guest's stream. */
	while (len < sizeof(line) - 1 && read(fd, line + len, 1) == 1 && line[len] != '\n')
		len++;
	if (strncmp(line, "OK ", 3) != 0 || line[len] != '\n')
		_exit(5);
	dp_stream_init(&s, 41, ROUND_BYTES);
	dp_stream_init(&r, 42, ROUND_BYTES);
	/* The stream helpers never block: poll() waits for them. */
	while (s.done < ROUND_BYTES) {
		if (!wait_fd(fd, POLLOUT) || dp_host_send(fd, &s) < 0)
			_exit(6);
	}
	while (r.done < ROUND_BYTES) {
		if (!wait_fd(fd, POLLIN) || dp_host_recv(fd, &r) <= 0)
			_exit(7);
	}
	_exit(dp_stream_ok(&r) ? 0 : 8);
}

static void
test_permissions(gid_t gid)
{
	char want[96];
	struct stat st;
	int pfd[2], res[2] = { -1, -1 }, status = -1;
	pid_t pid;

	tap_ok(stat(uds5, &st) == 0 && (st.st_mode & 07777) == 0660 && st.st_gid == gid,
		"uds %s: mode 0660, group %s", uds5, group_name);
	tap_ok(stat(sock5, &st) == 0 && (st.st_mode & 07777) == 0660 && st.st_gid == gid,
		"vhost-user socket: mode 0660, group %s", group_name);
	snprintf(want, sizeof(want), "socket-mode 0660, socket-group %s (gid %u)", group_name,
		(unsigned int)gid);
	tap_ok(ops_cmd(&env, "show config", want, MS, NULL), "show config: %s", want);
	tap_ok(ops_tel_u64(&env, "/vsock/vms", "5.socket_gid") == gid,
		"/vsock/vms: socket_gid of VM 5 is %u", (unsigned int)gid);

	if (pipe(pfd) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		child_refused(pfd[1]);
	}
	close(pfd[1]);
	if (pid > 0 && read(pfd[0], res, sizeof(res)) != sizeof(res))
		res[0] = res[1] = -1;
	close(pfd[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	tap_ok(res[0] == EACCES, "%s (not in the group): connect to the uds path: %s", user_out,
		res[0] > 0 ? strerror(res[0]) : res[0] == 0 ? "let in" : "no answer");
	tap_ok(res[1] == EACCES, "%s: connect to the vhost-user socket: %s", user_out,
		res[1] > 0 ? strerror(res[1]) : res[1] == 0 ? "let in" : "no answer");
}

static void
test_let_in(void)
{
	static struct dp_stream gs, gr;
	struct vfe_guest_conn *c = NULL;
	bool exited = false;
	int status = -1;
	pid_t pid;

	vfe_guest_listen(&e->g, PORT, true);
	pid = fork();
	if (pid == 0)
		child_let_in();
	if (pid < 0)
		return;
	tap_ok(DP_WAIT(e, (c = vfe_guest_accept(&e->g)) != NULL ||
			waitpid(pid, &status, WNOHANG) == pid, 6 * MS) && c != NULL,
		"%s (in the group): CONNECT %u reaches the guest", user_in, PORT);
	if (c != NULL) {
		dp_stream_init(&gr, 41, ROUND_BYTES);
		dp_stream_init(&gs, 42, ROUND_BYTES);
		/* Until the child is done and the guest has it all, or the child failed. */
		DP_WAIT(e, (dp_guest_recv(e, c, &gr), dp_guest_send(e, c, &gs),
			exited = exited || waitpid(pid, &status, WNOHANG) == pid) &&
			(gr.done == ROUND_BYTES || !WIFEXITED(status) ||
			 WEXITSTATUS(status) != 0), CHILD_S * 1000 + MS);
		tap_ok(gr.done == ROUND_BYTES && dp_stream_ok(&gr),
			"the guest got the %u bytes %s sent", ROUND_BYTES, user_in);
		tap_ok(exited && WIFEXITED(status) && WEXITSTATUS(status) == 0,
			"%s got the %u bytes the guest sent (status %#x)", user_in, ROUND_BYTES,
			status);
		vfe_guest_send_ctl(&e->g, c, VIRTIO_VSOCK_OP_RST, 0);
		DP_WAIT(e, ops_tel_u64(&env, "/vsock/vms", "5.conns") == 0, MS);
		vfe_guest_release(&e->g, c);
	} else if (waitpid(pid, &status, 0) == pid) {
		tap_diag("client exited with status %#x", status);
	}
	vfe_guest_listen(&e->g, PORT, false);
}

/* The app refuses @p key=@p val, naming it. */
static void
bad_value(const char *key, const char *val, const char *words)
{
	char vm[400], s[160], u[160];
	const char *argv[] = { "--vm", vm, NULL };
	struct app_proc p;
	int status = -1;

	if (app_proc_init(&p) < 0)
		return;
	snprintf(vm, sizeof(vm), "cid=3,socket=%s,uds=%s,%s=%s",
		app_proc_path(&p, "s", s, sizeof(s)), app_proc_path(&p, "u", u, sizeof(u)), key,
		val);
	if (app_proc_start(&p, NULL, argv, NULL, 0) == 0)
		status = app_proc_wait(&p, 30000);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) != 0 &&
		app_proc_log_contains(&p, words) && app_proc_sockets_left(&p) == 0,
		"%s=%s is refused: \"%s\"", key, val, words);
	app_proc_fini(&p);
}

int
main(void)
{
	char vm5[400], dir[] = "/tmp/vsock-perms-XXXXXX", bad_group[48];
	const char *extra[] = { "--vm", vm5, NULL };
	struct group *gr;
	gid_t gid;
	int i;

	if (geteuid() != 0 || access("/usr/sbin/useradd", X_OK) != 0 ||
			access("/usr/sbin/groupadd", X_OK) != 0) {
		printf("1..0 # SKIP needs root, useradd and groupadd\n");
		return 0;
	}
	if (!tap_ok(make_accounts(), "users %s, %s and group %s made", user_in, user_out,
			group_name))
		return tap_done();
	gr = getgrnam(group_name);
	gid = gr != NULL ? gr->gr_gid : (gid_t)-1;

	bad_value("socket-mode", "999", "socket-mode '999' is not an octal mode");
	bad_value("socket-mode", "rw", "socket-mode 'rw' is not an octal mode");
	snprintf(bad_group, sizeof(bad_group), "no%s", group_name);
	bad_value("socket-group", bad_group, "is not a group name or gid");

	/* VM 5 carries the permissions, in a directory anyone may pass through. */
	if (mkdtemp(dir) == NULL || chmod(dir, 0711) < 0)
		return tap_done();
	snprintf(sock5, sizeof(sock5), "%s/vm5.sock", dir);
	snprintf(uds5, sizeof(uds5), "%s/vm5.vsock", dir);
	snprintf(vm5, sizeof(vm5), "cid=5,socket=%s,uds=%s,socket-group=%s", sock5, uds5,
		group_name);
	if (tap_ok(ops_start(&env, false, true, extra) == 0, "app started with -i")) {
		/*
		 * Not the socket's existence: it is bound owner-only and given its mode and group
		 * right after. The API answers once every VM's sockets are done.
		 */
		for (i = 0; i < 200 && ops_tel_u64(&env, "/vsock/config", "nb_vms") != 2; i++)
			usleep(50000);
		test_permissions(gid);
		/* The frontend attaches to VM 5. */
		snprintf(e->sock, sizeof(e->sock), "%s", sock5);
		snprintf(e->uds, sizeof(e->uds), "%s", uds5);
		if (dp_attach(e, NULL, NULL) == 0)
			test_let_in();
		ops_finish(&env);
	}
	unlink(sock5);
	unlink(uds5);
	rmdir(dir);
	remove_accounts();
	tap_ok(getgrnam(group_name) == NULL && getpwnam(user_in) == NULL &&
		getpwnam(user_out) == NULL, "users and group removed");
	return tap_done();
}
