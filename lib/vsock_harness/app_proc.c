/* SPDX-License-Identifier: BSD-3-Clause */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "app_proc.h"

#define APP_PROC_MAX_ARGS 64
#define APP_PROC_POLL_US 5000

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int app_proc_init(struct app_proc *p)
{
	/*
	 * A peer that closed (the app refusing a connection, or gone) is a check that fails
	 * with EPIPE, never a test killed by SIGPIPE. The app gets the default back (exec_child()).
	 */
	signal(SIGPIPE, SIG_IGN);
	p->pid = -1;
	p->stdin_pipe = false;
	p->stdin_fd = -1;
	p->nofile_soft = p->nofile_hard = 0;
	snprintf(p->dir, sizeof(p->dir), "/tmp/vsock-test-XXXXXX");
	if (mkdtemp(p->dir) == NULL)
		return -errno;
	snprintf(p->log, sizeof(p->log), "%s/app.log", p->dir);
	return 0;
}

char *app_proc_path(const struct app_proc *p, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", p->dir, name);
	return buf;
}

static bool is_socket(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

static void exec_child(const struct app_proc *p, const char *app, const char *const *argv,
		int in_fd)
{
	int fd;

	/* Never outlive the test, even if it crashes. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* The app as it runs anywhere: an ignored SIGPIPE would hide a write without NOSIGNAL. */
	signal(SIGPIPE, SIG_DFL);
	fd = open(p->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
	}
	if (in_fd >= 0) {
		dup2(in_fd, STDIN_FILENO);
	} else {
		/* No stdin: the app must not wait for a console. */
		close(STDIN_FILENO);
		open("/dev/null", O_RDONLY);
	}
	close_range(3, ~0u, 0);
	if (p->nofile_hard != 0) {
		struct rlimit rl = { .rlim_cur = p->nofile_soft, .rlim_max = p->nofile_hard };

		if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
			fprintf(stderr, "setrlimit(RLIMIT_NOFILE, %lu, %lu): %s\n", p->nofile_soft,
				p->nofile_hard, strerror(errno));
			_exit(127);
		}
	}
	execv(app, (char *const *)argv);
	fprintf(stderr, "exec %s: %s\n", app, strerror(errno));
	_exit(127);
}

int app_proc_start(struct app_proc *p, const char *const *eal_args,
		const char *const *app_args, const char *const *wait_socks,
		unsigned int timeout_ms)
{
	static const char *const eal_default[] = { APP_PROC_EAL_DEFAULT, NULL };
	const char *app = getenv("VSOCK_APP");
	const char *argv[APP_PROC_MAX_ARGS];
	uint64_t deadline = now_ms() + timeout_ms;
	unsigned int n = 0, i;
	int status, in[2] = { -1, -1 };

	if (app == NULL) {
		printf("# VSOCK_APP is not set\n");
		return -EINVAL;
	}
	argv[n++] = app;
	for (i = 0; (eal_args ? eal_args : eal_default)[i] != NULL; i++)
		if (n < APP_PROC_MAX_ARGS - 2)
			argv[n++] = (eal_args ? eal_args : eal_default)[i];
	argv[n++] = "--";
	for (i = 0; app_args != NULL && app_args[i] != NULL; i++)
		if (n < APP_PROC_MAX_ARGS - 1)
			argv[n++] = app_args[i];
	argv[n] = NULL;

	if (p->stdin_pipe && pipe2(in, O_CLOEXEC) < 0)
		return -errno;
	fflush(stdout);
	p->pid = fork();
	if (p->pid < 0) {
		status = -errno;
		if (in[0] >= 0) {
			close(in[0]);
			close(in[1]);
		}
		return status;
	}
	if (p->pid == 0)
		exec_child(p, app, argv, in[0]);
	if (in[0] >= 0) {
		close(in[0]);
		p->stdin_fd = in[1];
	}

	for (;;) {
		for (i = 0; wait_socks != NULL && wait_socks[i] != NULL; i++)
			if (!is_socket(wait_socks[i]))
				break;
		if (wait_socks == NULL || wait_socks[i] == NULL)
			return 0;
		if (waitpid(p->pid, &status, WNOHANG) == p->pid) {
			printf("# app exited (status %#x) before creating %s\n", status,
				wait_socks[i]);
			p->pid = -1;
			app_proc_dump_log(p);
			return -ECHILD;
		}
		if (now_ms() >= deadline) {
			printf("# app did not create %s within %u ms\n", wait_socks[i], timeout_ms);
			app_proc_wait(p, 0);
			app_proc_dump_log(p);
			return -ETIMEDOUT;
		}
		usleep(APP_PROC_POLL_US);
	}
}

