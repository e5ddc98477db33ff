/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_EP_UDS_H
#define VSOCK_PMD_EP_UDS_H

/**
 * Hybrid vsock over Unix sockets, Firecracker convention (doc/hybrid-vsock.md):
 * - guest -> host: a guest connect to CID 2 port P becomes a connect to "<uds_path>_<P>";
 * - host -> guest: a host program connects to <uds_path>, writes "CONNECT <port>\n", and once
 *   the guest accepts reads "OK <host_port>\n" followed by the byte stream.
 *
 * Socket mechanics only: no protocol state lives here. Every socket is non-blocking.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>

#include "ep.h"	/* struct ep_uds_line */

/** Longest "OK <port>\n" reply. */
#define EP_UDS_OK_MAX 16

/** A socket endpoint's epoll events; EPOLLOUT joins them while a write waits for room. */
#define EP_SOCK_EVENTS (EPOLLIN | EPOLLRDHUP | EPOLLET)

/**
 * Make room for a socket we are about to bind at @p path: a socket file left there (by a run
 * that crashed) is removed; anything else (a regular file, a directory, a symlink, even to a
 * socket) is left as it is.
 *
 * @return 0 when the path is free, -EEXIST when something other than a socket is there, or
 *   another negative errno value from lstat() or unlink().
 */
int ep_uds_clear_stale(const char *path);

/**
 * Create the listening socket for host -> guest CONNECTs at @p path, after
 * ep_uds_clear_stale(). For the program that owns the listener (the conn table only accepts
 * on it).
 *
 * @return a non-blocking listening fd, or a negative errno value (-EEXIST: something other
 *   than a socket is at @p path, left untouched).
 */
int ep_uds_listen(const char *path);

/**
 * Connect to "<uds_path>_<port>" without blocking. @p seqpacket picks SOCK_SEQPACKET instead of
 * SOCK_STREAM, so message boundaries survive on the host side.
 *
 * @return a connected non-blocking fd, or a negative errno value: -ENOENT or -ECONNREFUSED
 *   when nothing listens, -EAGAIN when its backlog is full, -ENAMETOOLONG, -EPROTOTYPE when the
 *   listener has the other socket type.
 */
int ep_uds_connect(const char *uds_path, uint32_t port, bool seqpacket);

/**
 * Accept one connection on @p listen_fd.
 *
 * @return a non-blocking fd, -EAGAIN when none is waiting, or another negative errno value.
 */
int ep_uds_accept(int listen_fd);

/**
 * Parse one complete CONNECT line, '\n' included: "CONNECT" in any case, one or more spaces,
 * a decimal port (no sign, fits in 32 bits), an optional '\r', then '\n'.
 *
 * @return 0 with *port set, or -EPROTO.
 */
int ep_uds_parse_connect(const char *line, size_t len, uint32_t *port);

/**
 * Read more of a CONNECT line from @p fd into @p l, until the line is complete or @p fd has
 * nothing more (an edge-triggered socket gets no new edge for what one call left unread).
 * Reads at most what still fits in the line buffer, so the bytes a client sent after its
 * '\n' stay in l->buf as the start of the stream.
 *
 * @return 1 with *port set and *line_len the line's length ('\n' included; l->buf[*line_len..
 *   l->len) is payload), 0 when the line is not complete yet, -EPROTO when it is malformed or
 *   longer than EP_UDS_LINE_MAX, -ECONNRESET when the client closed before finishing it, or
 *   another negative errno value from recv().
 */
int ep_uds_line_read(int fd, struct ep_uds_line *l, uint32_t *port, size_t *line_len);

/**
 * Format the reply to an accepted CONNECT, "OK <port>\n", into @p buf (EP_UDS_OK_MAX bytes).
 *
 * @return its length.
 */
size_t ep_uds_format_ok(char *buf, uint32_t port);

#endif /* VSOCK_PMD_EP_UDS_H */
