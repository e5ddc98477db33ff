/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vsock-cid: print the guest's own vsock CID as "CID <n>"; exit 0 when it is
 * a guest CID (> 2), else 1 with the reason on stderr.
 * The CID is what the vhost-user backend answered to GET_CONFIG, so this is
 * the first end-to-end check of a device.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/vm_sockets.h>

int main(void)
{
	unsigned int cid = 0;
	int fd;

	fd = open("/dev/vsock", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "vsock-cid: open /dev/vsock: %s\n", strerror(errno));
		return 1;
	}
	if (ioctl(fd, IOCTL_VM_SOCKETS_GET_LOCAL_CID, &cid) < 0) {
		fprintf(stderr, "vsock-cid: IOCTL_VM_SOCKETS_GET_LOCAL_CID: %s\n",
			strerror(errno));
		close(fd);
		return 1;
	}
	close(fd);
	printf("CID %u\n", cid);
	/*
	 * Without a virtio device the core reports the loopback transport's
	 * CID 1, or VMADDR_CID_ANY when there is none: never a guest's CID.
	 */
	if (cid <= VMADDR_CID_HOST || cid == VMADDR_CID_ANY) {
		fprintf(stderr, "vsock-cid: no guest transport\n");
		return 1;
	}
	return 0;
}
