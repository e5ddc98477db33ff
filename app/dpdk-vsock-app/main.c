/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-vsock-app: EAL arguments, then "--", then ours. The application
 * arguments are checked before the EAL starts, so a typo costs no hugepage
 * setup and leaves no socket behind.
 *
 * Exit status (dpdk-vsock-app(8)): 0 after a stop signal or the console's "quit", and
 * for --help and --version; 1 when it cannot start (the configuration names sockets it
 * cannot use, the EAL or the engine fails); 2 when the command line or a config file is
 * wrong (the unit does not restart on that: RestartPreventExitStatus=2).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_memory.h>
#include <rte_version.h>

#include <vsock_pmd.h>
#include <vsock_pmd_version.h>
#ifdef VSOCK_HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "args.h"
#include "console.h"
#include "display.h"

/*
 * Descriptors for what the process opens besides the EAL's, the workers' and the VMs': its
 * signalfd, vhost-user's event pipe and the descriptors of a message in flight (8), telemetry
 * clients, the console, reads of /proc.
 */
#define FDS_RESERVED 64

/* Exit status for a wrong command line or config file. */
#define EXIT_USAGE 2

/*
 * The descriptor budget (dpdk-vsock-app(8), DESCRIPTORS). Every vsock connection holds a
 * host socket, and every attached VM its frontend's memory and ring descriptors: unless the
 * limit covers every VM at its maximum at once, one guest opening its connections would
 * leave another none (EMFILE), not even to attach. So the soft limit is raised to the hard
 * one, as DPDK's EAL does too, and the app does not start when that is below the budget.
 */
struct fd_budget {
	struct rlimit limit;	/* soft raised to hard */
	uint64_t eal;		/* open once the EAL started, its memory's excluded */
	uint64_t mem;		/* of the EAL's memory: its hugepage files, or its memfd */
	unsigned int workers;
	uint64_t vms;		/* sum over the VMs of max-connections + 32 */
};

/* Entries of /proc/self/fd, the descriptor that reads it excluded. */
static uint64_t open_fds(void)
{
	DIR *dir = opendir("/proc/self/fd");
	uint64_t n = 0;
	struct dirent *d;

	while (dir && (d = readdir(dir)) != NULL)
		n += d->d_name[0] != '.';
	if (dir)
		closedir(dir);
	return n > 0 ? n - 1 : 0;
}

struct mem_walk {
	const struct rte_memseg_list *msl;
	int fd;
	uint64_t fds;
};

/* A new descriptor at each segment whose file is not its predecessor's in the same list. */
static int mem_fd_count(const struct rte_memseg_list *msl, const struct rte_memseg *ms,
			void *arg)
{
	struct mem_walk *w = arg;
	int fd = rte_memseg_get_fd_thread_unsafe(ms);

	if (fd >= 0 && (msl != w->msl || fd != w->fd))
		w->fds++;
	w->msl = msl;
	w->fd = fd;
	return 0;
}

/* The descriptors of the EAL's memory: per page in use, or per list (--single-file-segments). */
static uint64_t mem_fds(void)
{
	struct mem_walk w = { .fd = -1 };

	rte_memseg_walk(mem_fd_count, &w);
	return w.fds;
}

static uint64_t fd_budget_needed(const struct fd_budget *b)
{
	return b->eal + b->mem + FDS_RESERVED + (uint64_t)VSOCK_PMD_FDS_WORKER * b->workers +
	       b->vms;
}

/* What the budget is made of, for the start-up line and the refusal. */
static void fd_budget_describe(const struct fd_budget *b, unsigned int nb_vms, char *buf,
			       size_t len)
{
	snprintf(buf, len, "%" PRIu64 " for the EAL, %" PRIu64 " for its memory, %u in "
		 "reserve, %u for each of %u worker lcore%s, max-connections + %u for each of "
		 "%u VM%s", b->eal, b->mem, FDS_RESERVED, VSOCK_PMD_FDS_WORKER, b->workers,
		 b->workers == 1 ? "" : "s", VSOCK_PMD_FDS_VM_OPEN + VSOCK_PMD_FDS_VM_RUN,
		 nb_vms, nb_vms == 1 ? "" : "s");
}

