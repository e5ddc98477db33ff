#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# Restart the app under a running guest with no guest cooperation: the app is
# killed (SIGKILL) and started again, then scripts/vsock-replug.py unplugs and
# plugs the vsock device through QEMU's QMP (doc/beyond-the-peers.md). Once as
# a vhost-user server (the default), once as a client of QEMU (client=1).
#
# For each: a first transfer through the first app; a connection the guest
# holds open across the restart is reset (ECONNRESET) instead of hanging; the
# replug succeeds; the guest, in the same boot, reads its CID again and sends
# checked bytes through the new app.
#
# Environment (from tests/qemu/meson.build): VSOCK_APP, GUEST_DIR, RUN_GUEST,
# UDS_IO, REPLUG. Prints TAP.
set -u
. "$(dirname "$0")/lib.sh"

cid=3
bytes=1048576
host_timeout=150

qemu_test_init replug VSOCK_APP GUEST_DIR RUN_GUEST UDS_IO REPLUG

# The guest: a first transfer, a connection held open, then it waits for the
# held connection to end (the unplug) and for the device to be back (the plug).
drv=/sys/bus/virtio/drivers/vmw_vsock_virtio_transport
guest_cmd="vsock-io connect 2 5000 send $bytes; \
vsock-io connect 2 5002 recv >/tmp/held 2>&1 & held=\$!; wait \$held; \
sed 's/^/HELD /' /tmp/held; \
i=0; while ! ls $drv | grep -q virtio && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done; \
vsock-cid; vsock-io --timeout 20 connect 2 5003 send 65536 || echo AFTER-CONNECT-FAILED"

# replug MODE: one guest, one restart of the app, MODE server or client.
replug() {
	mode=$1
	sock=$work/$mode.sock
	uds=$work/$mode.vsock
	qmp=$work/$mode.qmp
	app_args="--vm cid=$cid,socket=$sock,uds=$uds"
	chardev_opts=
	if [ "$mode" = client ]; then
		app_args="$app_args,client=1"
		chardev_opts=",server=on,wait=on"
	fi
	# shellcheck disable=SC2086 # the app's arguments
	start_app -l 0-1 -- $app_args
	if [ "$mode" = server ]; then
		wait_sockets "$mode: the app listens" "$sock"
	else
		wait_sockets "$mode: the app starts" "$uds"
	fi
	hosts=
	host first listen "${uds}_5000" recv
	host held listen "${uds}_5002" recv
	host after listen "${uds}_5003" recv
	VSOCK_CHARDEV_OPTS=$chardev_opts "$RUN_GUEST" -g "$GUEST_DIR" -s "$sock" -q "$qmp" \
		-t 200 -- "$guest_cmd" >"$work/guest.raw" 2>&1 &
	qemu=$!

	wait_for "$qemu" 1200 host_has first RECV
	line=$(host_line first RECV)
	[ "$(field "$line" 2)" = "$bytes" ] && [ "$(field "$line" 8)" = OK ]
	ok $? "$mode: the guest sent $bytes checked bytes through the first app ($line)"
	# The held connection is established once its host end accepted.
	wait_for "$qemu" 300 grep -q "^CONNECTED" "$work/held.out"

	kill -KILL "$app"
	wait "$app" 2>/dev/null
	mv "$work/app.log" "$work/app-$mode-1.log"
	# shellcheck disable=SC2086 # the app's arguments
	start_app -l 0-1 -- $app_args
	# The killed app's socket is still there: do not wait for the new one. The tool
	# retries until the new app listens (or, client=1, connects).
	t0=$(now_ms)
	python3 "$REPLUG" --qmp "$qmp" --device vsock0 --timeout 60 >"$work/replug.out" 2>&1
	rc=$?
	ok $rc "$mode: with the new app starting, vsock-replug.py unplugs and plugs the" \
		"device in $(($(now_ms) - t0)) ms ($(tail -n 1 "$work/replug.out"))"

	wait "$qemu"
	qemu_rc=$?
	qemu=
	tr -d '\r' <"$work/guest.raw" >"$work/guest.log"
	ok $qemu_rc "$mode: QEMU exits 0 (the guest ran through in one boot)"
	line=$(grep "^HELD " "$work/guest.log" | tr '\n' ' ')
	echo "$line" | grep -q "Connection reset by peer"
	ok $? "$mode: the connection held across the restart is reset ($line)"
	grep -q "^CID $cid" "$work/guest.log"
	ok $? "$mode: after the plug the guest reads CID $cid from the new app"
	line=$(host_line after RECV)
	[ "$(field "$line" 2)" = 65536 ] && [ "$(field "$line" 8)" = OK ]
	ok $? "$mode: a new connection carries 65536 checked bytes ($line)"
	if [ $failed -ne 0 ]; then
		diag_file "replug" "$work/replug.out"
		diag_file "guest console and QEMU" "$work/guest.log"
		diag_file "first app log" "$work/app-$mode-1.log"
		diag_file "second app log" "$work/app.log"
	fi
	stop_app
	for h in first held after; do
		eval "kill -KILL \$pid_$h" 2>/dev/null
	done
}

replug server
replug client
tap_done
