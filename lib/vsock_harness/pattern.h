/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The deterministic byte stream and checksum that both ends of a datapath
 * test agree on, so either end can check the other without sharing state:
 *
 * - stream: xorshift64 (13, 7, 17) from a non-zero seed; every step yields
 *   8 bytes, least significant first. Byte k of the stream depends only on
 *   the seed and k, so a reader may consume it in chunks of any size.
 * - checksum: FNV-1a 64 over the bytes in order.
 * - SOCK_SEQPACKET message sizes: a second xorshift64 sequence seeded with
 *   ~seed, mapped to 1..max, so the receiver knows each message boundary.
 *
 * Header-only and libc-free so that static guest programs, host test
 * programs and the frontend tests can all include it.
 */
#ifndef VSOCK_HARNESS_PATTERN_H
#define VSOCK_HARNESS_PATTERN_H

#include <stddef.h>
#include <stdint.h>

#define PATTERN_SEED_DEFAULT 0x9e3779b97f4a7c15ULL
#define PATTERN_FNV_INIT 0xcbf29ce484222325ULL
#define PATTERN_FNV_PRIME 0x100000001b3ULL

struct pattern {
	uint64_t state;	/* last xorshift output */
	uint64_t word;	/* bytes of the current step not yet consumed */
	unsigned int left;	/* how many bytes remain in word */
	uint64_t offset;	/* bytes produced or checked so far */
};

static inline uint64_t pattern_xorshift(uint64_t x)
{
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

static inline void pattern_init(struct pattern *p, uint64_t seed)
{
	/* xorshift is stuck at 0 forever */
	p->state = seed ? seed : PATTERN_SEED_DEFAULT;
	p->word = 0;
	p->left = 0;
	p->offset = 0;
}

static inline uint8_t pattern_next(struct pattern *p)
{
	uint8_t b;

	if (p->left == 0) {
		p->state = pattern_xorshift(p->state);
		p->word = p->state;
		p->left = 8;
	}
	b = (uint8_t)p->word;
	p->word >>= 8;
	p->left--;
	p->offset++;
	return b;
}

static inline void pattern_fill(struct pattern *p, void *buf, size_t len)
{
	uint8_t *d = buf;
	size_t i;

	for (i = 0; i < len; i++)
		d[i] = pattern_next(p);
}

/*
 * Compare buf with the next len bytes of the stream (which are consumed).
 * Returns the index in buf of the first difference, or len if all match.
 */
static inline size_t pattern_check(struct pattern *p, const void *buf, size_t len)
{
	const uint8_t *s = buf;
	size_t i, bad = len;

	for (i = 0; i < len; i++)
		if (pattern_next(p) != s[i] && bad == len)
			bad = i;
	return bad;
}

static inline uint64_t fnv1a64(uint64_t hash, const void *buf, size_t len)
{
	const uint8_t *s = buf;
	size_t i;

	for (i = 0; i < len; i++) {
		hash ^= s[i];
		hash *= PATTERN_FNV_PRIME;
	}
	return hash;
}

/* Sizes of consecutive SOCK_SEQPACKET messages, each in 1..max. */
struct pattern_sizes {
	uint64_t state;
	uint32_t max;
};

static inline void pattern_sizes_init(struct pattern_sizes *s, uint64_t seed, uint32_t max)
{
	s->state = ~(seed ? seed : PATTERN_SEED_DEFAULT);
	if (s->state == 0)
		s->state = PATTERN_SEED_DEFAULT;
	s->max = max ? max : 1;
}

static inline uint32_t pattern_sizes_next(struct pattern_sizes *s)
{
	s->state = pattern_xorshift(s->state);
	return (uint32_t)(s->state % s->max) + 1;
}

#endif /* VSOCK_HARNESS_PATTERN_H */
