/* SPDX-License-Identifier: BSD-3-Clause */
#include <vsock_pmd_version.h>

const char *vsock_pmd_version(void)
{
	return VSOCK_PMD_VERSION;
}
