/* SPDX-License-Identifier: BSD-3-Clause */
/* The log type beside its declaration (log.h), so that every room that logs uses base only. */
#include <rte_log.h>

#include "log.h"

RTE_LOG_REGISTER(vsock_logtype, vsock, INFO);
