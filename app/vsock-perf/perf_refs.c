/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The pattern every measurement verifies against, and the reference limits printed beside
 * the results: what one core can copy, what a cache line costs between the two cores, and
 * what a Unix stream socket carries between two processes (the ceiling of the Unix-socket
 * endpoint).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pattern.h"
#include "perf_refs.h"
#include "perf_stats.h"

uint8_t *perf_pat_new(void)
{
	uint8_t *pat = malloc(PERF_PAT_PERIOD + PERF_PAT_RUN);
	struct pattern p;

	if (pat == NULL)
		return NULL;
	pattern_init(&p, 0x5eed);
	pattern_fill(&p, pat, PERF_PAT_PERIOD);
	memcpy(pat + PERF_PAT_PERIOD, pat, PERF_PAT_RUN);
	return pat;
}

uint64_t perf_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int perf_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) < 0 ? -errno : 0;
}

double perf_ref_memcpy_gbps(uint32_t payload, double secs)
{
	/* A 128-entry ring's worth of buffers each side, as the guest's rings. */
	size_t ws = (size_t)payload * 128;
	uint8_t *src = malloc(ws), *dst = malloc(ws);
	uint64_t t0, t1, bytes = 0, end;
	size_t off = 0;

	if (src == NULL || dst == NULL) {
		free(src);
		free(dst);
		return 0;
	}
	memset(src, 0x5a, ws);
	memset(dst, 0, ws);
	t0 = perf_now_ns();
	end = t0 + (uint64_t)(secs * 1e9);
	do {
		unsigned int i;

		for (i = 0; i < 256; i++) {
			memcpy(dst + off, src + off, payload);
			off = off + payload >= ws ? 0 : off + payload;
		}
		bytes += 256ull * payload;
		/* Keep the copies: the compiler must not drop them. */
		__asm__ volatile("" : : "r"(dst) : "memory");
		t1 = perf_now_ns();
	} while (t1 < end);
	free(src);
	free(dst);
	return (double)bytes * 8 / (double)(t1 - t0);
}

struct bounce {
	volatile uint64_t line __attribute__((aligned(64)));
	unsigned int rounds;
};

static void *bounce_peer(void *arg)
{
	struct bounce *b = arg;
	unsigned int i;

	perf_pin(1);
	for (i = 0; i < b->rounds; i++) {
		while (__atomic_load_n(&b->line, __ATOMIC_ACQUIRE) != 2 * (uint64_t)i + 1)
			;
		__atomic_store_n(&b->line, 2 * (uint64_t)i + 2, __ATOMIC_RELEASE);
	}
	return NULL;
}

double perf_ref_cacheline_rtt_ns(unsigned int rounds)
{
	static struct bounce b;
	pthread_t th;
	uint64_t t0, t1;
	unsigned int i;

	b.line = 0;
	b.rounds = rounds;
	if (pthread_create(&th, NULL, bounce_peer, &b) != 0)
		return 0;
	perf_pin(0);
	/* The first round waits for the peer to start: not timed. */
	__atomic_store_n(&b.line, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&b.line, __ATOMIC_ACQUIRE) != 2)
		;
	t0 = perf_now_ns();
	for (i = 1; i < rounds; i++) {
		__atomic_store_n(&b.line, 2 * (uint64_t)i + 1, __ATOMIC_RELEASE);
		while (__atomic_load_n(&b.line, __ATOMIC_ACQUIRE) != 2 * (uint64_t)i + 2)
			;
	}
	t1 = perf_now_ns();
	pthread_join(th, NULL);
	return (double)(t1 - t0) / (rounds - 1);
}

