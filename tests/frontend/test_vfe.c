/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Self-test of the frontend library, without a backend: the tests that use
 * it can only be trusted if its rings, memory map and messages are right.
 * The device side is played here by hand, on the shared memory.
 */
#include <errno.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tap.h"
#include "vfe.h"

#define PAGE 4096u

static void
test_mem(void)
{
	struct vfe_mem_conf conf = {
		.size = 4 * PAGE, .nregions = 2, .gpa_base = 0x100000, .gap = 0x10000,
	};
	struct vfe_mem m;
	uint64_t gpa;
	uint8_t *p;

	tap_ok(vfe_mem_init(&m, &conf) == 0, "mem: two regions with a gap");
	tap_ok(m.region[0].gpa == 0x100000 && m.region[1].gpa == 0x112000 &&
		m.region[1].offset == 2 * PAGE && m.region[1].size == 2 * PAGE,
		"mem: region layout gpa %#llx/%#llx", (unsigned long long)m.region[0].gpa,
		(unsigned long long)m.region[1].gpa);
	tap_ok(vfe_mem_ptr(&m, 0x100000 + 2 * PAGE - 8, 16) == NULL,
		"mem: a range running into the gap has no pointer");
	tap_ok(vfe_mem_ptr(&m, 0x112000, 16) == m.base + 2 * PAGE &&
		vfe_mem_gpa(&m, m.base + 2 * PAGE + 5) == 0x112005,
		"mem: gpa <-> pointer in region 1");
	tap_ok(vfe_mem_ptr(&m, 0x0fffff, 1) == NULL && vfe_mem_ptr(&m, 0x114000 + PAGE, 1) == NULL,
		"mem: outside both regions");

	p = vfe_mem_alloc(&m, PAGE + 100, 8, &gpa);
	tap_ok(p == m.base && gpa == 0x100000, "mem: first allocation at region 0");
	p = vfe_mem_alloc(&m, PAGE, 8, &gpa);
	tap_ok(p == m.base + 2 * PAGE && gpa == 0x112000,
		"mem: an allocation that does not fit skips to the next region");
	tap_ok(vfe_mem_alloc(&m, 2 * PAGE, 8, NULL) == NULL, "mem: full");
	vfe_mem_fini(&m);

	conf.gap = 0;
	tap_ok(vfe_mem_init(&m, &conf) == 0 &&
		vfe_mem_ptr(&m, 0x100000 + 2 * PAGE - 8, 16) == m.base + 2 * PAGE - 8,
		"mem: adjacent regions give one pointer across the boundary");
	vfe_mem_fini(&m);
	conf.size = 3 * PAGE;
	tap_ok(vfe_mem_init(&m, &conf) == -EINVAL, "mem: size not divisible into regions");
}

/* Play the device: complete the next avail entry with @p len bytes. */
static void
device_use(struct vfe_vq *vq, uint16_t *dev_avail, uint32_t id, uint32_t len)
{
	struct vring_used_elem *e = &vq->used->ring[vq->used->idx & (vq->num - 1)];

	(*dev_avail)++;
	e->id = id;
	e->len = len;
	__atomic_store_n(&vq->used->idx, vq->used->idx + 1, __ATOMIC_RELEASE);
}

