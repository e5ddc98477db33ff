/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost-user messages, front-end side. The wire format is little-endian
 * and so is every host this runs on (x86-64, arm64): payloads are copied
 * as they are.
 */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "vfe.h"

#define VFE_REPLY_TIMEOUT_MS 5000
#define VFE_CONNECT_RETRY_US 10000

static const char *req_name(uint32_t request)
{
	static const char *const names[] = {
		[VFE_REQ_GET_FEATURES] = "GET_FEATURES",
		[VFE_REQ_SET_FEATURES] = "SET_FEATURES",
		[VFE_REQ_SET_OWNER] = "SET_OWNER",
		[VFE_REQ_RESET_OWNER] = "RESET_OWNER",
		[VFE_REQ_SET_MEM_TABLE] = "SET_MEM_TABLE",
		[VFE_REQ_SET_VRING_NUM] = "SET_VRING_NUM",
		[VFE_REQ_SET_VRING_ADDR] = "SET_VRING_ADDR",
		[VFE_REQ_SET_VRING_BASE] = "SET_VRING_BASE",
		[VFE_REQ_GET_VRING_BASE] = "GET_VRING_BASE",
		[VFE_REQ_SET_VRING_KICK] = "SET_VRING_KICK",
		[VFE_REQ_SET_VRING_CALL] = "SET_VRING_CALL",
		[VFE_REQ_GET_PROTOCOL_FEATURES] = "GET_PROTOCOL_FEATURES",
		[VFE_REQ_SET_PROTOCOL_FEATURES] = "SET_PROTOCOL_FEATURES",
		[VFE_REQ_GET_QUEUE_NUM] = "GET_QUEUE_NUM",
		[VFE_REQ_SET_VRING_ENABLE] = "SET_VRING_ENABLE",
		[VFE_REQ_GET_CONFIG] = "GET_CONFIG",
	};

	if (request < sizeof(names) / sizeof(names[0]) && names[request] != NULL)
		return names[request];
	return "request";
}

static int fail(struct vfe_conn *c, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Record why a call failed and return @p rc, so callers can "return fail()". */
static int fail(struct vfe_conn *c, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	return rc;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int vfe_conn_open(struct vfe_conn *c, const char *path, unsigned int timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint64_t deadline = now_ms() + timeout_ms;
	int fd, err;

	c->fd = -1;
	c->reply_timeout_ms = VFE_REPLY_TIMEOUT_MS;
	c->protocol_features = 0;
	c->err[0] = '\0';
	if (strlen(path) >= sizeof(sa.sun_path))
		return fail(c, -ENAMETOOLONG, "socket path too long: %s", path);
	strcpy(sa.sun_path, path);

	for (;;) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return fail(c, -errno, "socket: %s", strerror(errno));
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			break;
		err = errno;
		close(fd);
		/* The backend may not have created or listened on it yet. */
		if ((err != ENOENT && err != ECONNREFUSED) || now_ms() >= deadline)
			return fail(c, -err, "connect %s: %s", path, strerror(err));
		usleep(VFE_CONNECT_RETRY_US);
	}
	c->fd = fd;
	return 0;
}

void vfe_conn_close(struct vfe_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

int vfe_conn_send(struct vfe_conn *c, const struct vfe_msg *m, const int *fds, unsigned int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * VFE_MAX_FDS)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {
		.iov_base = (void *)(uintptr_t)m,
		.iov_len = VFE_MSG_HDR_SIZE + m->size,
	};
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;
	ssize_t n;

	if (c->fd < 0)
		return fail(c, -ENOTCONN, "%s: not connected", req_name(m->request));
	if (nfds > VFE_MAX_FDS || m->size > sizeof(m->p))
		return fail(c, -EINVAL, "%s: %u fds, %u bytes", req_name(m->request), nfds,
			m->size);
	if (nfds > 0) {
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	do {
		n = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return fail(c, -errno, "sending %s: %s", req_name(m->request), strerror(errno));
	/* A stream socket may take part of a message when its buffer is full. */
	if ((size_t)n != iov.iov_len)
		return fail(c, -EIO, "sending %s: short write %zd of %zu", req_name(m->request),
			n, iov.iov_len);
	return 0;
}

/* Read exactly @p len bytes before the deadline; fds that come along are closed. */
static int recv_all(struct vfe_conn *c, void *buf, size_t len, uint64_t deadline, uint32_t request)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * VFE_MAX_FDS)];
		struct cmsghdr align;
	} ctl;
	size_t got = 0;

	while (got < len) {
		struct iovec iov = { .iov_base = (char *)buf + got, .iov_len = len - got };
		struct msghdr mh = {
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
		};
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		uint64_t now = now_ms();
		struct cmsghdr *cm;
		ssize_t n;
		int rc;

		if (now >= deadline)
			return fail(c, -ETIMEDOUT, "no reply to %s within %u ms", req_name(request),
				c->reply_timeout_ms);
		rc = poll(&pfd, 1, (int)(deadline - now));
		if (rc < 0 && errno != EINTR)
			return fail(c, -errno, "poll: %s", strerror(errno));
		if (rc <= 0)
			continue;
		n = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fail(c, -errno, "reply to %s: %s", req_name(request),
				strerror(errno));
		for (cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm)) {
			int *fds = (int *)CMSG_DATA(cm);
			size_t i, nfds = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
				for (i = 0; i < nfds; i++)
					close(fds[i]);
		}
		if (n == 0)
			return fail(c, -ECONNRESET,
				"backend closed the connection instead of answering %s "
				"(%zu of %zu bytes read)", req_name(request), got, len);
		got += (size_t)n;
	}
	return 0;
}

