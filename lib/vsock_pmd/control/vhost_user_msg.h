/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The few vhost-user message layouts we read in pre_msg_handle. DPDK keeps
 * its own definition in an uninstalled header, so these follow the protocol
 * text (QEMU docs/interop/vhost-user.rst) rather than DPDK's struct.
 */
#ifndef VSOCK_PMD_VHOST_USER_MSG_H
#define VSOCK_PMD_VHOST_USER_MSG_H

#include <stddef.h>
#include <stdint.h>

#define VHOST_USER_SET_MEM_TABLE 5
#define VHOST_USER_SET_VRING_NUM 8
#define VHOST_USER_SET_VRING_ADDR 9
#define VHOST_USER_SET_VRING_BASE 10
#define VHOST_USER_SET_VRING_KICK 12
#define VHOST_USER_GET_CONFIG 24

#define VHOST_USER_PROTOCOL_F_CONFIG 9

/* Largest device configuration space a frontend may ask about. */
#define VHOST_USER_MAX_CONFIG_SIZE 256

struct vhost_user_config {
	uint32_t offset;
	uint32_t size;
	uint32_t flags;
	uint8_t region[VHOST_USER_MAX_CONFIG_SIZE];
};

#define VHOST_USER_CONFIG_HDR_SIZE offsetof(struct vhost_user_config, region)

struct vhost_user_msg {
	uint32_t request;
	uint32_t flags;
	uint32_t size;	/* payload bytes that follow */
	union {
		uint64_t u64;
		struct {
			uint32_t index;
			uint32_t num;
		} state;	/* SET_VRING_NUM, SET_VRING_BASE */
		struct vhost_user_config config;
	} payload;
} __attribute__((packed));

#endif /* VSOCK_PMD_VHOST_USER_MSG_H */
