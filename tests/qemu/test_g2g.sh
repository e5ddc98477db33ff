#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# Guest-to-guest routing (doc/multi-vm.md) between three real Linux guests
# (TCG) on one app, each guest's device polled by the lcore the configuration
# names, so that every byte between guests 3 and 4 crosses lcores:
#   VM 3  group=red            lcore 1
#   VM 4  group=red,group=lab  lcore 2
#   VM 5  group=blue           balanced
# Guest 3 connects to guest 4 by CID; every transfer is checked at both ends
# (byte count, pattern, FNV checksum; seqpacket: every message length):
#   6000  stream     3 -> 4
#   6001  stream     4 -> 3
#   6002  seqpacket  3 -> 4
#   6003  seqpacket  4 -> 3
#   6010  stream     3 -> 4 after 3 s in which neither guest used vsock
#   6011  stream     3 -> 4 after 6 s of the same
# (longer than every timeout of the app: a connect after quiet must not be reset).
# Guest 5 shares no group with them: each of its connects to CID 3 and 4 must
# be reset at once, and the app counts them as routing errors of VM 5.
#
# Environment (from tests/qemu/meson.build): VSOCK_APP, GUEST_DIR, RUN_GUEST;
# VSOCK_DEVICE_OPTS=,packed=on (run-guest.sh) puts every guest on packed
# virtqueues.
# cmd, q and rc are set through eval
# shellcheck disable=SC2154
set -u

big=8388608			# stream bytes each way
seq_bytes=2097152
qemu_timeout=240
tries=90			# guest 3 retries its connects until guest 4 listens
quiet_bytes=1048576		# each transfer after quiet

. "$(dirname "$0")/lib.sh"
qemu_test_init g2g VSOCK_APP GUEST_DIR RUN_GUEST

# Three lcores on the two CPUs a test machine may have: main and lcore 1 share one.
start_app --lcores 0@0,1@0,2@1 -- --stats-period 1 \
	--vm "cid=3,socket=$work/vm3.sock,uds=$work/vm3.vsock,group=red,lcore=1" \
	--vm "cid=4,socket=$work/vm4.sock,uds=$work/vm4.vsock,group=red,group=lab,lcore=2" \
	--vm "cid=5,socket=$work/vm5.sock,uds=$work/vm5.vsock,group=blue"
wait_sockets "app creates the three vhost-user sockets" \
	"$work/vm3.sock" "$work/vm4.sock" "$work/vm5.sock"
grep -q "VM cid 3: placed on lcore 1 (pinned)" "$work/app.log" &&
	grep -q "VM cid 4: placed on lcore 2 (pinned)" "$work/app.log" &&
	grep -q "VM cid 5: placed on lcore 1 (balanced)" "$work/app.log"
ok $? "VMs 3 and 4 on their lcore=, VM 5 balanced onto the less loaded lcore 1"

# Each guest program's output goes to /tmp/P<port> and is printed at the end
# with the port in front ("P6000:RECV ..."), so concurrent ones do not mix.
show='for f in /tmp/P*; do sed -e s@^@${f#/tmp/}:@ $f; done'
g4="vsock-io listen 6000 recv >/tmp/P6000 2>&1 &"
g4="$g4 vsock-io listen 6001 send $big >/tmp/P6001 2>&1 &"
g4="$g4 vsock-io --seqpacket listen 6002 recv >/tmp/P6002 2>&1 &"
g4="$g4 vsock-io --seqpacket listen 6003 send $seq_bytes >/tmp/P6003 2>&1 &"
g4="$g4 vsock-io listen 6010 recv >/tmp/P6010 2>&1 &"
g4="$g4 vsock-io listen 6011 recv >/tmp/P6011 2>&1 &"
g4="$g4 wait; $show"
# r ARGS: vsock-io, again while it is refused (guest 4 not up or not listening yet)
g3="r() { i=0; until vsock-io \$*; do i=\$((i+1)); [ \$i -ge $tries ] && return 1; sleep 1; done; };"
g3="$g3 r connect 4 6000 send $big >/tmp/P6000 2>&1;"
g3="$g3 r connect 4 6001 recv >/tmp/P6001 2>&1;"
g3="$g3 r --seqpacket connect 4 6002 send $seq_bytes >/tmp/P6002 2>&1;"
g3="$g3 r --seqpacket connect 4 6003 recv >/tmp/P6003 2>&1;"
# After quiet: one try each, as a program that knows its peer listens.
g3="$g3 sleep 3; vsock-io connect 4 6010 send $quiet_bytes >/tmp/P6010 2>&1;"
g3="$g3 sleep 6; vsock-io connect 4 6011 send $quiet_bytes >/tmp/P6011 2>&1; $show"
# Guest 5 tries both guests, spread over the time the others run.
g5="for k in 1 2 3 4 5 6; do for c in 3 4; do"
g5="$g5 s=\$(date +%s); vsock-io --timeout 10 connect \$c 6000 send 4096 >/dev/null 2>/tmp/e;"
g5="$g5 echo G5 \$c \$? \$((\$(date +%s)-s)) \$(head -n 1 /tmp/e); done; sleep 2; done"

