/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-vsock-app: EAL arguments, then "--", then ours. The application
 * arguments are checked before the EAL starts, so a typo costs no hugepage
 * setup and leaves no socket behind.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>

#include <vsock_pmd.h>

#include "args.h"

static volatile sig_atomic_t quit_signal;

static void on_signal(int sig)
{
	quit_signal = sig;
}

static void usage(const char *prog)
{
	printf("Usage: %s [EAL options] -- [options]\n"
	       "  --vm cid=N,socket=PATH,uds=PATH  serve one VM (repeatable)\n"
	       "        cid     the guest's context ID (3..0xfffffffe)\n"
	       "        socket  vhost-user socket QEMU connects to\n"
	       "        uds     hybrid vsock Unix socket for host programs\n"
	       "  --config FILE   read options from FILE, one per line (\"vm ...\", \"burst N\")\n"
	       "  --burst N       packets per virtqueue per poll, 1..%u (default %u)\n"
	       "  -h, --help      this text\n"
	       "The main lcore does control work; every other EAL lcore polls VMs.\n",
	       prog, VSOCK_PMD_BURST_MAX, VSOCK_PMD_BURST_DEFAULT);
}

/* Index of the "--" that ends the EAL arguments, or argc if there is none. */
static int find_separator(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			return i;
	}
	return argc;
}

int main(int argc, char **argv)
{
	static struct app_opts opts;
	char err[APP_ERR_LEN];
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t stop_sigs, wait_mask;
	int sep = find_separator(argc, argv);
	int rc;

	app_opts_init(&opts);
	/* argv[sep] ("--") stands in for the program name of the application part. */
	if (sep < argc && app_args_parse(argc - sep, argv + sep, &opts, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", argv[0], err);
		return EXIT_FAILURE;
	}
	if (opts.help) {
		usage(argv[0]);
		return EXIT_SUCCESS;
	}
	if (app_opts_validate(&opts, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", argv[0], err);
		return EXIT_FAILURE;
	}

	/*
	 * Block the stop signals before the EAL and vhost create their threads, so
	 * that those threads inherit the mask and only sigsuspend() below takes them.
	 */
	sigemptyset(&stop_sigs);
	sigaddset(&stop_sigs, SIGINT);
	sigaddset(&stop_sigs, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop_sigs, &wait_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	rc = rte_eal_init(sep, argv);
	if (rc < 0) {
		fprintf(stderr, "%s: EAL initialisation failed: %s\n", argv[0],
			rte_strerror(rte_errno));
		return EXIT_FAILURE;
	}

	rc = vsock_pmd_start(&opts.pmd);
	if (rc < 0) {
		fprintf(stderr, "%s: cannot start: %s\n", argv[0], strerror(-rc));
		rte_eal_cleanup();
		return EXIT_FAILURE;
	}
	printf("dpdk-vsock-app: serving %u VM%s on %u worker lcore%s; Ctrl-C to stop\n",
	       opts.pmd.nb_vms, opts.pmd.nb_vms == 1 ? "" : "s", rte_lcore_count() - 1,
	       rte_lcore_count() == 2 ? "" : "s");
	fflush(stdout);

	while (!quit_signal)
		sigsuspend(&wait_mask);

	printf("dpdk-vsock-app: signal %d, shutting down\n", (int)quit_signal);
	vsock_pmd_stop();
	rte_eal_cleanup();
	return EXIT_SUCCESS;
}
