/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The host program's end of a native API connection (include/vsock_pmd_native.h) in tests:
 * bytes to mbufs and back, in bursts, without blocking; whether the engine polls a VM yet.
 */
#ifndef TESTS_NATIVE_IO_H
#define TESTS_NATIVE_IO_H

#include <string.h>

#include <rte_mbuf.h>

#include <vsock_pmd.h>
#include <vsock_pmd_native.h>

/*
 * The engine polls VM @p idx's rings: it takes an attached guest over asynchronously, and a
 * program's connect is refused (-ECONNREFUSED) until then.
 */
static inline bool native_io_vm_running(unsigned int idx)
{
	struct vsock_pmd_vm_info vi = { 0 };

	return vsock_pmd_vm_info_get(idx, &vi) == 0 && vi.running;
}

/*
 * Offer @p len bytes of @p src as @p chunk-byte mbufs from @p mp (one burst of up to 32).
 * @return bytes the connection took now (backpressure: fewer), or send_burst's -errno.
 */
static inline long native_io_send(int h, struct rte_mempool *mp, const uint8_t *src, size_t len,
				  uint16_t chunk)
{
	struct rte_mbuf *m[32];
	unsigned int i, n = 0;
	int rc;

	while (n < RTE_DIM(m) && len > (size_t)n * chunk) {
		uint16_t l = (uint16_t)RTE_MIN((size_t)chunk, len - (size_t)n * chunk);

		m[n] = rte_pktmbuf_alloc(mp);
		if (!m[n])
			break;
		memcpy(rte_pktmbuf_append(m[n], l), src + (size_t)n * chunk, l);
		n++;
	}
	rc = vsock_native_send_burst(h, m, (uint16_t)n);
	for (i = rc > 0 ? (unsigned int)rc : 0; i < n; i++)
		rte_pktmbuf_free(m[i]);
	if (rc < 0)
		return rc;
	return (long)RTE_MIN(len, (size_t)rc * chunk);
}

/*
 * Take one burst into @p buf at @p *got (bytes past @p max are counted, not copied); each
 * mbuf (a whole message on seqpacket) counts in @p msgs if not NULL.
 * @return what recv_burst returned.
 */
static inline int native_io_recv(int h, uint8_t *buf, size_t *got, size_t max,
				 unsigned int *msgs)
{
	struct rte_mbuf *m[32];
	int i, rc = vsock_native_recv_burst(h, m, RTE_DIM(m));

	for (i = 0; i < rc; i++) {
		struct rte_mbuf *s;

		for (s = m[i]; s; s = s->next) {
			if (*got + s->data_len <= max)
				memcpy(buf + *got, rte_pktmbuf_mtod(s, void *), s->data_len);
			*got += s->data_len;
		}
		if (msgs)
			(*msgs)++;
		rte_pktmbuf_free(m[i]);
	}
	return rc;
}

#endif /* TESTS_NATIVE_IO_H */
