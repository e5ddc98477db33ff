/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The transfer half that tests/guest/vsock-io.c and tests/host/uds-io.c share,
 * so that both ends of a QEMU test move and check bytes the same way: option
 * parsing, the three actions on a connected socket and their result lines.
 * Each program keeps only how it gets that socket (AF_VSOCK in the guest,
 * AF_UNIX plus the hybrid vsock CONNECT handshake on the host). Plain libc, so
 * the guest program still links statically.
 *
 *   PROGRAM [OPTIONS] <how to connect> ACTION
 *
 * ACTION:
 *   send BYTES  write BYTES bytes of the stream of pattern.h, shutdown(SHUT_WR),
 *               read the peer's "SUM <16 hex>\n" and compare it with our checksum
 *   recv        read to EOF, check the bytes against the stream, answer
 *               "SUM <16 hex>\n" (FNV-1a 64 of what was read), close
 *   echo        write back everything read until EOF, then shutdown(SHUT_WR)
 *
 * OPTIONS:
 *   --seqpacket  SOCK_SEQPACKET: send cuts the stream into messages whose
 *                lengths come from pattern_sizes (the last one may be cut
 *                short); recv checks every message length; echo returns each
 *                message as one message; the SUM reply is one message
 *   --seed N     stream seed (default PATTERN_SEED_DEFAULT)
 *   --chunk N    write size of a stream send (default 65536)
 *   --msg-max N  largest seqpacket message (default 65536)
 *   --timeout S  give up after S seconds overall, connect included
 *                (default 120); prints only "PROGRAM: timeout" on stderr
 *
 * stdout, the result line:
 *   SENT <bytes> SUM <hex> PEER <hex> OK|MISMATCH
 *   RECV <bytes> SUM <hex> MSGS <n> PATTERN OK|BAD@<offset>
 *   ECHO <bytes> MSGS <n>
 * With sio_tool.report_broken, the peer going away mid-stream (ECONNRESET,
 * EPIPE) is a result rather than an error: recv still prints its RECV line
 * when the stream ended with ECONNRESET, and a broken stream adds
 *   BROKEN <op> <errno name> AFTER <bytes>
 * (op: send, recv, reply). Exit status 0 when every check passed, 1 otherwise
 * (reason on stderr).
 */
#ifndef TESTS_STREAM_IO_H
#define TESTS_STREAM_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest write of a stream send and largest seqpacket message. */
#define SIO_BUF_SIZE (1u << 16)

/* What the shared code needs to know about the program: each one hands it to sio_parse_opts(). */
struct sio_tool {
	const char *name;	/* prefix of every stderr line */
	const char *usage;	/* usage lines after the one with the OPTIONS */
	bool report_broken;	/* the peer going away is a BROKEN result, not an error */
};

enum sio_action { SIO_SEND, SIO_RECV, SIO_ECHO };

struct sio_opts {
	int type;		/* SOCK_STREAM or SOCK_SEQPACKET */
	uint64_t seed;
	size_t chunk;
	size_t msg_max;
	unsigned int timeout;	/* seconds, for the whole run */
	enum sio_action action;
	uint64_t bytes;		/* SIO_SEND: how many */
};

__attribute__((noreturn)) void sio_die(const char *what);
__attribute__((noreturn)) void sio_usage(void);
/* A number in C syntax; anything else is a usage error. */
unsigned long long sio_parse_num(const char *s);

/*
 * The first call: @p tool names the program in every message from here on (it must
 * outlive the run). Parse OPTIONS from argv[1]; returns the index of the first other word.
 */
int sio_parse_opts(const struct sio_tool *tool, int argc, char **argv, struct sio_opts *o);
/* argv[i..argc - 1] must be exactly one ACTION. */
void sio_parse_action(int argc, char **argv, int i, struct sio_opts *o);

/* ECONNRESET or EPIPE: the peer went away. */
bool sio_peer_gone(int err);
/*
 * Write all of len, even if a stream socket takes less per call. Returns 0,
 * or -1 with errno set when the peer is gone and report_broken is set.
 */
int sio_write_all(int fd, const void *p, size_t len);

/* Call once the command line is checked, before connecting: arms the timeout. */
void sio_start(const struct sio_opts *o);
/* Run the ACTION on the connected fd and close it; returns the exit status. */
int sio_run(int fd, const struct sio_opts *o);

#endif /* TESTS_STREAM_IO_H */
