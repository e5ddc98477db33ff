/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef FUZZ_INPUT_H
#define FUZZ_INPUT_H

/* What every fuzz target here uses: its invariant check, and reading its input. */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(c) do {							\
	if (!(c)) {							\
		fprintf(stderr, "%s:%d: invariant failed: %s\n",	\
			__FILE__, __LINE__, #c);			\
		abort();						\
	}								\
} while (0)

/* The fuzzer's bytes; missing bytes read as zero. */
struct input {
	const uint8_t *p;
	size_t n;
};

static inline uint8_t in_u8(struct input *in)
{
	if (in->n == 0)
		return 0;
	in->n--;
	return *in->p++;
}

static inline uint16_t in_u16(struct input *in)
{
	uint16_t lo = in_u8(in);

	return lo | (uint16_t)in_u8(in) << 8;
}

static inline uint32_t in_u32(struct input *in)
{
	uint32_t lo = in_u16(in);

	return lo | (uint32_t)in_u16(in) << 16;
}

/* An input's operations, each followed by the model's checks, at most @p max of them. */
static inline void fuzz_run(struct input *in, unsigned int max, void (*op)(struct input *in),
		void (*check)(void))
{
	unsigned int n;

	check();
	for (n = 0; n < max && in->n != 0; n++) {
		op(in);
		check();
	}
}

#endif /* FUZZ_INPUT_H */
