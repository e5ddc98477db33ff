/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Waiting in tests that drive a userspace guest: nothing happens unless the test keeps
 * polling, so every wait runs the test's own step (a poll of its guests) until the
 * condition holds or the time is up.
 */
#ifndef TESTS_POLL_WAIT_H
#define TESTS_POLL_WAIT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/** Milliseconds on the monotonic clock. */
static inline uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/** Run @p step until @p cond holds or @p ms passed; the value is whether @p cond held. */
#define POLL_WAIT(cond, ms, step) ({ \
	uint64_t end_ = now_ms() + (ms); \
	bool ok_; \
	while (!(ok_ = (cond)) && now_ms() < end_) \
		step; \
	ok_; })

#endif /* TESTS_POLL_WAIT_H */
