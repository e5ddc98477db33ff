/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Guest memory: one memfd mapped once in this process. The vhost-user
 * regions are consecutive slices of it, so this process sees them as one
 * contiguous block while the backend maps each region on its own, exactly
 * where guest-physical contiguity ends.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vfe.h"

#define VFE_MEM_DEFAULT_SIZE (8u << 20)

int vfe_mem_init(struct vfe_mem *m, const struct vfe_mem_conf *conf)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t size = conf->size ? conf->size : VFE_MEM_DEFAULT_SIZE;
	unsigned int n = conf->nregions ? conf->nregions : 1;
	size_t rsize = size / n;
	unsigned int i;
	int rc;

	memset(m, 0, sizeof(*m));
	m->fd = -1;
	if (n > VFE_MAX_REGIONS || rsize == 0 || rsize % page != 0 || rsize * n != size)
		return -EINVAL;

	m->fd = memfd_create("vfe-guest", MFD_CLOEXEC);
	if (m->fd < 0)
		return -errno;
	if (ftruncate(m->fd, (off_t)size) < 0) {
		rc = -errno;
		goto err;
	}
	m->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, 0);
	if (m->base == MAP_FAILED) {
		rc = -errno;
		m->base = NULL;
		goto err;
	}
	m->size = size;
	m->nregions = n;
	for (i = 0; i < n; i++) {
		m->region[i].gpa = conf->gpa_base + i * (rsize + conf->gap);
		m->region[i].size = rsize;
		m->region[i].offset = i * rsize;
	}
	return 0;
err:
	close(m->fd);
	m->fd = -1;
	return rc;
}

void vfe_mem_fini(struct vfe_mem *m)
{
	if (m->base != NULL)
		munmap(m->base, m->size);
	if (m->fd >= 0)
		close(m->fd);
	m->base = NULL;
	m->fd = -1;
	m->nregions = 0;
}

static const struct vfe_mem_region *region_of_gpa(const struct vfe_mem *m, uint64_t gpa)
{
	unsigned int i;

	for (i = 0; i < m->nregions; i++)
		if (gpa >= m->region[i].gpa && gpa - m->region[i].gpa < m->region[i].size)
			return &m->region[i];
	return NULL;
}

void *vfe_mem_ptr(const struct vfe_mem *m, uint64_t gpa, size_t len)
{
	const struct vfe_mem_region *first = region_of_gpa(m, gpa);
	const struct vfe_mem_region *r = first;
	uint64_t left = len;
	uint64_t cur = gpa;

	if (first == NULL)
		return NULL;
	/* Follow guest-physically adjacent regions; they are adjacent here too. */
	while (r != NULL && left > r->gpa + r->size - cur) {
		left -= r->gpa + r->size - cur;
		cur = r->gpa + r->size;
		r = region_of_gpa(m, cur);
	}
	if (r == NULL)
		return NULL;
	return m->base + first->offset + (gpa - first->gpa);
}

uint64_t vfe_mem_gpa(const struct vfe_mem *m, const void *p)
{
	uintptr_t off = (uintptr_t)p - (uintptr_t)m->base;
	unsigned int i;

	for (i = 0; i < m->nregions; i++)
		if (off >= m->region[i].offset && off - m->region[i].offset < m->region[i].size)
			return m->region[i].gpa + (off - m->region[i].offset);
	return UINT64_MAX;
}

void *vfe_mem_alloc(struct vfe_mem *m, size_t len, size_t align, uint64_t *gpa)
{
	size_t off = m->brk;
	unsigned int i;

	if (align == 0 || (align & (align - 1)) != 0)
		return NULL;
	for (i = 0; i < m->nregions; i++) {
		const struct vfe_mem_region *r = &m->region[i];
		size_t end = r->offset + r->size;

		if (off >= end)
			continue;
		if (off < r->offset)
			off = r->offset;
		off = (off + align - 1) & ~(align - 1);
		if (off < end && len <= end - off) {
			m->brk = off + len;
			memset(m->base + off, 0, len);
			if (gpa != NULL)
				*gpa = r->gpa + (off - r->offset);
			return m->base + off;
		}
	}
	return NULL;
}
