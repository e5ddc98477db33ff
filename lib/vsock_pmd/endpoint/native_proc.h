/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_NATIVE_PROC_H
#define VSOCK_PMD_NATIVE_PROC_H

/**
 * The primary's side of DPDK secondary processes using the native API (native_proc.c):
 * answering their attach, and closing the handles of those that exit without detaching.
 * vsock_native_attach() and vsock_native_detach() are the secondary's side.
 */

/**
 * Before the API opens: serve attach requests and watch attached processes. Without a
 * shared configuration (--no-shconf, --in-memory) there is nothing to serve: still 0.
 * @return 0 or -ENOMEM.
 */
int native_proc_start(void);

/** Stop serving and watching; before the API's tables go. */
void native_proc_stop(void);

#endif /* VSOCK_PMD_NATIVE_PROC_H */