static void
test_vq(void)
{
	struct vfe_mem_conf conf = { .size = 16 * PAGE };
	struct vfe_buf bufs[3];
	struct vfe_mem m;
	struct vfe_vq vq;
	struct vring_desc *t;
	uint16_t dev_avail = 65534;
	uint32_t len;
	void *cookie;
	int head, h2, i;

	vfe_mem_init(&m, &conf);
	tap_ok(vfe_vq_init(&vq, &m, 8, 65534, 4) == 0, "vq: ring of 8 starting at 65534");
	tap_ok(vq.avail->idx == 65534 && vq.used->idx == 65534 &&
		vfe_mem_ptr(&m, vq.desc_gpa, 16 * 8) == (void *)vq.desc &&
		vq.desc_gpa % PAGE == 0 && vq.used_gpa % 4 == 0,
		"vq: indices and ring addresses");
	vfe_vq_fini(&vq);
	tap_ok(vfe_vq_init(&vq, &m, 6, 0, 0) == -EINVAL, "vq: size must be a power of 2");
	vfe_vq_init(&vq, &m, 8, 65534, 4);

	bufs[0] = (struct vfe_buf){ .gpa = 0x1000, .len = 44 };
	bufs[1] = (struct vfe_buf){ .gpa = 0x2000, .len = 100 };
	bufs[2] = (struct vfe_buf){ .gpa = 0x3000, .len = 4096, .writable = true };
	head = vfe_vq_add(&vq, bufs, 3, &vq);
	tap_ok(head == 0 && vq.num_free == 5, "vq: chain of 3 takes descriptors 0..2");
	tap_ok(vq.desc[0].addr == 0x1000 && vq.desc[0].len == 44 &&
		vq.desc[0].flags == VRING_DESC_F_NEXT && vq.desc[0].next == 1 &&
		vq.desc[1].flags == VRING_DESC_F_NEXT && vq.desc[1].next == 2 &&
		vq.desc[2].flags == VRING_DESC_F_WRITE && vq.desc[2].len == 4096,
		"vq: descriptor flags and links");
	tap_ok(vq.avail->idx == 65534 && vq.avail->ring[65534 & 7] == 0,
		"vq: avail entry written, index not yet published");
	vfe_vq_publish(&vq);
	tap_ok(vq.avail->idx == 65535, "vq: published");

	h2 = vfe_vq_add_indirect(&vq, bufs, 2, NULL);
	t = vq.indirect + h2 * 4;
	tap_ok(h2 == 3 && vq.desc[3].flags == VRING_DESC_F_INDIRECT && vq.desc[3].len == 32 &&
		vfe_mem_ptr(&m, vq.desc[3].addr, 32) == (void *)t &&
		t[0].flags == VRING_DESC_F_NEXT && t[0].next == 1 && t[1].flags == 0 &&
		t[1].addr == 0x2000, "vq: indirect table of 2 in one descriptor");
	tap_ok(vfe_vq_add_indirect(&vq, bufs, 5, NULL) == -EINVAL, "vq: indirect table too long");
	vfe_vq_publish(&vq);
	tap_ok(vq.avail->idx == 0 && vq.avail->ring[65535 & 7] == 3, "vq: avail index wraps");

	tap_ok(vfe_vq_get_used(&vq, &len, &cookie) == -EAGAIN && vfe_vq_used_pending(&vq) == 0,
		"vq: nothing used yet");
	device_use(&vq, &dev_avail, 0, 4096);
	cookie = NULL;
	tap_ok(vfe_vq_used_pending(&vq) == 1 && vfe_vq_get_used(&vq, &len, &cookie) == 0 &&
		len == 4096 && cookie == &vq && vq.num_free == 7,
		"vq: used chain returned with its length and cookie, descriptors freed");
	device_use(&vq, &dev_avail, 7, 1);
	tap_ok(vfe_vq_get_used(&vq, &len, NULL) == -EIO, "vq: id not in flight is reported");
	device_use(&vq, &dev_avail, 3, 0);
	tap_ok(vfe_vq_get_used(&vq, &len, NULL) == 3 && vq.num_free == 8,
		"vq: indirect chain freed");

	for (i = 0; i < 8; i++)
		if (vfe_vq_add(&vq, bufs, 1, NULL) < 0)
			break;
	tap_ok(i == 8 && vfe_vq_add(&vq, bufs, 1, NULL) == -ENOSPC &&
		vfe_vq_add_indirect(&vq, bufs, 1, NULL) == -ENOSPC, "vq: full after 8 heads");

	/* EVENT_IDX: the device asks for a kick when avail passes avail_event. */
	vq.event_idx = true;
	vfe_vq_publish(&vq);
	memcpy(&vq.used->ring[8], &(uint16_t){ 2 }, 2);
	vq.kicked_avail = 5;
	tap_ok(!vfe_vq_kick_needed(&vq) && vq.kicked_avail == 8,
		"vq: batch 5..8 after avail_event 2: no kick");
	memcpy(&vq.used->ring[8], &(uint16_t){ 8 }, 2);
	vq.avail_idx++;
	tap_ok(vfe_vq_kick_needed(&vq) && vfe_vq_avail_event(&vq) == 8,
		"vq: batch 8..9 crossing avail_event 8 needs a kick");
	tap_ok(vfe_vq_kick(&vq) == 0 && vfe_vq_calls(&vq) == 0, "vq: kick, no call pending");
	tap_ok(write(vq.call_fd, &(uint64_t){ 2 }, 8) == 8 && vfe_vq_calls(&vq) == 2 &&
		vfe_vq_calls(&vq) == 0, "vq: calls counted and drained");
	tap_ok(vfe_vq_wait_call(&vq, 10) == -ETIMEDOUT, "vq: no call, wait times out");
	tap_ok(write(vq.call_fd, &(uint64_t){ 1 }, 8) == 8 && vfe_vq_wait_call(&vq, 10) == 0 &&
		vfe_vq_calls(&vq) == 0, "vq: waiting consumes the call");
	device_use(&vq, &dev_avail, 4, 0);
	vfe_vq_get_used(&vq, NULL, NULL);
	tap_ok(vq.avail->ring[8] == vq.last_used, "vq: used_event follows consumption");
	vfe_vq_set_no_interrupt(&vq, true);
	tap_ok(vq.avail->flags == VRING_AVAIL_F_NO_INTERRUPT, "vq: NO_INTERRUPT flag");
	vfe_vq_fini(&vq);
	vfe_mem_fini(&m);
}

