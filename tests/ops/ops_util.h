/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The operator tests' environment (lib/vsock_harness/ops_env.h) and its checks
 * as TAP lines. tap.h keeps its counters per translation unit: whatever
 * reports is inline here.
 */
#ifndef TESTS_OPS_OPS_UTIL_H
#define TESTS_OPS_OPS_UTIL_H

#include "ops_env.h"
#include "test_datapath_util.h"

/** Print the log if a check failed, then ops_stop() and check that the app exited 0. */
static inline void
ops_finish(struct ops_env *o)
{
	int status;

	if (tap_failed)
		app_proc_dump_log(&o->dp.app);
	status = ops_stop(o);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"app exits 0 on SIGTERM (status %#x)", status);
}

#endif /* TESTS_OPS_OPS_UTIL_H */
