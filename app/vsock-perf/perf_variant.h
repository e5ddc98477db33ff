/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A variant's run (perf_variant.c): its backend started (the app, or the engine in this
 * process), the frontend attached, every case of the plan on it, the backend stopped; and
 * the steps of that which the other parts take too.
 */
#ifndef APP_VSOCK_PERF_PERF_VARIANT_H
#define APP_VSOCK_PERF_PERF_VARIANT_H

#include <stdbool.h>
#include <stddef.h>

struct dp_env;
struct perf_run;
struct vfe_guest_conf;

/* Every case of the plan on variant @p v, repetition @p rep; whether the backend stopped well. */
bool perf_run_variant(struct perf_run *run, unsigned int v, unsigned int rep);
/*
 * The frontend and its guest driver on @p e's socket, with ring layout @p packed. 0, or
 * -errno with @p err set.
 */
int perf_attach(struct perf_run *run, struct dp_env *e, bool packed,
		const struct vfe_guest_conf *gc, char *err, size_t len);
/* Whether the engine polls the guest of VM @p cid. */
bool perf_vm_running(struct perf_run *run, unsigned int cid);
/* No interrupts for a polling guest (unless --guest-irq). */
void perf_guest_polling(const struct perf_run *run, struct dp_env *e);

#endif /* APP_VSOCK_PERF_PERF_VARIANT_H */