static void
test_vsock_hdr(void)
{
	static const uint8_t want[44] = {
		3, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,
		0x34, 0x12, 0, 0, 0x78, 0x56, 0, 0, 10, 0, 0, 0,
		1, 0, 5, 0, 3, 0, 0, 0, 0, 0, 4, 0, 0x10, 0, 0, 0,
	};
	struct vfe_vsock_pkt pkt = {
		.src_cid = 3, .dst_cid = 2, .src_port = 0x1234, .dst_port = 0x5678, .len = 10,
		.type = VIRTIO_VSOCK_TYPE_STREAM, .op = VIRTIO_VSOCK_OP_RW,
		.flags = VIRTIO_VSOCK_SEQ_EOM | VIRTIO_VSOCK_SEQ_EOR,
		.buf_alloc = 0x40000, .fwd_cnt = 16,
	};
	struct virtio_vsock_hdr h;
	struct vfe_vsock_pkt back;

	vfe_vsock_build(&h, &pkt);
	tap_ok(sizeof(h) == 44 && memcmp(&h, want, 44) == 0, "vsock: header bytes");
	/* The fields only: the struct's tail padding holds whatever the stack had. */
	tap_ok(vfe_vsock_parse(&h, sizeof(h), &back) == 0 &&
		memcmp(&back, &pkt, offsetof(struct vfe_vsock_pkt, fwd_cnt) +
			sizeof(pkt.fwd_cnt)) == 0,
		"vsock: parse gives the fields back");
	tap_ok(vfe_vsock_parse(&h, 43, &back) == -EINVAL, "vsock: short header refused");
}

