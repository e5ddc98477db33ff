/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vsock-native-example: a host service on the native poll-mode API
 * (include/vsock_pmd_native.h), in the same process as the accelerator or in a DPDK
 * secondary process of one (dpdk-vsock-app, say).
 *
 *   vsock-native-example <EAL args> -- --vm cid=N,socket=PATH,uds=PATH [--vm ...]
 *                        --port P [--mode echo|sink|source] [--bytes N]
 *   vsock-native-example --proc-type=secondary --file-prefix PRIMARY'S --lcores 8@0 --
 *                        --cid N [--cid ...] --port P [--mode ...] [--bytes N]
 *
 * It listens on host port P of every VM; a guest connecting to CID 2 port P gets:
 *   echo    everything it sends, back (each seqpacket message as one message)
 *   sink    its bytes read and dropped; "SINK <bytes>" logged when it closes
 *   source  N bytes (--bytes, default 1 GiB) of a counting pattern, then EOF
 * The main lcore is the service's lcore: it polls every connection in turn, with no
 * syscall and no lock; the worker lcores poll the VMs. Backpressure from a guest that
 * does not read shows as a short send: the rest waits in the connection's slot.
 *
 * Self-contained, as DPDK's examples are: its options are its own (getopt_long, and
 * DPDK's rte_kvargs for --vm's keys), its only library the engine's.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_kvargs.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include <vsock_pmd.h>
#include <vsock_pmd_native.h>

#define BURST 32
#define MAX_CONNS 256
#define POOL_MBUFS 16383

enum mode { MODE_ECHO, MODE_SINK, MODE_SOURCE };

/* One guest connection and what it still owes. */
struct svc_conn {
	int h;			/* native handle, -1 when the slot is free */
	uint64_t bytes;		/* moved so far */
	struct rte_mbuf *held[BURST];	/* echo: received, not taken back by send yet */
	uint16_t nb_held, held_off;
	bool eof;		/* the guest sends no more */
};

static volatile sig_atomic_t quit;
static struct svc_conn conns[MAX_CONNS];
static struct rte_mempool *pool;
static enum mode mode = MODE_ECHO;
static uint64_t source_bytes = 1ULL << 30;

static void on_signal(int sig)
{
	(void)sig;
	quit = 1;
}

static void conn_close(struct svc_conn *c, const char *why)
{
	struct vsock_native_info info = { 0 };

	vsock_native_info(c->h, &info);
	printf("%s %" PRIu64 " bytes, cid %" PRIu64 " port %u (%s)\n",
	       mode == MODE_SINK ? "SINK" : mode == MODE_ECHO ? "ECHO" : "SOURCE", c->bytes,
	       info.guest_cid, info.guest_port, why);
	fflush(stdout);
	rte_pktmbuf_free_bulk(c->held + c->held_off, c->nb_held - c->held_off);
	vsock_native_close(c->h);
	memset(c, 0, sizeof(*c));
	c->h = -1;
}

/* Give back what was received; whatever the ring does not take now waits for next round. */
static bool echo_flush(struct svc_conn *c)
{
	int n;

	if (c->held_off == c->nb_held)
		return true;
	n = vsock_native_send_burst(c->h, c->held + c->held_off, c->nb_held - c->held_off);
	if (n < 0) {
		conn_close(c, strerror(-n));
		return false;
	}
	c->held_off += (uint16_t)n;
	return c->held_off == c->nb_held;
}

static void serve_echo(struct svc_conn *c)
{
	int i, n;

	if (!echo_flush(c) || c->eof)
		return;
	n = vsock_native_recv_burst(c->h, c->held, BURST);
	if (n == -ESHUTDOWN) {
		/* Everything came back already: answer the guest's EOF with ours. */
		c->eof = true;
		vsock_native_shutdown(c->h, VSOCK_NATIVE_SHUT_WR);
		return;
	}
	if (n < 0) {
		conn_close(c, strerror(-n));
		return;
	}
	for (i = 0; i < n; i++)
		c->bytes += rte_pktmbuf_pkt_len(c->held[i]);
	c->nb_held = (uint16_t)n;
	c->held_off = 0;
	echo_flush(c);
}

