/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A vhost-user-vsock device driven the way QEMU 7.2 drives it
 * (hw/virtio/vhost-user-vsock.c, hw/virtio/vhost.c), plus the packet header.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vfe.h"

#define VFE_VSOCK_RING_SIZE 128
#define VFE_VSOCK_CONNECT_MS 5000

static int fail(struct vfe_vsock *v, int rc, const char *what)
{
	snprintf(v->conn.err, sizeof(v->conn.err), "%s", what);
	return rc;
}

static int handshake(struct vfe_vsock *v, const struct vfe_vsock_conf *conf)
{
	struct vfe_conn *c = &v->conn;
	uint64_t want = conf->driver_features ? conf->driver_features : VFE_VSOCK_DRIVER_FEATURES;
	uint64_t want_pf = conf->protocol_features ? conf->protocol_features :
		VFE_VSOCK_PROTOCOL_FEATURES;
	int rc;

	if (conf->packed)
		want |= 1ULL << VIRTIO_F_RING_PACKED;
	rc = vfe_get_features(c, &v->device_features);
	if (rc < 0)
		return rc;
	v->features = v->device_features & want;
	if (v->device_features & (1ULL << VFE_F_PROTOCOL_FEATURES)) {
		/* Not a virtio bit: QEMU acks it whenever the backend offers it. */
		v->features |= 1ULL << VFE_F_PROTOCOL_FEATURES;
		rc = vfe_get_protocol_features(c, &v->device_protocol_features);
		if (rc < 0)
			return rc;
		v->protocol_features = v->device_protocol_features & want_pf;
		rc = vfe_set_protocol_features(c, v->protocol_features);
		if (rc < 0)
			return rc;
	}
	rc = vfe_set_owner(c);
	if (rc < 0)
		return rc;
	/* QEMU gives up on the device here, with these errors. */
	if (!(v->features & (1ULL << VIRTIO_F_VERSION_1)))
		return fail(v, -EPROTO, "backend lacks VIRTIO_F_VERSION_1 (no modern mode)");
	if (!(v->protocol_features & (1ULL << VFE_PROTOCOL_F_CONFIG)))
		return fail(v, -EPROTO, "backend lacks VHOST_USER_PROTOCOL_F_CONFIG");
	/* Our rings are laid out already: a backend without packed rings cannot use them. */
	if (conf->packed && !(v->features & (1ULL << VIRTIO_F_RING_PACKED)))
		return fail(v, -EPROTO, "backend lacks VIRTIO_F_RING_PACKED");
	return vfe_get_config_cid(c, &v->cid);
}

int vfe_ring_env(void)
{
	const char *ring = getenv(VFE_RING_ENV);

	if (ring == NULL || ring[0] == '\0' || strcmp(ring, "split") == 0)
		return 0;
	if (strcmp(ring, "packed") == 0)
		return 1;
	return -EINVAL;
}

int vfe_vsock_attach(struct vfe_vsock *v, const char *path, const struct vfe_vsock_conf *conf)
{
	static const struct vfe_vsock_conf defaults;
	struct vfe_vsock_conf c;
	uint16_t ring_size;
	unsigned int q;
	int rc;

	c = conf != NULL ? *conf : defaults;
	conf = &c;
	memset(v, 0, sizeof(*v));
	v->conn.fd = -1;
	v->mem.fd = -1;
	for (q = 0; q < VFE_VSOCK_NQ; q++) {
		v->vq[q].kick_fd = -1;
		v->vq[q].call_fd = -1;
	}
	/* Here, before any ring is laid out: every test attaches through this call. */
	if (!c.packed && !c.ring_fixed) {
		rc = vfe_ring_env();
		if (rc < 0)
			return fail(v, rc, VFE_RING_ENV " is neither split nor packed");
		c.packed = rc == 1;
	}
	ring_size = conf->ring_size ? conf->ring_size : VFE_VSOCK_RING_SIZE;

	rc = vfe_mem_init(&v->mem, &conf->mem);
	for (q = 0; rc == 0 && q < VFE_VSOCK_NQ; q++)
		rc = conf->packed ?
			vfe_vq_init_packed(&v->vq[q], &v->mem, ring_size,
				conf->base[q] ? conf->base[q] : VFE_PACKED_WRAP,
				conf->indirect_max) :
			vfe_vq_init(&v->vq[q], &v->mem, ring_size, conf->base[q],
				conf->indirect_max);
	if (rc == 0)
		rc = vfe_conn_open(&v->conn, path, conf->connect_timeout_ms ?
				conf->connect_timeout_ms : VFE_VSOCK_CONNECT_MS);
	if (rc == 0)
		rc = handshake(v, conf);
	if (rc == 0)
		rc = vfe_vsock_start(v, NULL);
	if (rc < 0)
		vfe_vsock_close(v);
	return rc;
}

