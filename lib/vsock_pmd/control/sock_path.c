/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The files of a VM's Unix sockets. A socket is bound while the umask lets only its owner
 * (this process's user) connect, and is given its group and mode right after, so nobody
 * else can connect before it has them. The umask is the process's: a file another thread
 * creates in that window comes out narrower, never wider.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vsock_pmd.h>

#include "ep_uds.h"
#include "log.h"
#include "sock_path.h"

int vm_sock_clear_stale(const struct vsock_pmd_vm_conf *vm, const char *key, const char *path)
{
	int rc = ep_uds_clear_stale(path);

	if (rc == -EEXIST)
		VSOCK_LOG(ERR, "VM cid %" PRIu64 ": %s path %s exists and is not a socket: it is "
			  "left as it is; remove it or choose another path", vm->cid, key, path);
	else if (rc < 0)
		VSOCK_LOG(ERR, "VM cid %" PRIu64 ": cannot clear %s path %s: %s", vm->cid, key,
			  path, strerror(-rc));
	return rc;
}

mode_t vm_sock_perm_begin(const struct vsock_pmd_vm_conf *vm)
{
	return vm->socket_mode || vm->socket_group_set ? umask(0177) : 0;
}

int vm_sock_perm_end(const struct vsock_pmd_vm_conf *vm, const char *path, mode_t old_umask)
{
	int rc = 0;

	if (!vm->socket_mode && !vm->socket_group_set)
		return 0;
	umask(old_umask);
	if (path == NULL)
		return 0;
	if ((vm->socket_group_set && chown(path, (uid_t)-1, (gid_t)vm->socket_gid) < 0) ||
	    chmod(path, vm->socket_mode ? (mode_t)vm->socket_mode : 0777 & ~old_umask) < 0) {
		rc = -errno;
		VSOCK_LOG(ERR, "VM cid %" PRIu64 ": cannot give %s mode %04o, group %d: %s",
			  vm->cid, path, vm->socket_mode, vm->socket_group_set ?
			  (int)vm->socket_gid : -1, strerror(-rc));
	}
	return rc;
}
