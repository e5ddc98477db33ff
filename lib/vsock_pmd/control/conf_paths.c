/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rule that keeps one VM's sockets out of another's reach. A guest connecting to host
 * port P reaches "<uds>_<P>": a path of any VM (its own included) that is a uds path followed
 * by '_' and digits is where that guest would land, and two equal paths are one socket for
 * two jobs. Both are refused before anything is created.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vsock_pmd.h>

/* One socket path of the configuration, with its directory resolved. */
struct conf_path {
	unsigned int vm;	/* index in the configuration */
	uint64_t cid;
	const char *key;	/* "socket" or "uds" */
	const char *given;
	/* realpath() of the directory, then '/' and the last component. */
	char resolved[PATH_MAX + VSOCK_PMD_PATH_MAX + 2];
};

/*
 * /r/./v, /r//v and /link-to-r/v are one file, and so are v and /r/v run from /r. A directory
 * that cannot be resolved (it does not exist: the app refuses that afterwards) is compared
 * as written.
 */
static void path_resolve(struct conf_path *p)
{
	const char *slash = strrchr(p->given, '/');
	char dir[VSOCK_PMD_PATH_MAX + 1], real[PATH_MAX];

	if (!slash)
		strcpy(dir, ".");
	else if (slash == p->given)
		strcpy(dir, "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - p->given), p->given);
	if (realpath(dir, real) == NULL) {
		snprintf(p->resolved, sizeof(p->resolved), "%s", p->given);
		return;
	}
	snprintf(p->resolved, sizeof(p->resolved), "%s/%s", strcmp(real, "/") ? real : "",
		 slash ? slash + 1 : p->given);
}

/* Whether @p p is @p uds followed by '_' and digits: where that VM's guest reaches a port. */
static bool reached_by(const struct conf_path *p, const struct conf_path *uds)
{
	size_t n = strlen(uds->resolved);
	const char *d = p->resolved + n + 1;

	return strcmp(uds->key, "uds") == 0 && strncmp(p->resolved, uds->resolved, n) == 0 &&
	       p->resolved[n] == '_' && *d != '\0' && d[strspn(d, "0123456789")] == '\0';
}

static int overlap_check(const struct conf_path *p, const struct conf_path *uds, char *err,
			 size_t err_len)
{
	if (!reached_by(p, uds))
		return 0;
	snprintf(err, err_len, "VM cid %" PRIu64 " %s= '%s' is VM cid %" PRIu64 "'s uds= '%s' "
		 "followed by _%s, a path VM cid %" PRIu64 "'s guest reaches as a host port: no "
		 "VM's path may be a uds path (its own VM's included) followed by _ and digits",
		 p->cid, p->key, p->given, uds->cid, uds->given,
		 p->resolved + strlen(uds->resolved) + 1, uds->cid);
	return -EINVAL;
}

static int pair_check(const struct conf_path *a, const struct conf_path *b, char *err,
		      size_t err_len)
{
	int rc;

	if (strcmp(a->resolved, b->resolved) == 0) {
		if (a->vm == b->vm)
			snprintf(err, err_len, "VM cid %" PRIu64 ": its socket= '%s' and uds= "
				 "'%s' are the same path", a->cid, a->given, b->given);
		else
			snprintf(err, err_len, "VM cid %" PRIu64 " %s= '%s' and VM cid %" PRIu64
				 " %s= '%s' are the same path", a->cid, a->key, a->given, b->cid,
				 b->key, b->given);
		return -EINVAL;
	}
	rc = overlap_check(a, b, err, err_len);
	return rc < 0 ? rc : overlap_check(b, a, err, err_len);
}

int vsock_pmd_conf_check_paths(const struct vsock_pmd_conf *conf, char *err, size_t err_len)
{
	unsigned int n = 0, i, j;
	struct conf_path *p;
	int rc = 0;

	if (conf->nb_vms > VSOCK_PMD_MAX_VMS) {
		snprintf(err, err_len, "more than %d VMs", VSOCK_PMD_MAX_VMS);
		return -EINVAL;
	}
	p = calloc(2 * (size_t)conf->nb_vms + 1, sizeof(*p));
	if (!p) {
		snprintf(err, err_len, "no memory to compare the VMs' paths");
		return -ENOMEM;
	}
	for (i = 0; i < conf->nb_vms; i++) {
		const struct vsock_pmd_vm_conf *vm = &conf->vms[i];

		p[n++] = (struct conf_path){ .vm = i, .cid = vm->cid, .key = "socket",
					     .given = vm->socket_path };
		p[n++] = (struct conf_path){ .vm = i, .cid = vm->cid, .key = "uds",
					     .given = vm->uds_path };
	}
	for (i = 0; i < n; i++)
		path_resolve(&p[i]);
	for (i = 0; i < n && rc == 0; i++) {
		for (j = i + 1; j < n && rc == 0; j++)
			rc = pair_check(&p[i], &p[j], err, err_len);
	}
	free(p);
	return rc;
}