/* Before the EAL: soft up to the hard limit, so that neither it nor the engine is refused one. */
static void fd_budget_begin(struct fd_budget *b, const struct vsock_pmd_conf *conf)
{
	unsigned int i;

	memset(b, 0, sizeof(*b));
	if (getrlimit(RLIMIT_NOFILE, &b->limit) < 0)
		b->limit.rlim_cur = b->limit.rlim_max = RLIM_INFINITY;
	b->limit.rlim_cur = b->limit.rlim_max;
	setrlimit(RLIMIT_NOFILE, &b->limit);
	for (i = 0; i < conf->nb_vms; i++)
		b->vms += (conf->vms[i].max_conns ? conf->vms[i].max_conns :
			   VSOCK_PMD_MAX_CONNS_DEFAULT) + VSOCK_PMD_FDS_VM_OPEN +
			  VSOCK_PMD_FDS_VM_RUN;
}

/*
 * Whether the hard limit covers the budget: after the EAL started (the engine's memory not
 * allocated yet: @p at_least), and again once the engine started. Says what to do if not.
 */
static bool fd_budget_fits(const struct fd_budget *b, unsigned int nb_vms, bool at_least,
			   const char *prog)
{
	uint64_t need = fd_budget_needed(b);
	char what[256];

	if (b->limit.rlim_max == RLIM_INFINITY || need <= b->limit.rlim_max)
		return true;
	fd_budget_describe(b, nb_vms, what, sizeof(what));
	fprintf(stderr, "%s: cannot start: %s%" PRIu64 " open file descriptors are needed (%s), "
		"but the hard limit is %lu: raise it to %" PRIu64 " with LimitNOFILE=%" PRIu64
		" in the service (systemctl edit dpdk-vsock@NAME), or with ulimit -n %" PRIu64
		" where the app is started\n", prog, at_least ? "at least " : "", need, what,
		(unsigned long)b->limit.rlim_max, need, need, need);
	return false;
}

/* The start-up line: the budget and the limit it fits in. */
static void fd_budget_print(const struct fd_budget *b, unsigned int nb_vms)
{
	struct rlimit rl = b->limit;
	char what[256], limit[24] = "unlimited";

	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur != RLIM_INFINITY)
		snprintf(limit, sizeof(limit), "%lu", (unsigned long)rl.rlim_cur);
	fd_budget_describe(b, nb_vms, what, sizeof(what));
	printf("dpdk-vsock-app: %" PRIu64 " open file descriptors budgeted (%s); limit %s\n",
	       fd_budget_needed(b), what, limit);
}

static void usage(const char *prog)
{
	printf("Usage: %s [EAL options] -- [options]\n"
	       "  --vm cid=N,socket=PATH,uds=PATH  serve one VM (repeatable)\n"
	       "        cid     the guest's context ID (3..4294967294)\n"
	       "        socket  vhost-user socket QEMU connects to\n"
	       "        uds     hybrid vsock Unix socket for host programs\n"
	       "        lcore=N optional: poll this VM on worker lcore N (default: balanced)\n"
	       "        group=G optional, repeatable: VMs sharing a group reach each other\n"
	       "        client=1 optional: connect to socket (QEMU listens: server=on) and\n"
	       "                reconnect after a restart of either side\n"
	       "        socket-mode=0660, socket-group=G  optional: who may connect to the\n"
	       "                VM's sockets (default: the umask and the app's group)\n"	       "        tx-buffer-size=N, queue-size=N, max-connections=N, max-pipes=N,\n"
	       "        line-timeout-ms=N, connect-timeout-ms=N  optional per-VM limits\n"
	       "                (doc/operators-guide.md)\n"
	       "        vhost-device-vsock's keys work too: guest-cid, uds-path, groups=a+b,\n"
	       "        as do its --guest-cid --socket --uds-path ... (doc/migrating.md)\n"
	       "  --config FILE   read options from FILE, one long option per line without\n"
	       "                  \"--\" (\"vm ...\", \"burst N\", \"wait-mode notify\", ...),\n"
	       "                  or vhost-device-vsock's YAML (*.yaml, or starting \"vms:\")\n"
	       "  --burst N       packets per virtqueue per poll, 1..%u (default %u)\n"
	       "  --mbufs N       payload buffers per VM, %u..%u (default %u); when they run\n"
	       "                  out, data waits in the rings and sockets, none is dropped\n"
	       "  -i, --interactive  operator console on stdin (\"help\" lists its commands)\n"
	       "  --stats-period S   print the statistics every S seconds\n"
	       "  --used-publish batch|per-entry  one used->idx store per burst (default), or\n"
	       "                  one per packet as the kernel before used-ring batching\n"
	       "  --wait-mode poll|notify|adaptive  idle workers keep polling (default), or\n"
	       "                  sleep on the guest's kicks and the host sockets as\n"
	       "                  vhost-vsock does, or poll and sleep once idle for a while\n"
	       "  --idle-us N     adaptive: poll N us after the last work, back off N us more,\n"
	       "                  then sleep; 1..%u (default %u)\n"
	       "  -h, --help      this text (before \"--\": the EAL's options, then these)\n"
	       "  --version       the version and the DPDK version it was built with\n"
	       "The main lcore does control work; every other EAL lcore polls VMs.\n"
	       "Counters are also served as telemetry: dpdk-telemetry.py, /vsock/...;\n"
	       "dpdk-vsock-exporter serves them to Prometheus. The final statistics are\n"
	       "printed when the app stops.\n"
	       "Exit status: 0 stopped (signal or quit), 1 cannot start, 2 bad command line\n"
	       "or config file. See dpdk-vsock-app(8).\n",
	       prog, VSOCK_PMD_BURST_MAX, VSOCK_PMD_BURST_DEFAULT, VSOCK_PMD_MBUFS_MIN,
	       VSOCK_PMD_MBUFS_MAX, VSOCK_PMD_MBUFS_DEFAULT, VSOCK_PMD_IDLE_US_MAX,
	       VSOCK_PMD_IDLE_US_DEFAULT);
}