/* The backend end of a socketpair answers before the request is even sent. */
static void
test_conn(void)
{
	struct vfe_mem_conf mconf = { .size = 4 * PAGE, .nregions = 2, .gap = PAGE };
	struct vfe_conn c = { .reply_timeout_ms = 200 };
	struct vfe_msg m, r;
	union {
		char buf[CMSG_SPACE(sizeof(int) * 8)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = &r, .iov_len = sizeof(r) };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
		.msg_controllen = sizeof(ctl.buf),
	};
	struct vfe_mem mem;
	uint64_t cid = 0, start;
	ssize_t n;
	int sv[2];

	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	c.fd = sv[0];

	m = (struct vfe_msg){ .request = VFE_REQ_GET_CONFIG, .flags = 5, .size = 20 };
	m.p.config.size = 8;
	m.p.config.data[0] = 42;
	write(sv[1], &m, 12 + 20);
	tap_ok(vfe_get_config_cid(&c, &cid) == 0 && cid == 42, "conn: GET_CONFIG cid");
	n = read(sv[1], &r, sizeof(r));
	tap_ok(n == 32 && r.request == 24 && r.flags == 1 && r.size == 20 &&
		r.p.config.offset == 0 && r.p.config.size == 8, "conn: GET_CONFIG request bytes");

	m.size = 12;
	write(sv[1], &m, 12 + 12);
	tap_ok(vfe_get_config_cid(&c, &cid) == -EPROTO && strstr(c.err, "size 12") != NULL,
		"conn: short GET_CONFIG reply refused (%s)", c.err);
	read(sv[1], &r, sizeof(r));

	m = (struct vfe_msg){ .request = VFE_REQ_GET_FEATURES, .flags = 1, .size = 8 };
	write(sv[1], &m, 12 + 8);
	tap_ok(vfe_get_features(&c, &cid) == -EPROTO && strstr(c.err, "flags") != NULL,
		"conn: reply without the reply flag refused");
	read(sv[1], &r, sizeof(r));

	start = 0;
	tap_ok(vfe_get_features(&c, &start) == -ETIMEDOUT, "conn: no reply times out");
	read(sv[1], &r, sizeof(r));

	vfe_mem_init(&mem, &mconf);
	tap_ok(vfe_set_mem_table(&c, &mem) == 0, "conn: SET_MEM_TABLE sent");
	n = recvmsg(sv[1], &mh, 0);
	tap_ok(n == 12 + 8 + 64 && r.request == 5 && r.size == 72 && r.p.mem.nregions == 2 &&
		r.p.mem.region[1].gpa == 3 * PAGE && r.p.mem.region[1].mmap_offset == 2 * PAGE &&
		r.p.mem.region[1].uaddr == (uintptr_t)mem.base + 2 * PAGE &&
		CMSG_FIRSTHDR(&mh) != NULL && CMSG_FIRSTHDR(&mh)->cmsg_len == CMSG_LEN(8),
		"conn: SET_MEM_TABLE carries 2 regions and 2 fds");
	close(((int *)CMSG_DATA(CMSG_FIRSTHDR(&mh)))[0]);
	close(((int *)CMSG_DATA(CMSG_FIRSTHDR(&mh)))[1]);
	vfe_mem_fini(&mem);

	/* With REPLY_ACK a failure reported by the backend becomes -EIO. */
	c.protocol_features = 1ULL << VFE_PROTOCOL_F_REPLY_ACK;
	m = (struct vfe_msg){
		.request = VFE_REQ_SET_VRING_ENABLE, .flags = 5, .size = 8, .p.u64 = 1,
	};
	write(sv[1], &m, 12 + 8);
	tap_ok(vfe_set_vring_enable(&c, 1, true) == -EIO, "conn: REPLY_ACK failure");
	n = read(sv[1], &r, sizeof(r));
	tap_ok(n == 20 && r.flags == (VFE_MSG_VERSION | VFE_MSG_NEED_REPLY) &&
		r.p.state.index == 1 && r.p.state.num == 1, "conn: NEED_REPLY set when negotiated");

	shutdown(sv[1], SHUT_WR);
	tap_ok(vfe_get_features(&c, &cid) == -ECONNRESET && strstr(c.err, "closed") != NULL,
		"conn: backend hung up before replying (%s)", c.err);
	close(sv[1]);
	tap_ok(vfe_get_features(&c, &cid) == -EPIPE, "conn: send to a closed backend");
	vfe_conn_close(&c);

	tap_ok(vfe_conn_open(&c, "/tmp/vfe-no-such-socket", 50) == -ENOENT,
		"conn: missing socket after the timeout");
}

/* VFE_RING is read in one place; attach refuses a value it does not know before connecting. */
static void
test_ring_env(void)
{
	struct vfe_vsock_conf conf = { .connect_timeout_ms = 50 };
	struct vfe_vsock v;

	unsetenv(VFE_RING_ENV);
	tap_ok(vfe_ring_env() == 0, "ring env: unset means split");
	setenv(VFE_RING_ENV, "", 1);
	tap_ok(vfe_ring_env() == 0, "ring env: empty means split");
	setenv(VFE_RING_ENV, "split", 1);
	tap_ok(vfe_ring_env() == 0, "ring env: split");
	setenv(VFE_RING_ENV, "packed", 1);
	tap_ok(vfe_ring_env() == 1, "ring env: packed");
	setenv(VFE_RING_ENV, "Packed", 1);
	tap_ok(vfe_ring_env() == -EINVAL, "ring env: anything else refused");
	tap_ok(vfe_vsock_attach(&v, "/tmp/vfe-no-such-socket", &conf) == -EINVAL &&
		strstr(v.conn.err, VFE_RING_ENV) != NULL,
		"ring env: attach refuses it (%s)", v.conn.err);
	conf.ring_fixed = true;
	tap_ok(vfe_vsock_attach(&v, "/tmp/vfe-no-such-socket", &conf) == -ENOENT,
		"ring env: not read with ring_fixed (the missing socket is what fails)");
	unsetenv(VFE_RING_ENV);
}

int
main(void)
{
	test_mem();
	test_vq();
	test_vsock_hdr();
	test_conn();
	test_ring_env();
	return tap_done();
}
