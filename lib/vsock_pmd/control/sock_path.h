/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_SOCK_PATH_H
#define VSOCK_PMD_SOCK_PATH_H

/*
 * The files of a VM's Unix sockets (its vhost-user socket, its hybrid vsock listener): a
 * stale one cleared before the bind, the configured mode and group given after it.
 */

#include <sys/types.h>

struct vsock_pmd_vm_conf;

/**
 * Before a socket of @p vm is bound at @p path: a stale socket from a crash goes (the app's
 * validation refused live ones), anything else there stays and is refused by name (@p key,
 * the option that named the path). @return 0 or a negative errno, logged.
 */
int vm_sock_clear_stale(const struct vsock_pmd_vm_conf *vm, const char *key, const char *path);

/**
 * socket-mode= and socket-group=: call before binding a socket of @p vm, and
 * vm_sock_perm_end() with what it returns right after. @return the umask to restore.
 */
mode_t vm_sock_perm_begin(const struct vsock_pmd_vm_conf *vm);

/**
 * Restore @p old_umask and give the socket at @p path (NULL when the bind failed: the umask
 * only) @p vm's mode and group. @return 0 or a negative errno, logged.
 */
int vm_sock_perm_end(const struct vsock_pmd_vm_conf *vm, const char *path, mode_t old_umask);

#endif /* VSOCK_PMD_SOCK_PATH_H */