int vfe_conn_recv(struct vfe_conn *c, uint32_t request, uint32_t size, struct vfe_msg *m)
{
	uint64_t deadline = now_ms() + c->reply_timeout_ms;
	int rc;

	if (c->fd < 0)
		return fail(c, -ENOTCONN, "%s: not connected", req_name(request));
	rc = recv_all(c, m, VFE_MSG_HDR_SIZE, deadline, request);
	if (rc < 0)
		return rc;
	if (m->size > sizeof(m->p))
		return fail(c, -EPROTO, "reply to %s: size %u exceeds %zu",
			req_name(request), m->size, sizeof(m->p));
	rc = recv_all(c, &m->p, m->size, deadline, request);
	if (rc < 0)
		return rc;
	if (m->request != request)
		return fail(c, -EPROTO, "reply to %s (%u) has request %u", req_name(request),
			request, m->request);
	if ((m->flags & VFE_MSG_VERSION_MASK) != VFE_MSG_VERSION || !(m->flags & VFE_MSG_REPLY))
		return fail(c, -EPROTO, "reply to %s has flags %#x (want version 1 + reply)",
			req_name(request), m->flags);
	if (size != 0 && m->size != size)
		return fail(c, -EPROTO, "reply to %s has size %u, expected %u",
			req_name(request), m->size, size);
	return 0;
}

int vfe_conn_request(struct vfe_conn *c, struct vfe_msg *m, const int *fds, unsigned int nfds)
{
	bool ack = c->protocol_features & (1ULL << VFE_PROTOCOL_F_REPLY_ACK);
	struct vfe_msg r;
	int rc;

	m->flags = VFE_MSG_VERSION | (ack ? VFE_MSG_NEED_REPLY : 0);
	rc = vfe_conn_send(c, m, fds, nfds);
	if (rc < 0 || !ack)
		return rc;
	rc = vfe_conn_recv(c, m->request, sizeof(r.p.u64), &r);
	if (rc < 0)
		return rc;
	if (r.p.u64 != 0)
		return fail(c, -EIO, "%s refused (REPLY_ACK %#llx)", req_name(m->request),
			(unsigned long long)r.p.u64);
	return 0;
}

static int get_u64(struct vfe_conn *c, uint32_t request, uint64_t *val)
{
	struct vfe_msg m = { .request = request, .flags = VFE_MSG_VERSION };
	int rc;

	rc = vfe_conn_send(c, &m, NULL, 0);
	if (rc == 0)
		rc = vfe_conn_recv(c, request, sizeof(m.p.u64), &m);
	if (rc == 0)
		*val = m.p.u64;
	return rc;
}

static int set_u64(struct vfe_conn *c, uint32_t request, uint64_t val, int fd)
{
	struct vfe_msg m = { .request = request, .size = sizeof(m.p.u64), .p.u64 = val };

	return vfe_conn_request(c, &m, &fd, fd >= 0 ? 1 : 0);
}

static int set_state(struct vfe_conn *c, uint32_t request, uint32_t index, uint32_t num)
{
	struct vfe_msg m = {
		.request = request,
		.size = sizeof(m.p.state),
		.p.state = { .index = index, .num = num },
	};

	return vfe_conn_request(c, &m, NULL, 0);
}

int vfe_conn_sync(struct vfe_conn *c)
{
	uint64_t features;

	/* The backend reads and handles one message at a time, in order. */
	return get_u64(c, VFE_REQ_GET_FEATURES, &features);
}

int vfe_get_features(struct vfe_conn *c, uint64_t *features)
{
	return get_u64(c, VFE_REQ_GET_FEATURES, features);
}

int vfe_set_features(struct vfe_conn *c, uint64_t features)
{
	return set_u64(c, VFE_REQ_SET_FEATURES, features, -1);
}

int vfe_set_owner(struct vfe_conn *c)
{
	struct vfe_msg m = { .request = VFE_REQ_SET_OWNER };

	return vfe_conn_request(c, &m, NULL, 0);
}

int vfe_get_protocol_features(struct vfe_conn *c, uint64_t *features)
{
	return get_u64(c, VFE_REQ_GET_PROTOCOL_FEATURES, features);
}

