/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef APP_DISPLAY_H
#define APP_DISPLAY_H

/**
 * What operators read, in testpmd's layout: the console's "show" commands and the
 * --stats-period display print through these, so both always look the same.
 * Every function prints to stdout and returns 0, or -ENOENT for an unknown CID
 * (after saying so), or another negative errno value from the library.
 */

#include <stdint.h>

/**
 * Counters of VM @p cid, or of every VM (VSOCK_PMD_CID_ALL), with the throughput since
 * the previous display of that VM.
 */
int display_vm_stats(uint64_t cid);

/** Counters of every worker lcore: polls, busy share, cycles per packet when recorded. */
int display_lcore_stats(void);

/** The periodic display (--stats-period): every VM, then every lcore. */
int display_stats(void);

/** Settings, lcores and which lcore serves which VM. */
int display_config(void);

/** Rows of show conn at a time: 1023 connections stay readable a screen at a time. */
#define DISPLAY_CONNS_PAGE 32

/**
 * The connections of VM @p cid: how many in each state, then DISPLAY_CONNS_PAGE rows from
 * the @p start-th on and the command that shows the next ones.
 */
int display_conns(uint64_t cid, unsigned int start);

/** After a clear: the next throughput figure of @p cid (or all) starts from now. */
void display_forget(uint64_t cid);

#endif /* APP_DISPLAY_H */
