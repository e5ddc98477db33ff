/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * app/vsock-native-example as a guest sees it: started as a separate process ($VSOCK_APP
 * names its binary), the userspace frontend as the guest. Echo: bytes and seqpacket
 * messages come back intact, on many connections at once.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <linux/virtio_vsock.h>

#include "app_proc.h"
#include "poll_wait.h"
#include "tap.h"
#include "vfe.h"
#include "vfe_guest.h"

#define PORT 7000
#define N 16
#define BYTES 200000
#define MS 10000

static struct vfe_vsock v;
static struct vfe_guest g;
static uint8_t pat[BYTES], got[N][BYTES];

int main(void)
{
	static const struct vfe_vsock_conf vc = { .mem = { .size = 32u << 20 } };
	struct vfe_guest_conn *c[N];
	size_t sent[N] = { 0 }, rcvd[N] = { 0 };
	char vm[300], sock[128], port[16];
	const char *socks[2] = { sock, NULL };
	struct app_proc p;
	unsigned int i, good = 0;
	uint64_t end;
	int status;

	for (i = 0; i < BYTES; i++)
		pat[i] = (uint8_t)(i * 17 + (i >> 10));
	if (app_proc_init(&p) < 0)
		return tap_ok(0, "run directory"), tap_done();
	app_proc_path(&p, "vm3.sock", sock, sizeof(sock));
	snprintf(vm, sizeof(vm), "cid=3,socket=%s/vm3.sock,uds=%s/vm3.vsock", p.dir, p.dir);
	snprintf(port, sizeof(port), "%u", PORT);
	if (!tap_ok(app_proc_start(&p, NULL, (const char *[]){ "--vm", vm, "--port", port,
			"--mode", "echo", NULL }, socks, 10000) == 0, "example started (echo)") ||
	    !tap_ok(vfe_vsock_attach(&v, sock, &vc) == 0 && vfe_guest_init(&g, &v, NULL) == 0,
		    "guest attached")) {
		app_proc_fini(&p);
		return tap_done();
	}
	for (i = 0; i < N; i++)
		c[i] = vfe_guest_connect(&g, PORT, i % 2 ? VIRTIO_VSOCK_TYPE_SEQPACKET :
					 VIRTIO_VSOCK_TYPE_STREAM);
	/* Stream connections send 200 KB; seqpacket ones 100 messages of 2000 bytes. */
	end = now_ms() + MS * 3;
	while (now_ms() < end && good < N) {
		vfe_guest_poll(&g);
		good = 0;
		for (i = 0; i < N; i++) {
			if (!c[i] || c[i]->state != VFE_GC_ESTABLISHED)
				continue;
			if (i % 2 == 0 && sent[i] < BYTES) {
				long n = vfe_guest_send(&g, c[i], pat + sent[i], BYTES - sent[i]);

				sent[i] += n > 0 ? (size_t)n : 0;
			} else if (i % 2 && sent[i] < BYTES &&
				   vfe_guest_send_msg(&g, c[i], pat + sent[i], 2000) == 1) {
				sent[i] += 2000;
			}
			if (i % 2) {
				uint32_t fl;
				long len = vfe_guest_next_msg(c[i], &fl);

				if (len == 2000)
					rcvd[i] += vfe_guest_recv(&g, c[i], got[i] + rcvd[i], 2000);
				else if (len >= 0)
					vfe_guest_recv(&g, c[i], NULL, (size_t)len);
			} else {
				rcvd[i] += vfe_guest_recv(&g, c[i], got[i] + rcvd[i],
							  BYTES - rcvd[i]);
			}
			good += rcvd[i] == BYTES && memcmp(got[i], pat, BYTES) == 0;
		}
	}
	tap_ok(good == N, "%u of %d connections (half seqpacket, 2000-byte messages) echo "
	       "200 KB intact", good, N);
	tap_ok(g.errors == 0, "every packet follows the protocol (%s)", g.err);
	vfe_vsock_detach(&v, NULL, false);
	vfe_guest_fini(&g);
	vfe_vsock_close(&v);
	status = app_proc_stop(&p, 5000);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "example exits 0 on SIGTERM (%#x)", status);
	if (tap_failed)
		app_proc_dump_log(&p);
	app_proc_fini(&p);
	return tap_done();
}