int vfe_set_protocol_features(struct vfe_conn *c, uint64_t features)
{
	int rc;

	/* This message itself never waits for an ack: nothing is negotiated yet. */
	c->protocol_features = 0;
	rc = set_u64(c, VFE_REQ_SET_PROTOCOL_FEATURES, features, -1);
	if (rc == 0)
		c->protocol_features = features;
	return rc;
}

int vfe_get_queue_num(struct vfe_conn *c, uint64_t *num)
{
	return get_u64(c, VFE_REQ_GET_QUEUE_NUM, num);
}

int vfe_get_config(struct vfe_conn *c, uint32_t offset, uint32_t size, void *buf)
{
	const uint32_t hdr = offsetof(struct vfe_config, data);
	struct vfe_msg m = {
		.request = VFE_REQ_GET_CONFIG,
		.flags = VFE_MSG_VERSION,
		.size = hdr + size,
		.p.config = { .offset = offset, .size = size },
	};
	int rc;

	if (size > VFE_CONFIG_MAX)
		return fail(c, -EINVAL, "GET_CONFIG of %u bytes", size);
	rc = vfe_conn_send(c, &m, NULL, 0);
	if (rc == 0)
		rc = vfe_conn_recv(c, VFE_REQ_GET_CONFIG, hdr + size, &m);
	if (rc < 0)
		return rc;
	if (m.p.config.size != size)
		return fail(c, -EPROTO, "GET_CONFIG reply: config size %u, asked %u",
			m.p.config.size, size);
	memcpy(buf, m.p.config.data, size);
	return 0;
}

int vfe_get_config_cid(struct vfe_conn *c, uint64_t *cid)
{
	uint64_t le;
	int rc;

	rc = vfe_get_config(c, 0, sizeof(le), &le);
	if (rc == 0)
		*cid = le64toh(le);
	return rc;
}

int vfe_set_mem_table(struct vfe_conn *c, const struct vfe_mem *mem)
{
	struct vfe_msg m = { .request = VFE_REQ_SET_MEM_TABLE };
	int fds[VFE_MAX_REGIONS];
	unsigned int i;

	m.p.mem.nregions = mem->nregions;
	for (i = 0; i < mem->nregions; i++) {
		const struct vfe_mem_region *r = &mem->region[i];

		/* The front-end address is where this process mapped the region. */
		m.p.mem.region[i] = (struct vfe_mem_region_desc){
			.gpa = r->gpa,
			.size = r->size,
			.uaddr = (uint64_t)(uintptr_t)(mem->base + r->offset),
			.mmap_offset = r->offset,
		};
		fds[i] = mem->fd;
	}
	m.size = offsetof(struct vfe_mem_table, region) +
		mem->nregions * sizeof(struct vfe_mem_region_desc);
	return vfe_conn_request(c, &m, fds, mem->nregions);
}

int vfe_set_vring_num(struct vfe_conn *c, uint32_t index, uint32_t num)
{
	return set_state(c, VFE_REQ_SET_VRING_NUM, index, num);
}

int vfe_set_vring_addr(struct vfe_conn *c, const struct vfe_vring_addr *addr)
{
	struct vfe_msg m = {
		.request = VFE_REQ_SET_VRING_ADDR,
		.size = sizeof(m.p.addr),
		.p.addr = *addr,
	};

	return vfe_conn_request(c, &m, NULL, 0);
}

int vfe_set_vring_base(struct vfe_conn *c, uint32_t index, uint32_t base)
{
	return set_state(c, VFE_REQ_SET_VRING_BASE, index, base);
}

int vfe_get_vring_base(struct vfe_conn *c, uint32_t index, uint32_t *base)
{
	struct vfe_msg m = {
		.request = VFE_REQ_GET_VRING_BASE,
		.flags = VFE_MSG_VERSION,
		.size = sizeof(m.p.state),
		.p.state = { .index = index },
	};
	int rc;

	rc = vfe_conn_send(c, &m, NULL, 0);
	if (rc == 0)
		rc = vfe_conn_recv(c, VFE_REQ_GET_VRING_BASE, sizeof(m.p.state), &m);
	if (rc < 0)
		return rc;
	if (m.p.state.index != index)
		return fail(c, -EPROTO, "GET_VRING_BASE %u answered for ring %u", index,
			m.p.state.index);
	*base = m.p.state.num;
	return 0;
}

int vfe_set_vring_kick(struct vfe_conn *c, uint32_t index, int fd)
{
	return set_u64(c, VFE_REQ_SET_VRING_KICK, index | (fd < 0 ? VFE_VRING_NOFD : 0), fd);
}

int vfe_set_vring_call(struct vfe_conn *c, uint32_t index, int fd)
{
	return set_u64(c, VFE_REQ_SET_VRING_CALL, index | (fd < 0 ? VFE_VRING_NOFD : 0), fd);
}

int vfe_set_vring_enable(struct vfe_conn *c, uint32_t index, bool enable)
{
	return set_state(c, VFE_REQ_SET_VRING_ENABLE, index, enable);
}
