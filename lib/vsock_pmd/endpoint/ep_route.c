/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The router: the one place that knows both kinds of pipe a guest's REQUEST can
 * reach, so that the native API and the guest-to-guest table need not know each other.
 */
#include "ep_native.h"
#include "ep_route.h"
#include "ep_sibling.h"
#include "vsock_pkt.h"

struct rte_ring *ep_route(uint64_t src_cid, uint64_t dst_cid, uint32_t dst_port)
{
	if (dst_cid == VSOCK_HOST_CID)
		return ep_native_listener_backlog(src_cid, dst_port);
	return ep_sibling_route(src_cid, dst_cid);
}