double perf_ref_unix_gbps(const uint8_t *pat, uint32_t payload, double secs)
{
	static uint8_t buf[PERF_PAT_RUN];
	uint64_t t0, end;
	double gbps = 0;
	int sv[2], res[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		return 0;
	if (pipe(res) < 0) {
		close(sv[0]);
		close(sv[1]);
		return 0;
	}
	pid = fork();
	if (pid == 0) {
		/* Reader on the worker's CPU, as the app would be: bytes per second it took. */
		uint64_t got = 0, first = 0, last = 0;
		ssize_t n;

		perf_pin(1);
		close(sv[0]);
		while ((n = read(sv[1], buf, sizeof(buf))) > 0) {
			last = perf_now_ns();
			if (got == 0)
				first = last;
			got += (uint64_t)n;
		}
		gbps = last > first ? (double)got * 8 / (double)(last - first) : 0;
		if (write(res[1], &gbps, sizeof(gbps)) < 0)
			_exit(1);
		_exit(0);
	}
	close(sv[1]);
	close(res[1]);
	if (pid < 0) {
		close(sv[0]);
		close(res[0]);
		return 0;
	}
	perf_pin(0);
	memcpy(buf, pat, sizeof(buf));
	t0 = perf_now_ns();
	end = t0 + (uint64_t)(secs * 1e9);
	while (perf_now_ns() < end) {
		unsigned int i;

		for (i = 0; i < 64; i++) {
			if (write(sv[0], buf, payload) <= 0)
				break;
		}
	}
	close(sv[0]);
	if (read(res[0], &gbps, sizeof(gbps)) != sizeof(gbps))
		gbps = 0;
	close(res[0]);
	waitpid(pid, NULL, 0);
	return gbps;
}

/* Move exactly @p len bytes over non-blocking @p fd, spinning; false on error. */
static bool spin_io(int fd, uint8_t *buf, size_t len, bool out)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = out ? send(fd, buf + off, len - off, MSG_DONTWAIT) :
				  recv(fd, buf + off, len - off, MSG_DONTWAIT);

		if (n > 0)
			off += (size_t)n;
		else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			return false;
	}
	return true;
}

double perf_ref_unix_rtt_us(uint32_t payload, unsigned int rounds)
{
	static uint8_t buf[PERF_PAT_RUN];
	uint64_t *rtt = calloc(rounds, sizeof(*rtt));
	double p50 = 0;
	unsigned int i;
	int sv[2];
	pid_t pid;

	if (rtt == NULL || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) {
		free(rtt);
		return 0;
	}
	pid = fork();
	if (pid == 0) {
		perf_pin(1);
		close(sv[0]);
		while (spin_io(sv[1], buf, payload, false) && spin_io(sv[1], buf, payload, true))
			;
		_exit(0);
	}
	close(sv[1]);
	if (pid > 0) {
		perf_pin(0);
		for (i = 0; i < rounds; i++) {
			uint64_t t0 = perf_now_ns();

			if (!spin_io(sv[0], buf, payload, true) ||
			    !spin_io(sv[0], buf, payload, false))
				break;
			rtt[i] = perf_now_ns() - t0;
		}
		if (i == rounds) {
			perf_rtt_sort(rtt, rounds);
			p50 = perf_rtt_pct(rtt, rounds, 0.5);
		}
	}
	close(sv[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	free(rtt);
	return p50;
}

void perf_refs_measure(const struct plan *plan, const uint8_t *pat, struct refs *refs)
{
	unsigned int i;
	double secs = plan->smoke ? 0.05 : 0.3;

	refs->cl_rtt_ns = perf_ref_cacheline_rtt_ns(plan->smoke ? 10000 : 200000);
	for (i = 0; i < plan->nb_payloads; i++) {
		refs->memcpy_gbps[i] = perf_ref_memcpy_gbps(plan->payloads[i], secs);
		refs->unix_gbps[i] = perf_ref_unix_gbps(pat, plan->payloads[i], secs);
		refs->unix_rtt_us[i] = perf_ref_unix_rtt_us(plan->payloads[i],
							    plan->smoke ? 200 : 20000);
	}
	perf_pin(0);
}
