/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics-guest SOCKET UDS: a VM for a test written in another language. It attaches the
 * userspace frontend and its guest driver (lib/vsock_harness/dp_env.h) to the app's
 * vhost-user SOCKET, plays the host programs on the VM's hybrid vsock socket UDS, and
 * moves checked bytes when told, one command a line on stdin, one answer a line on stdout:
 *
 *   connect PORT   a host program listens on UDS_PORT, the guest connects to it
 *                  -> CONNECTED
 *   send N         N more bytes guest -> host on that connection, every one checked at the
 *                  host end -> SENT N
 *   recv N         N more bytes host -> guest, checked in the guest -> RECEIVED N
 *   close          the guest resets the connection -> CLOSED
 *   detach         the frontend goes away, as QEMU's VM stopping (a connection is dropped
 *                  with it) -> DETACHED
 *   attach         the frontend attaches again, as a rebooted VM -> ATTACHED
 *
 * At start it attaches (ATTACHED); between commands it keeps polling the guest driver, so
 * the connection answers the app's credit updates whatever the test does meanwhile. A
 * command that fails answers "ERROR <what>" and changes nothing else; the end of stdin
 * detaches and exits 0. Lines starting with "#" are diagnostics.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dp_env.h"
#include "ops_env.h"

#define MS 10000
/* Longest a transfer may take: a bound against hangs, not a speed. */
#define TRANSFER_MS 120000

static struct dp_env env;
static struct dp_env *e = &env;
static struct vfe_guest_conn *conn;
static int lfd = -1, hfd = -1;
static uint64_t seed = 40;

static void
drop_conn(void)
{
	if (conn != NULL && e->attached) {
		vfe_guest_send_ctl(&e->g, conn, VIRTIO_VSOCK_OP_RST, 0);
		vfe_guest_release(&e->g, conn);
	}
	conn = NULL;
	if (hfd >= 0)
		close(hfd);
	if (lfd >= 0)
		close(lfd);
	hfd = lfd = -1;
}

static void
cmd_connect(uint32_t port)
{
	if (conn != NULL) {
		printf("ERROR a connection is open\n");
		return;
	}
	lfd = dp_listen(e, port, SOCK_STREAM);
	conn = dp_guest_connect(e, port, VIRTIO_VSOCK_TYPE_STREAM, MS);
	if (lfd >= 0 && conn != NULL && conn->state == VFE_GC_ESTABLISHED)
		hfd = dp_accept(e, lfd, MS);
	if (hfd < 0) {
		drop_conn();
		printf("ERROR connect %u\n", port);
		return;
	}
	printf("CONNECTED\n");
}

/* @p n bytes of a fresh stream from one end to the other, checked: whether all arrived. */
static bool
transfer(bool to_host, uint64_t n)
{
	static struct dp_stream out, in;

	dp_stream_init(&out, seed, n);
	dp_stream_init(&in, seed, n);
	seed++;
	if (to_host)
		return DP_WAIT(e, (dp_guest_send(e, conn, &out), dp_host_recv(hfd, &in),
				   in.done == n), TRANSFER_MS) && dp_stream_ok(&in);
	return DP_WAIT(e, (dp_host_send(hfd, &out), dp_guest_recv(e, conn, &in), in.done == n),
		       TRANSFER_MS) && dp_stream_ok(&in);
}

static void
run(char *line)
{
	char word[16] = "";
	uint64_t n = 0;

	sscanf(line, "%15s %" SCNu64, word, &n);
	if (strcmp(word, "connect") == 0 && n > 0 && n <= UINT32_MAX && e->attached) {
		cmd_connect((uint32_t)n);
	} else if ((strcmp(word, "send") == 0 || strcmp(word, "recv") == 0) && n > 0) {
		bool to_host = word[0] == 's';

		if (conn == NULL)
			printf("ERROR no connection\n");
		else if (transfer(to_host, n))
			printf("%s %" PRIu64 "\n", to_host ? "SENT" : "RECEIVED", n);
		else
			printf("ERROR %s %" PRIu64 ": not all bytes arrived intact\n", word, n);
	} else if (strcmp(word, "close") == 0) {
		drop_conn();
		printf("CLOSED\n");
	} else if (strcmp(word, "detach") == 0) {
		drop_conn();
		dp_detach(e);
		printf("DETACHED\n");
	} else if (strcmp(word, "attach") == 0) {
		if (!e->attached && dp_attach_quiet(e, NULL, NULL) < 0)
			printf("ERROR attach\n");
		else
			printf("ATTACHED\n");
	} else {
		printf("ERROR unknown command '%s'\n", line);
	}
}

int
main(int argc, char **argv)
{
	char buf[256];
	size_t len = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 3 || strlen(argv[1]) >= sizeof(e->sock) || strlen(argv[2]) >= sizeof(e->uds)) {
		fprintf(stderr, "usage: metrics-guest SOCKET UDS\n");
		return 2;
	}
	strcpy(e->sock, argv[1]);
	strcpy(e->uds, argv[2]);
	ops_pin_off_worker();
	if (dp_attach_quiet(e, NULL, NULL) < 0) {
		printf("ERROR attach\n");
		return 1;
	}
	printf("ATTACHED\n");
	for (;;) {
		struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
		char *nl;
		ssize_t got;

		if (poll(&p, 1, 0) <= 0) {
			if (e->attached)
				dp_tick(e, UINT64_MAX);
			else
				usleep(1000);
			continue;
		}
		got = read(STDIN_FILENO, buf + len, sizeof(buf) - 1 - len);
		if (got <= 0)
			break;
		len += (size_t)got;
		buf[len] = '\0';
		while ((nl = strchr(buf, '\n')) != NULL) {
			*nl = '\0';
			run(buf);
			len -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, len + 1);
		}
		if (len == sizeof(buf) - 1)
			len = 0;	/* a line longer than any command: drop it */
	}
	drop_conn();
	dp_detach(e);
	return 0;
}