int vfe_vsock_start(struct vfe_vsock *v, const uint16_t *base)
{
	struct vfe_conn *c = &v->conn;
	struct vfe_vring_addr addr;
	unsigned int q;
	int rc;

	rc = vfe_set_features(c, v->features);
	if (rc < 0)
		return rc;
	for (q = 0; q < VFE_VSOCK_NQ; q++) {
		struct vfe_vq *vq = &v->vq[q];

		vq->event_idx = v->features & (1ULL << VIRTIO_RING_F_EVENT_IDX);
		/* Packed: a call at the next used descriptor (split did it in vfe_vq_init()). */
		if (vq->packed && vq->event_idx && vq->track_used_event)
			vfe_vq_set_used_event(vq, vq->last_used);
	}
	rc = vfe_set_mem_table(c, &v->mem);
	for (q = 0; rc == 0 && q < VFE_VSOCK_NQ; q++) {
		struct vfe_vq *vq = &v->vq[q];

		vfe_vq_addr(vq, q, &addr);
		rc = vfe_set_vring_num(c, q, vq->num);
		if (rc == 0)
			rc = vfe_set_vring_base(c, q, base != NULL ? base[q] : vfe_vq_base(vq));
		if (rc == 0)
			rc = vfe_set_vring_addr(c, &addr);
		if (rc == 0)
			rc = vfe_set_vring_kick(c, q, vq->kick_fd);
		if (rc == 0)
			rc = vfe_set_vring_call(c, q, vq->call_fd);
	}
	/* Without bit 30 the rings are enabled by their kick fd already. */
	if (!(v->features & (1ULL << VFE_F_PROTOCOL_FEATURES)))
		return rc;
	for (q = 0; rc == 0 && q < VFE_VSOCK_NQ; q++)
		rc = vfe_set_vring_enable(c, q, true);
	return rc;
}

int vfe_vsock_stop(struct vfe_vsock *v, uint16_t *base)
{
	uint32_t b;
	unsigned int q;
	int rc = 0;

	if (v->features & (1ULL << VFE_F_PROTOCOL_FEATURES))
		for (q = 0; rc == 0 && q < VFE_VSOCK_NQ; q++)
			rc = vfe_set_vring_enable(&v->conn, q, false);
	for (q = 0; rc == 0 && q < VFE_VSOCK_NQ; q++) {
		rc = vfe_get_vring_base(&v->conn, q, &b);
		if (rc == 0 && base != NULL)
			base[q] = (uint16_t)b;
	}
	return rc;
}

int vfe_vsock_detach(struct vfe_vsock *v, uint16_t *base, bool keep_conn)
{
	int rc = vfe_vsock_stop(v, base);

	if (!keep_conn)
		vfe_conn_close(&v->conn);
	return rc;
}

void vfe_vsock_close(struct vfe_vsock *v)
{
	unsigned int q;

	vfe_conn_close(&v->conn);
	for (q = 0; q < VFE_VSOCK_NQ; q++)
		vfe_vq_fini(&v->vq[q]);
	vfe_mem_fini(&v->mem);
}

/*
 * The guest driver's codec, written apart from the engine's (base/vsock_pkt.c) on purpose:
 * the tests judge the engine by it (struct vfe_vsock_pkt says why).
 */
void vfe_vsock_build(struct virtio_vsock_hdr *h, const struct vfe_vsock_pkt *pkt)
{
	/* The uapi struct is packed: assign field by field, no pointers into it. */
	h->src_cid = htole64(pkt->src_cid);
	h->dst_cid = htole64(pkt->dst_cid);
	h->src_port = htole32(pkt->src_port);
	h->dst_port = htole32(pkt->dst_port);
	h->len = htole32(pkt->len);
	h->type = htole16(pkt->type);
	h->op = htole16(pkt->op);
	h->flags = htole32(pkt->flags);
	h->buf_alloc = htole32(pkt->buf_alloc);
	h->fwd_cnt = htole32(pkt->fwd_cnt);
}

int vfe_vsock_parse(const void *buf, size_t len, struct vfe_vsock_pkt *pkt)
{
	struct virtio_vsock_hdr h;

	if (len < sizeof(h))
		return -EINVAL;
	memcpy(&h, buf, sizeof(h));
	pkt->src_cid = le64toh(h.src_cid);
	pkt->dst_cid = le64toh(h.dst_cid);
	pkt->src_port = le32toh(h.src_port);
	pkt->dst_port = le32toh(h.dst_port);
	pkt->len = le32toh(h.len);
	pkt->type = le16toh(h.type);
	pkt->op = le16toh(h.op);
	pkt->flags = le32toh(h.flags);
	pkt->buf_alloc = le32toh(h.buf_alloc);
	pkt->fwd_cnt = le32toh(h.fwd_cnt);
	return 0;
}