static void serve_sink(struct svc_conn *c)
{
	struct rte_mbuf *m[BURST];
	int i, n = vsock_native_recv_burst(c->h, m, BURST);

	if (n < 0) {
		conn_close(c, n == -ESHUTDOWN ? "end of stream" : strerror(-n));
		return;
	}
	for (i = 0; i < n; i++)
		c->bytes += rte_pktmbuf_pkt_len(m[i]);
	rte_pktmbuf_free_bulk(m, (unsigned int)n);
}

static void serve_source(struct svc_conn *c)
{
	struct rte_mbuf *m[BURST];
	unsigned int i, k = 0;
	int n;

	while (k < BURST && c->bytes + (uint64_t)k * 2048 < source_bytes) {
		uint64_t off = c->bytes + (uint64_t)k * 2048;
		uint16_t len = (uint16_t)RTE_MIN(2048ULL, source_bytes - off);
		uint8_t *p;

		m[k] = rte_pktmbuf_alloc(pool);
		if (!m[k])
			break;
		p = rte_pktmbuf_mtod(m[k], uint8_t *);
		for (i = 0; i < len; i++)
			p[i] = (uint8_t)(off + i);
		m[k]->data_len = len;
		m[k]->pkt_len = len;
		k++;
	}
	n = vsock_native_send_burst(c->h, m, (uint16_t)k);
	rte_pktmbuf_free_bulk(m + RTE_MAX(n, 0), k - (unsigned int)RTE_MAX(n, 0));
	if (n < 0) {
		conn_close(c, strerror(-n));
		return;
	}
	for (i = 0; i < (unsigned int)n; i++)
		c->bytes += m[i]->pkt_len;
	if (c->bytes >= source_bytes && !c->eof) {
		c->eof = true;
		vsock_native_shutdown(c->h, VSOCK_NATIVE_SHUT_WR);
	}
	if (c->eof) {
		int st = vsock_native_state(c->h);

		if (st == VSOCK_NATIVE_CLOSED || st == VSOCK_NATIVE_RESET ||
		    st == VSOCK_NATIVE_PEER_SHUT)
			conn_close(c, "done");
	}
}

static void accept_all(const int *listeners, unsigned int nb)
{
	unsigned int i, s;

	for (i = 0; i < nb; i++) {
		int h;

		while ((h = vsock_native_accept(listeners[i])) >= 0) {
			for (s = 0; s < MAX_CONNS && conns[s].h >= 0; s++)
				;
			if (s == MAX_CONNS) {
				vsock_native_close(h);
				continue;
			}
			conns[s].h = h;
		}
	}
}

static void usage(const char *prog)
{
	printf("Usage: %s [EAL options] -- --vm cid=N,socket=PATH,uds=PATH [--vm ...] --port P\n"
	       "          [--mode echo|sink|source] [--bytes N]\n"
	       "       %s --proc-type=secondary [EAL options] -- --cid N [--cid ...] --port P\n"
	       "          [--mode echo|sink|source] [--bytes N]\n", prog, prog);
}

/* A guest CID: not 0, 1 or 2 (hypervisor, local, host), below VMADDR_CID_ANY. */
static int cid_parse(const char *s, uint64_t *cid)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || *s == '-' || v < 3 || v >= 0xffffffffULL)
		return -1;
	*cid = v;
	return 0;
}

/* Copy a socket path that fits a sockaddr_un. */
static int path_copy(char *dst, const char *src)
{
	size_t len = strlen(src);

	if (len == 0 || len > VSOCK_PMD_PATH_MAX)
		return -1;
	memcpy(dst, src, len + 1);
	return 0;
}

/* The next VM of @p conf, or NULL (with a message) when the table is full. */
static struct vsock_pmd_vm_conf *vm_next(struct vsock_pmd_conf *conf, const char *opt)
{
	if (conf->nb_vms == VSOCK_PMD_MAX_VMS) {
		fprintf(stderr, "%s: at most %d VMs\n", opt, VSOCK_PMD_MAX_VMS);
		return NULL;
	}
	return &conf->vms[conf->nb_vms];
}

