#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# A real Linux guest reads its CID from the app's vhost-user-vsock device:
# the app serves cid=5 (not QEMU's usual 3), QEMU boots the guest twice on the
# same socket while the app keeps running (QEMU exit and reconnect), then a
# guest resets itself once (the device is reset and renegotiated inside one
# QEMU run); finally the app must exit 0 on SIGTERM and remove its sockets.
#
# Environment (from tests/qemu/meson.build): VSOCK_APP, GUEST_DIR (output of
# scripts/build-guest.sh), RUN_GUEST (scripts/run-guest.sh). Prints TAP.
set -u
. "$(dirname "$0")/lib.sh"

cid=5

qemu_test_init qemu VSOCK_APP GUEST_DIR RUN_GUEST
sock=$work/vm$cid.sock
uds=$work/vm$cid.vsock
start_app -l 0-1 -- --vm "cid=$cid,socket=$sock,uds=$uds"
wait_sockets "app creates its vhost-user socket" "$sock"

# boot NAME RUN-GUEST-ARGS...: run the guest, log in $work/NAME.log (console
# with CRs stripped, QEMU's messages appended), report the time to the first
# guest marker, leave QEMU's exit status in $qemu_rc.
boot() {
	name=$1
	shift
	start=$(now_ms)
	"$RUN_GUEST" -g "$GUEST_DIR" -s "$sock" -t 120 "$@" >"$work/$name.raw" 2>&1 &
	qemu=$!
	# poll the console for the first marker while QEMU runs, to time the boot
	first=
	while alive "$qemu"; do
		if [ -z "$first" ] && grep -q GUEST-BOOT "$work/$name.raw"; then
			first=$(($(now_ms) - start))
		fi
		sleep 0.05
	done
	wait "$qemu"
	qemu_rc=$?
	qemu=
	tr -d '\r' <"$work/$name.raw" >"$work/$name.log"
	echo "# $name: first guest marker after ${first:-?} ms, QEMU done after" \
		"$(($(now_ms) - start)) ms"
}

count() {	# PATTERN FILE: number of whole lines equal to PATTERN
	grep -cx "$1" "$2"
}

# check_boot NAME BOOTS: QEMU exited 0, every one of BOOTS boots printed our
# CID and the command succeeded, and the app survived it.
check_boot() {
	name=$1
	boots=$2
	before=$failed
	ok $qemu_rc "$name: QEMU exits 0"
	[ "$(count "CID $cid" "$work/$name.log")" -eq "$boots" ]
	ok $? "$name: guest printed 'CID $cid' on each of $boots boot(s)"
	[ "$(count "GUEST-RESULT: rc=0" "$work/$name.log")" -eq "$boots" ]
	ok $? "$name: vsock-cid exited 0 on each boot"
	alive "$app"
	ok $? "$name: app still running"
	if [ $failed -ne $before ]; then
		diag_file "$name console and QEMU" "$work/$name.log"
		diag_file "app log" "$work/app.log"
	fi
}

boot first vsock-cid
check_boot first 1

# A new QEMU on the same socket: the app must have let go of the first one.
boot second vsock-cid
check_boot second 1

# One QEMU run, two boots: the guest resets the device and negotiates again.
boot reboot -r 1 vsock-cid
check_boot reboot 2
[ "$(count "GUEST-BOOT: 1" "$work/reboot.log")" -eq 1 ] &&
	[ "$(count GUEST-REBOOT "$work/reboot.log")" -eq 1 ]
ok $? "reboot: the guest rebooted itself once"

stop_app
left=$(find "$work" -type s)
[ -z "$left" ]
ok $? "app removed its sockets${left:+ (left: $left)}"
[ $failed -eq 0 ] || diag_file "app log" "$work/app.log"

tap_done