start=$(now_ms)
for g in 3 4 5; do
	eval "cmd=\$g$g"
	"$RUN_GUEST" -g "$GUEST_DIR" -s "$work/vm$g.sock" -m 128 -t $qemu_timeout -- "$cmd" \
		>"$work/console$g.raw" 2>&1 &
	eval "qemu$g=$!"
	qemu="$qemu $!"
done
for g in 3 4 5; do
	eval "q=\$qemu$g"
	wait "$q"
	eval "rc$g=$?"
	tr -d '\r' <"$work/console$g.raw" >"$work/console$g.log"
done
qemu=
echo "# three guests ran $(($(now_ms) - start)) ms"
for g in 3 4 5; do
	eval "rc=\$rc$g"
	ok "$rc" "QEMU of guest $g exits 0"
done
case ${VSOCK_DEVICE_OPTS:-} in
*packed=on*)
	for g in 3 4 5; do
		f=$(sed -n "s/.*VM cid $g: running on lcore.*(features \(0x[0-9a-f]*\)).*/\1/p" \
			"$work/app.log" | head -n 1)
		[ -n "$f" ] && [ $(((f >> 34) & 1)) -eq 1 ]
		ok $? "guest $g: VIRTIO_F_RING_PACKED negotiated (features ${f:-not logged})"
	done
	;;
esac

line() {	# GUEST PORT KIND: that result line of the port, without the prefix
	sed -n "s/^P$2:\($3 .*\)/\1/p" "$work/console$1.log" | tail -n 1
}

# check PORT SENDER RECEIVER BYTES WHAT
check() {
	sent=$(line "$2" "$1" SENT)
	recvd=$(line "$3" "$1" RECV)
	[ "$(field "$sent" 2)" = "$4" ] && [ "$(field "$recvd" 2)" = "$4" ]
	ok $? "$1 $5: $4 bytes sent by guest $2 and received by guest $3"
	[ "$(field "$sent" 7)" = OK ] && [ "$(field "$recvd" 8)" = OK ] &&
		[ -n "$(field "$recvd" 4)" ] && [ "$(field "$sent" 4)" = "$(field "$recvd" 4)" ]
	ok $? "$1 $5: pattern intact, checksums equal at both ends"
	echo "#   sender:   $sent"
	echo "#   receiver: $recvd"
}
check 6000 3 4 $big "stream 3->4"
check 6001 4 3 $big "stream 4->3"
check 6002 3 4 $seq_bytes "seqpacket 3->4"
msgs=$(field "$(line 4 6002 RECV)" 6)
[ "${msgs:-0}" -gt 1 ]
ok $? "6002: guest 4 received $msgs messages, each with the length sent"
check 6003 4 3 $seq_bytes "seqpacket 4->3"
msgs=$(field "$(line 3 6003 RECV)" 6)
[ "${msgs:-0}" -gt 1 ]
ok $? "6003: guest 3 received $msgs messages, each with the length sent"
check 6010 3 4 $quiet_bytes "stream 3->4 after 3 s of quiet"
check 6011 3 4 $quiet_bytes "stream 3->4 after 6 s of quiet"

# The accepting guest sees the connecting guest's own CID: nobody else's.
peers=$(sed -n 's/^P60[01][0-3]:CONNECTED \([0-9]*\) .*/\1/p' "$work/console4.log" | sort -u)
[ "$peers" = 3 ]
ok $? "guest 4 accepted every connection from CID 3 (saw: $(echo $peers))"
peers=$(sed -n 's/^P60[01][0-3]:CONNECTED \([0-9]*\) .*/\1/p' "$work/console3.log" | sort -u)
[ "$peers" = 4 ]
ok $? "guest 3 connected to CID 4 every time (saw: $(echo $peers))"

# Guest 5: every attempt fails within a second, with a reset, never a timeout.
attempts=$(grep -c '^G5 ' "$work/console5.log")
refused=$(grep -c '^G5 [34] 1 [01] vsock-io: connect: Connection reset by peer' \
	"$work/console5.log")
[ "$attempts" -eq 12 ] && [ "$refused" -eq 12 ]
ok $? "guest 5 (group blue): $refused of $attempts connects to CIDs 3 and 4 reset at once"
# The last statistics display of VM 5 counts them as routing errors.
route5=$(awk '/VM statistics for CID/ { cid = $(NF - 1) }
	cid == 5 && /Errors:/ { v = 0; if (match($0, /conn_route [0-9]+/))
		v = substr($0, RSTART + 11, RLENGTH - 11); last = v }
	END { print last + 0 }' "$work/app.log")
[ "$route5" -ge 12 ]
ok $? "VM 5 counts its refused connects as routing errors ($route5)"

alive "$app"
ok $? "app still running after the three guests left"
stop_app
left=$(ls "$work"/*.sock "$work"/*.vsock 2>/dev/null)
[ -z "$left" ]
ok $? "app removed its sockets${left:+ (left: $left)}"
if [ $failed -ne 0 ]; then
	for g in 3 4 5; do
		diag_file "console of guest $g" "$work/console$g.log"
	done
	grep -v "statistics\|^  [A-Z ]" "$work/app.log" >"$work/app.short"
	diag_file "app log (without the statistics)" "$work/app.short"
fi

tap_done
