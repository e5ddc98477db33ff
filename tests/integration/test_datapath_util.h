/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The datapath tests' environment (lib/vsock_harness/dp_env.h) and its checks
 * as TAP lines. tap.h keeps its counters per translation unit: whatever
 * reports is inline here.
 */
#ifndef TESTS_INTEGRATION_TEST_DATAPATH_UTIL_H
#define TESTS_INTEGRATION_TEST_DATAPATH_UTIL_H

#include <sys/wait.h>

#include "dp_env.h"
#include "tap.h"

static inline int
dp_start(struct dp_env *e)
{
	return tap_ok(dp_app_start(e) == 0, "app started") ? 0 : -1;
}

static inline void
dp_stop(struct dp_env *e)
{
	int status = dp_app_stop(e, tap_failed != 0);

	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"app exits 0 on SIGTERM (status %#x)", status);
}

static inline int
dp_attach(struct dp_env *e, const struct vfe_vsock_conf *vc, const struct vfe_guest_conf *gc)
{
	return tap_ok(dp_attach_quiet(e, vc, gc) == 0, "frontend and guest driver attached") ?
		0 : -1;
}

/** Report the guest driver's protocol breaches as one TAP line. */
static inline void
dp_check_guest(struct dp_env *e, const char *what)
{
	if (!tap_ok(e->g.errors == 0, "%s: every packet from the app follows the protocol "
			"(%llu breaches)", what, (unsigned long long)e->g.errors))
		tap_diag("first: %s", e->g.err);
}

#endif /* TESTS_INTEGRATION_TEST_DATAPATH_UTIL_H */
