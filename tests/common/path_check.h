/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What is at a path, for the tests that put a file or a symlink where a socket goes and
 * check that it is left as it was.
 */
#ifndef TESTS_PATH_CHECK_H
#define TESTS_PATH_CHECK_H

#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

/** Whether @p path is a regular file (not a symlink to one) holding exactly @p text. */
static inline bool path_holds(const char *path, const char *text)
{
	char buf[64];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_NOFOLLOW);

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	return n == (ssize_t)strlen(text) && memcmp(buf, text, (size_t)n) == 0;
}

/** Whether @p path is a symlink to @p target. */
static inline bool path_links_to(const char *path, const char *target)
{
	char buf[256];
	ssize_t n = readlink(path, buf, sizeof(buf) - 1);

	return n == (ssize_t)strlen(target) && memcmp(buf, target, (size_t)n) == 0;
}

#endif /* TESTS_PATH_CHECK_H */