static void version(void)
{
	printf("dpdk-vsock-app %s (libvsock_pmd %s)\n"
	       "built with DPDK %d.%02d.%d, running with %s\n",
	       VSOCK_PMD_VERSION, vsock_pmd_version(), RTE_VER_YEAR, RTE_VER_MONTH,
	       RTE_VER_MINOR, rte_version());
}

/* Tell systemd (Type=notify) where the service stands; nothing when not run by it. */
static void notify(const char *state)
{
#ifdef VSOCK_HAVE_LIBSYSTEMD
	sd_notify(0, state);
#else
	RTE_SET_USED(state);
#endif
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * The main lcore's life once the accelerator runs: wait for a stop signal, serve the
 * console and print the periodic statistics, all from one poll() so none waits for
 * another. Returns the signal that ended it, or 0 when the operator quit.
 */
static int serve(const struct app_opts *opts, const sigset_t *stop_sigs)
{
	uint64_t period_ms = (uint64_t)opts->stats_period * 1000;
	uint64_t next = now_ms() + period_ms;
	struct console *con = NULL;
	int sfd, sig = 0;

	sfd = signalfd(-1, stop_sigs, SFD_CLOEXEC);
	if (sfd < 0) {
		fprintf(stderr, "signalfd: %s\n", strerror(errno));
		return SIGTERM;
	}
	if (opts->interactive) {
		con = console_open();
		if (!con)
			fprintf(stderr, "cannot start the console; running without it\n");
	}
	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = sfd, .events = POLLIN },
			{ .fd = STDIN_FILENO, .events = POLLIN },
		};
		int timeout = -1;

		if (period_ms) {
			uint64_t now = now_ms();

			timeout = next > now ? (int)(next - now) : 0;
		}
		if (poll(pfd, con ? 2 : 1, timeout) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == sizeof(si))
				sig = (int)si.ssi_signo;
			break;
		}
		if (con && pfd[1].revents && !console_input(con))
			break;
		if (period_ms && now_ms() >= next) {
			display_stats();
			next += period_ms;
			if (next <= now_ms())
				next = now_ms() + period_ms;
			if (con)
				console_redisplay(con);
		}
	}
	console_close(con);
	close(sfd);
	return sig;
}

/*
 * As testpmd does when it quits: every VM's and lcore's totals, once no poll is in progress
 * and none starts again, so that the figures are the run's last ones (the unit's journal keeps
 * them). Pausing first: a worker still polling could move bytes after they were printed.
 */
static void final_stats(void)
{
	if (vsock_pmd_pause() < 0)
		return;
	printf("dpdk-vsock-app: final statistics, totals since start (or the last clear)\n");
	display_stats();
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

static bool eal_help(int sep, char **argv)
{
	int i;

	for (i = 1; i < sep; i++) {
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
			return true;
	}
	return false;
}

/*
 * Look at the EAL part before the EAL does: --version and -h/--help are answered there
 * too, and an application option given before "--" gets a hint rather than the EAL's
 * "unrecognized option". Returns -1 to go on, or the exit status.
 */
static int check_eal_part(int sep, char **argv)
{
	int i;

	for (i = 1; i < sep; i++) {
		const char *a = argv[i];
		char name[32];

		if (strcmp(a, "--version") == 0) {
			version();
			return EXIT_SUCCESS;
		}
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
			continue;	/* the EAL prints its usage, then ours (the hook) */
		if (strncmp(a, "--", 2) != 0)
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(a + 2, "="), a + 2);
		if (app_opt_known(name)) {
			fprintf(stderr, "%s: '%s' is an application option: application options "
				"go after `--` (%s [EAL options] -- %s ...)\n",
				argv[0], a, argv[0], a);
			return EXIT_USAGE;
		}
	}
	return -1;
}