/* --vm cid=N,socket=PATH,uds=PATH: a VM this process serves, each key once. */
static int vm_add(const char *spec, struct vsock_pmd_conf *conf)
{
	static const char *const keys[] = { "cid", "socket", "uds", NULL };
	struct vsock_pmd_vm_conf *vm = vm_next(conf, "--vm");
	struct rte_kvargs *kv;
	int rc = -1;

	if (vm == NULL)
		return -1;
	kv = rte_kvargs_parse(spec, keys);
	if (kv == NULL || rte_kvargs_count(kv, "cid") != 1 ||
	    rte_kvargs_count(kv, "socket") != 1 || rte_kvargs_count(kv, "uds") != 1)
		fprintf(stderr, "--vm %s: takes cid=N,socket=PATH,uds=PATH, each key once\n", spec);
	else if (cid_parse(rte_kvargs_get(kv, "cid"), &vm->cid) < 0)
		fprintf(stderr, "--vm %s: cid is a guest CID, 3 to 0xfffffffe\n", spec);
	else if (path_copy(vm->socket_path, rte_kvargs_get(kv, "socket")) < 0 ||
		 path_copy(vm->uds_path, rte_kvargs_get(kv, "uds")) < 0)
		fprintf(stderr, "--vm %s: a path is empty or longer than %zu bytes\n", spec,
			VSOCK_PMD_PATH_MAX);
	else
		rc = 0;
	rte_kvargs_free(kv);
	if (rc == 0)
		conf->nb_vms++;
	return rc;
}

/* --cid: a VM of the primary to serve, when this is a secondary process. */
static int cid_add(const char *arg, struct vsock_pmd_conf *conf)
{
	struct vsock_pmd_vm_conf *vm = vm_next(conf, "--cid");

	if (vm == NULL)
		return -1;
	if (cid_parse(arg, &vm->cid) < 0) {
		fprintf(stderr, "--cid %s: a guest CID, 3 to 0xfffffffe\n", arg);
		return -1;
	}
	conf->nb_vms++;
	return 0;
}

/* No two VMs with one CID, no socket path twice (the engine checks the rest at start). */
static int vms_check(const struct vsock_pmd_conf *conf)
{
	unsigned int i, j;

	for (i = 0; i < conf->nb_vms; i++) {
		const struct vsock_pmd_vm_conf *a = &conf->vms[i];

		if (!strcmp(a->socket_path, a->uds_path)) {
			fprintf(stderr, "VM %" PRIu64 ": socket and uds are one path\n", a->cid);
			return -1;
		}
		for (j = 0; j < i; j++) {
			const struct vsock_pmd_vm_conf *b = &conf->vms[j];

			if (a->cid == b->cid) {
				fprintf(stderr, "VM %" PRIu64 " twice\n", a->cid);
				return -1;
			}
			if (!strcmp(a->socket_path, b->socket_path) ||
			    !strcmp(a->socket_path, b->uds_path) ||
			    !strcmp(a->uds_path, b->socket_path) ||
			    !strcmp(a->uds_path, b->uds_path)) {
				fprintf(stderr, "VMs %" PRIu64 " and %" PRIu64 " share a socket "
					"path\n", b->cid, a->cid);
				return -1;
			}
		}
	}
	return 0;
}

