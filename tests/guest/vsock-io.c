/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vsock-io: drive one vsock connection with the deterministic stream of
 * lib/vsock_harness/pattern.h, so that a host-side test checks every byte.
 *
 *   vsock-io [OPTIONS] connect CID PORT ACTION
 *   vsock-io [OPTIONS] listen PORT ACTION     (accepts exactly one connection)
 *
 * ACTION (send BYTES | recv | echo), OPTIONS (--seqpacket, --seed N, --chunk N,
 * --msg-max N, --timeout S) and the result lines are those of
 * tests/common/stream_io.h; the peer going away is an error here.
 *
 * stdout, one line each: "LISTENING <port>" once listening (before accept),
 * "CONNECTED <peer cid> <peer port>", then the result:
 *   SENT <bytes> SUM <hex> PEER <hex> OK|MISMATCH
 *   RECV <bytes> SUM <hex> MSGS <n> PATTERN OK|BAD@<offset>
 *   ECHO <bytes> MSGS <n>
 * Exit status 0 when every check passed, 1 otherwise (reason on stderr).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <linux/vm_sockets.h>

#include "stream_io.h"

static const struct sio_tool tool = {
	.name = "vsock-io",
	.usage = "       connect CID PORT send BYTES|recv|echo\n"
		"       listen PORT send BYTES|recv|echo\n",
	.report_broken = false,
};

static int open_socket(const struct sio_opts *o)
{
	struct timeval tv = { .tv_sec = o->timeout };
	int fd;

	fd = socket(AF_VSOCK, o->type | SOCK_CLOEXEC, 0);
	if (fd < 0)
		sio_die("socket");
	/* the 2 s default is short for a TCG guest; the alarm still bounds it */
	if (setsockopt(fd, AF_VSOCK, SO_VM_SOCKETS_CONNECT_TIMEOUT, &tv, sizeof(tv)) < 0)
		sio_die("setsockopt SO_VM_SOCKETS_CONNECT_TIMEOUT");
	return fd;
}

static int do_connect(unsigned int cid, unsigned int port, const struct sio_opts *o)
{
	struct sockaddr_vm sa = {
		.svm_family = AF_VSOCK, .svm_cid = cid, .svm_port = port,
	};
	int fd = open_socket(o);

	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		sio_die("connect");
	printf("CONNECTED %u %u\n", cid, port);
	return fd;
}

static int do_listen(unsigned int port, const struct sio_opts *o)
{
	struct sockaddr_vm sa = {
		.svm_family = AF_VSOCK, .svm_cid = VMADDR_CID_ANY, .svm_port = port,
	};
	socklen_t len = sizeof(sa);
	int lfd = open_socket(o), fd;

	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		sio_die("bind");
	if (listen(lfd, 1) < 0)
		sio_die("listen");
	printf("LISTENING %u\n", port);
	fd = accept4(lfd, (struct sockaddr *)&sa, &len, SOCK_CLOEXEC);
	if (fd < 0)
		sio_die("accept");
	close(lfd);
	printf("CONNECTED %u %u\n", sa.svm_cid, sa.svm_port);
	return fd;
}

int main(int argc, char **argv)
{
	struct sio_opts o;
	int i = sio_parse_opts(&tool, argc, argv, &o), fd;

	/* check the whole command line before touching the network */
	if (argc - i >= 4 && strcmp(argv[i], "connect") == 0)
		sio_parse_action(argc, argv, i + 3, &o);
	else if (argc - i >= 3 && strcmp(argv[i], "listen") == 0)
		sio_parse_action(argc, argv, i + 2, &o);
	else
		sio_usage();

	/* a guest command line may pipe our output into a reader that exits first */
	signal(SIGPIPE, SIG_IGN);
	sio_start(&o);
	if (argv[i][0] == 'c')
		fd = do_connect(sio_parse_num(argv[i + 1]), sio_parse_num(argv[i + 2]), &o);
	else
		fd = do_listen(sio_parse_num(argv[i + 1]), &o);
	return sio_run(fd, &o);
}
