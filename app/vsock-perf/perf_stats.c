/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The figures vsock-perf draws from its samples, whatever part measured them, and the
 * JSON's numbers.
 */
#include <math.h>
#include <stdlib.h>

#include "perf_stats.h"

double perf_per(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double perf_median(double *v, unsigned int n)
{
	if (n == 0)
		return NAN;
	qsort(v, n, sizeof(*v), cmp_dbl);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void perf_rtt_sort(uint64_t *ns, uint64_t n)
{
	qsort(ns, n, sizeof(ns[0]), cmp_u64);
}

double perf_rtt_pct(const uint64_t *sorted, uint64_t n, double p)
{
	uint64_t i = (uint64_t)((double)n * p);

	return n ? (double)sorted[i < n ? i : n - 1] / 1e3 : 0;
}

void perf_json_num(FILE *f, const char *k, double v, bool comma)
{
	if (isnan(v) || isinf(v))
		fprintf(f, "\"%s\": null%s", k, comma ? ", " : "");
	else
		fprintf(f, "\"%s\": %.6g%s", k, v, comma ? ", " : "");
}

void perf_json_next(FILE *f, bool *first)
{
	if (!*first)
		fprintf(f, ",\n");
	*first = false;
}
