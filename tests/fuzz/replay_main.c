/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stand-in for libFuzzer's main() in an ordinary build: runs a fuzz target
 * once on every file of the directories given (seed corpus, crash
 * regressions) and prints one TAP line per file. Each input runs in a child
 * process so that an abort or a sanitizer report fails that line only; the
 * target's LLVMFuzzerInitialize(), if it has one, runs once before them.
 *
 * Usage: replay_TARGET DIR...   (a missing directory is noted and skipped)
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* libFuzzer calls it once before the first input, if the target has one. */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t cap = 0, n = 0;

	if (f == NULL)
		return NULL;
	for (;;) {
		size_t got;

		if (n == cap) {
			uint8_t *b = realloc(buf, cap ? cap * 2 : 4096);

			if (b == NULL) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = b;
			cap = cap ? cap * 2 : 4096;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	fclose(f);
	*len = n;
	return buf;
}

static void replay_one(const char *path)
{
	size_t len = 0;
	uint8_t *data = read_file(path, &len);
	int status = 0;
	pid_t pid;

	if (data == NULL) {
		tap_ok(0, "%s: read: %s", path, strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		/* Exact-size copy: a read past the input is a sanitizer report. */
		uint8_t *copy = malloc(len ? len : 1);

		if (copy == NULL)
			_exit(2);
		memcpy(copy, data, len);
		LLVMFuzzerTestOneInput(copy, len);
		free(copy);
		_exit(0);
	}
	free(data);
	if (pid < 0 || waitpid(pid, &status, 0) != pid) {
		tap_ok(0, "%s: fork/wait: %s", path, strerror(errno));
		return;
	}
	if (WIFSIGNALED(status))
		tap_diag("%s: killed by signal %d", path, WTERMSIG(status));
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s (%zu bytes)", path, len);
}

int main(int argc, char **argv)
{
	int i;

	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	for (i = 1; i < argc; i++) {
		struct dirent **names;
		int n, j;

		n = scandir(argv[i], &names, NULL, alphasort);
		if (n < 0) {
			tap_diag("%s: %s, skipped", argv[i], strerror(errno));
			continue;
		}
		for (j = 0; j < n; j++) {
			char path[4096];

			if (names[j]->d_name[0] != '.' &&
					snprintf(path, sizeof(path), "%s/%s", argv[i],
						names[j]->d_name) < (int)sizeof(path))
				replay_one(path);
			free(names[j]);
		}
		free(names);
	}
	return tap_done();
}
