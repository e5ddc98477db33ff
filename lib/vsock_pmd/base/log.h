/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_LOG_H
#define VSOCK_PMD_LOG_H

#include <rte_log.h>

/* Registered as "vsock": turn it up with --log-level=vsock:debug. */
extern int vsock_logtype;

#define VSOCK_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, vsock_logtype, "vsock: " fmt "\n", ##__VA_ARGS__)

#endif /* VSOCK_PMD_LOG_H */