int app_proc_wait(struct app_proc *p, unsigned int timeout_ms)
{
	uint64_t deadline = now_ms() + timeout_ms;
	int status;

	if (p->pid < 0)
		return -ECHILD;
	for (;;) {
		pid_t r = waitpid(p->pid, &status, WNOHANG);

		if (r == p->pid) {
			p->pid = -1;
			return status;
		}
		if (r < 0)
			return -errno;
		if (now_ms() >= deadline)
			break;
		usleep(APP_PROC_POLL_US);
	}
	kill(p->pid, SIGKILL);
	waitpid(p->pid, &status, 0);
	p->pid = -1;
	return -ETIMEDOUT;
}

int app_proc_stop(struct app_proc *p, unsigned int timeout_ms)
{
	if (p->pid < 0)
		return -ECHILD;
	kill(p->pid, SIGTERM);
	return app_proc_wait(p, timeout_ms);
}

unsigned int app_proc_sockets_left(const struct app_proc *p)
{
	DIR *d = opendir(p->dir);
	unsigned int n = 0;
	struct dirent *e;
	char path[512];

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		snprintf(path, sizeof(path), "%s/%s", p->dir, e->d_name);
		if (is_socket(path))
			n++;
	}
	closedir(d);
	return n;
}

bool app_proc_log_contains(const struct app_proc *p, const char *needle)
{
	FILE *f = fopen(p->log, "r");
	char line[1024];
	bool found = false;

	if (f == NULL)
		return false;
	while (!found && fgets(line, sizeof(line), f) != NULL)
		found = strcasestr(line, needle) != NULL;
	fclose(f);
	return found;
}

void app_proc_dump_log(const struct app_proc *p)
{
	FILE *f = fopen(p->log, "r");
	char line[1024];

	printf("# ---- %s ----\n", p->log);
	if (f != NULL) {
		while (fgets(line, sizeof(line), f) != NULL)
			printf("# %s%s", line, strchr(line, '\n') ? "" : "\n");
		fclose(f);
	}
	printf("# ---- end of log ----\n");
	fflush(stdout);
}

int app_proc_send(struct app_proc *p, const char *line)
{
	size_t len = strlen(line);

	if (p->stdin_fd < 0)
		return -EBADF;
	if (write(p->stdin_fd, line, len) != (ssize_t)len || write(p->stdin_fd, "\n", 1) != 1)
		return -errno;
	return 0;
}

void app_proc_fini(struct app_proc *p)
{
	DIR *d;
	struct dirent *e;
	char path[512];

	if (p->stdin_fd >= 0) {
		close(p->stdin_fd);
		p->stdin_fd = -1;
	}

	if (p->pid > 0)
		app_proc_wait(p, 0);
	d = opendir(p->dir);
	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", p->dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(p->dir);
}

void app_proc_eal_dir(const char *prefix, char *buf, size_t len)
{
	const char *base = getenv("RUNTIME_DIRECTORY");

	if (base == NULL)
		base = getuid() == 0 ? "/var/run" : getenv("XDG_RUNTIME_DIR");
	if (base == NULL)
		base = "/tmp";
	snprintf(buf, len, "%s/dpdk/%s", base, prefix);
}

/* Unlink the files in @p dir whose names start with @p start ("": all of them). */
static void unlink_files(const char *dir, const char *start)
{
	char path[512];
	struct dirent *d;
	DIR *dp = opendir(dir);

	if (dp == NULL)
		return;
	while ((d = readdir(dp)) != NULL) {
		if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0 ||
		    strncmp(d->d_name, start, strlen(start)) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		unlink(path);
	}
	closedir(dp);
}

void app_proc_remove_eal_files(const char *prefix)
{
	char dir[256], map[128];

	app_proc_eal_dir(prefix, dir, sizeof(dir));
	unlink_files(dir, "");
	rmdir(dir);
	snprintf(map, sizeof(map), "%smap_", prefix);
	unlink_files("/dev/hugepages", map);
}