static int parse(int argc, char **argv, struct vsock_pmd_conf *conf, uint32_t *port)
{
	bool secondary = rte_eal_process_type() == RTE_PROC_SECONDARY;
	static const struct option lo[] = {
		{ "vm", required_argument, NULL, 'v' },
		{ "cid", required_argument, NULL, 'c' },
		{ "port", required_argument, NULL, 'p' },
		{ "mode", required_argument, NULL, 'm' },
		{ "bytes", required_argument, NULL, 'b' },
		{ NULL, 0, NULL, 0 },
	};
	int o;

	optind = 0;
	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (o) {
		case 'v':
			if (secondary) {
				fprintf(stderr, "a secondary process serves the primary's VMs: "
					"--cid, not --vm\n");
				return -1;
			}
			if (vm_add(optarg, conf) < 0)
				return -1;
			break;
		case 'c':
			if (!secondary) {
				fprintf(stderr, "--cid is for a secondary process: use --vm\n");
				return -1;
			}
			if (cid_add(optarg, conf) < 0)
				return -1;
			break;
		case 'p':
			*port = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'm':
			if (!strcmp(optarg, "echo"))
				mode = MODE_ECHO;
			else if (!strcmp(optarg, "sink"))
				mode = MODE_SINK;
			else if (!strcmp(optarg, "source"))
				mode = MODE_SOURCE;
			else
				return -1;
			break;
		case 'b':
			source_bytes = strtoull(optarg, NULL, 0);
			break;
		default:
			return -1;
		}
	}
	return 0;
}

/* Run the accelerator here, or use the primary's. */
static int engine_start(const struct vsock_pmd_conf *conf, bool secondary)
{
	int rc = secondary ? vsock_native_attach() : vsock_pmd_start(conf);

	if (rc < 0)
		fprintf(stderr, "cannot %s: %s\n", secondary ? "attach to the primary process" :
			"start the accelerator", strerror(-rc));
	return rc;
}

static void engine_stop(bool secondary)
{
	if (secondary)
		vsock_native_detach();
	else
		vsock_pmd_stop();
}

int main(int argc, char **argv)
{
	int listeners[VSOCK_PMD_MAX_VMS];
	char pool_name[RTE_MEMPOOL_NAMESIZE];
	struct vsock_pmd_conf conf;
	uint32_t port = 0;
	unsigned int i;
	bool secondary;
	int n, rc = 1;

	n = rte_eal_init(argc, argv);
	if (n < 0) {
		fprintf(stderr, "EAL initialisation failed\n");
		return 1;
	}
	secondary = rte_eal_process_type() == RTE_PROC_SECONDARY;
	vsock_pmd_conf_init(&conf);
	if (parse(argc - n, argv + n, &conf, &port) < 0 || !port || !conf.nb_vms ||
	    (!secondary && vms_check(&conf) < 0)) {
		usage(argv[0]);
		goto out;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	/* Pool names are shared by every process of the group. */
	snprintf(pool_name, sizeof(pool_name), "example_%d", getpid());
	pool = rte_pktmbuf_pool_create(pool_name, POOL_MBUFS, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				       (int)rte_socket_id());
	if (!pool || engine_start(&conf, secondary) < 0)
		goto out;
	for (i = 0; i < conf.nb_vms; i++) {
		listeners[i] = vsock_native_listen(conf.vms[i].cid, port);
		if (listeners[i] < 0) {
			fprintf(stderr, "cannot listen on VM %" PRIu64 " port %u: %s\n",
				conf.vms[i].cid, port, strerror(-listeners[i]));
			goto stop;
		}
	}
	for (i = 0; i < MAX_CONNS; i++)
		conns[i].h = -1;
	printf("LISTENING %u\n", port);
	fflush(stdout);
	while (!quit) {
		accept_all(listeners, conf.nb_vms);
		for (i = 0; i < MAX_CONNS; i++) {
			struct svc_conn *c = &conns[i];

			if (c->h < 0)
				continue;
			if (mode == MODE_ECHO)
				serve_echo(c);
			else if (mode == MODE_SINK)
				serve_sink(c);
			else
				serve_source(c);
			/* Echo: the guest closed and everything went back. */
			if (c->h >= 0 && mode == MODE_ECHO && c->eof &&
			    vsock_native_state(c->h) != VSOCK_NATIVE_ESTABLISHED &&
			    vsock_native_state(c->h) != VSOCK_NATIVE_PEER_SHUT)
				conn_close(c, "done");
		}
	}
	rc = 0;
	for (i = 0; i < MAX_CONNS; i++) {
		if (conns[i].h >= 0)
			conn_close(&conns[i], "stopping");
	}
stop:
	engine_stop(secondary);
out:
	rte_mempool_free(pool);
	rte_eal_cleanup();
	return rc;
}
