/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_IOV_H
#define VSOCK_PMD_IOV_H

/**
 * Byte ranges over scattered pieces (struct iovec): a guest buffer's descriptors mapped to
 * host addresses, or a socket call's vector. No DPDK: the core library uses it too.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

static inline size_t iov_total(const struct iovec *iov, unsigned int cnt)
{
	size_t n = 0;
	unsigned int i;

	for (i = 0; i < cnt; i++)
		n += iov[i].iov_len;
	return n;
}

/*
 * The one piece-copy loop: @p len bytes between @p buf and the bytes @p off into @p iov, into
 * the pieces when @p to_iov (the caller checked the room). Inline with a constant @p to_iov,
 * it compiles to the loop of that direction alone.
 */
static inline void iov_copy(const struct iovec *iov, unsigned int cnt, size_t off, void *buf,
			    size_t len, bool to_iov)
{
	unsigned int i;

	for (i = 0; i < cnt && len; i++) {
		size_t n;
		char *piece;

		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		n = iov[i].iov_len - off < len ? iov[i].iov_len - off : len;
		piece = (char *)iov[i].iov_base + off;
		if (to_iov)
			memcpy(piece, buf, n);
		else
			memcpy(buf, piece, n);
		buf = (char *)buf + n;
		len -= n;
		off = 0;
	}
}

/** Copy @p len bytes starting @p off bytes into @p iov to @p dst. */
static inline void iov_read(void *dst, const struct iovec *iov, unsigned int cnt, size_t off,
			    size_t len)
{
	iov_copy(iov, cnt, off, dst, len, false);
}

/** Copy @p len bytes from @p src to @p off bytes into @p iov. */
static inline void iov_write(const struct iovec *iov, unsigned int cnt, size_t off,
			     const void *src, size_t len)
{
	iov_copy(iov, cnt, off, (void *)(uintptr_t)src, len, true);
}

/**
 * Describe up to *@p len bytes from @p off into @p in with at most @p max entries of @p out;
 * *@p len becomes the bytes they describe. @return the entries used.
 */
static inline unsigned int iov_slice_part(struct iovec *out, unsigned int max,
					  const struct iovec *in, unsigned int cnt, size_t off,
					  size_t *len)
{
	size_t left = *len;
	unsigned int i, n = 0;

	for (i = 0; i < cnt && left && n < max; i++) {
		size_t l;

		if (off >= in[i].iov_len) {
			off -= in[i].iov_len;
			continue;
		}
		l = in[i].iov_len - off < left ? in[i].iov_len - off : left;
		out[n].iov_base = (char *)in[i].iov_base + off;
		out[n].iov_len = l;
		n++;
		left -= l;
		off = 0;
	}
	*len -= left;
	return n;
}

/**
 * Describe @p len bytes from @p off into @p in with at most @p max entries of @p out.
 * @return the entries used; 0 when they cannot describe all @p len bytes.
 */
static inline unsigned int iov_slice(struct iovec *out, unsigned int max, const struct iovec *in,
				     unsigned int cnt, size_t off, size_t len)
{
	size_t got = len;
	unsigned int n = iov_slice_part(out, max, in, cnt, off, &got);

	return got == len ? n : 0;
}

#endif /* VSOCK_PMD_IOV_H */