int main(int argc, char **argv)
{
	static struct app_opts opts;
	struct fd_budget fds;
	char err[APP_ERR_LEN];
	sigset_t stop_sigs;
	int sep = find_separator(argc, argv);
	int rc, sig;

	app_opts_init(&opts);
	rc = check_eal_part(sep, argv);
	if (rc >= 0)
		return rc;
	/* argv[sep] ("--") stands in for the program name of the application part. */
	if (sep < argc && app_args_parse(argc - sep, argv + sep, &opts, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", argv[0], err);
		return EXIT_USAGE;
	}
	if (opts.help) {
		usage(argv[0]);
		return EXIT_SUCCESS;
	}
	if (opts.version) {
		version();
		return EXIT_SUCCESS;
	}
	if (eal_help(sep, argv)) {
		/* The EAL prints its options and the hook ours, and exits: no VM is needed. */
		rte_set_application_usage_hook(usage);
		rte_eal_init(sep, argv);
		usage(argv[0]);
		return EXIT_SUCCESS;
	}
	if (app_opts_validate(&opts, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", argv[0], err);
		return EXIT_USAGE;
	}
	if (app_opts_check_host(&opts, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", argv[0], err);
		return EXIT_FAILURE;
	}

	/* Console output and log lines interleave in the order they happen, even in a file. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	/*
	 * Block the stop signals before the EAL and vhost create their threads, so
	 * that those threads inherit the mask and only the signalfd in serve() takes them.
	 */
	sigemptyset(&stop_sigs);
	sigaddset(&stop_sigs, SIGINT);
	sigaddset(&stop_sigs, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop_sigs, NULL);

	fd_budget_begin(&fds, &opts.pmd);
	rc = rte_eal_init(sep, argv);
	if (rc < 0) {
		fprintf(stderr, "%s: EAL initialisation failed: %s\n", argv[0],
			rte_strerror(rte_errno));
		return EXIT_FAILURE;
	}
	fds.mem = mem_fds();
	fds.eal = open_fds();
	fds.eal = fds.eal > fds.mem ? fds.eal - fds.mem : 0;
	fds.workers = rte_lcore_count() - 1;
	if (!fd_budget_fits(&fds, opts.pmd.nb_vms, true, argv[0])) {
		rte_eal_cleanup();
		return EXIT_FAILURE;
	}

	rc = vsock_pmd_start(&opts.pmd);
	if (rc < 0) {
		fprintf(stderr, "%s: cannot start: %s\n", argv[0], strerror(-rc));
		rte_eal_cleanup();
		return EXIT_FAILURE;
	}
	/* The engine's pools may have taken more hugepages, each a file. */
	fds.mem = mem_fds();
	if (!fd_budget_fits(&fds, opts.pmd.nb_vms, false, argv[0])) {
		vsock_pmd_stop();
		rte_eal_cleanup();
		return EXIT_FAILURE;
	}
	fd_budget_print(&fds, opts.pmd.nb_vms);
	if (app_opts_notice(&opts))
		printf("dpdk-vsock-app: %s\n", app_opts_notice(&opts));
	printf("dpdk-vsock-app: serving %u VM%s on %u worker lcore%s; Ctrl-C to stop\n",
	       opts.pmd.nb_vms, opts.pmd.nb_vms == 1 ? "" : "s", rte_lcore_count() - 1,
	       rte_lcore_count() == 2 ? "" : "s");
	fflush(stdout);
	/* vsock_pmd_start() returned with every VM's sockets listening (or connecting). */
	notify("READY=1");

	sig = serve(&opts, &stop_sigs);
	if (sig)
		printf("dpdk-vsock-app: signal %d, shutting down\n", sig);
	else
		printf("dpdk-vsock-app: quit, shutting down\n");
	notify("STOPPING=1");
	final_stats();
	vsock_pmd_stop();
	rte_eal_cleanup();
	return EXIT_SUCCESS;
}
