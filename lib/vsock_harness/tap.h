/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A tiny TAP producer shared by every test program: one "ok"/"not ok" line per
 * check, so scripts/test.sh can count results across the whole suite. The
 * harness's own diagnostics ("# " lines) use it too.
 */
#ifndef VSOCK_HARNESS_TAP_H
#define VSOCK_HARNESS_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned int tap_count;
static unsigned int tap_failed;

static inline int tap_ok(int cond, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/** Report one check; returns cond so callers can stop early on failure. */
static inline int tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %u - ", cond ? "" : "not ", ++tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!cond)
		tap_failed++;
	return cond;
}

/** Diagnostic line, ignored by TAP consumers. */
#define tap_diag(...) do { printf("# " __VA_ARGS__); printf("\n"); fflush(stdout); } while (0)

/** Print the plan (at the end, as TAP allows) and return the exit code. */
static inline int tap_done(void)
{
	printf("1..%u\n", tap_count);
	return tap_failed || tap_count == 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif /* VSOCK_HARNESS_TAP_H */
