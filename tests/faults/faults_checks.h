/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The checks every fault case ends with, as TAP lines of the test that includes this
 * (tap.h counts per program, so these live in a header, not in faults_util.c).
 */
#ifndef TESTS_FAULTS_CHECKS_H
#define TESTS_FAULTS_CHECKS_H

#include "faults_util.h"
#include "tap.h"

/* mbufs, fds and connections come back to @p base within @p ms. */
static inline void fx_check_back(struct fx_env *f, const struct fx_res *base, unsigned int ms,
				 const char *what)
{
	struct fx_res now;

	if (!tap_ok(fx_res_back(f, base, ms, &now),
		    "%s: mbufs in use (%llu), open fds (%llu), connections (%llu) back to start",
		    what, (unsigned long long)base->mbufs_in_use,
		    (unsigned long long)base->open_fds, (unsigned long long)base->conns))
		tap_diag("%s", f->why);
}

/* The other VM on the same lcore still moves checked bytes. */
static inline void fx_check_peer(struct fx_env *f, const char *what)
{
	if (!tap_ok(fx_peer_check(f) == 0, "%s: VM 5 moves checked bytes both ways", what))
		tap_diag("%s", f->why);
}

#endif /* TESTS_FAULTS_CHECKS_H */
