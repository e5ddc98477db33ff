#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# Bytes between a real Linux guest (TCG) and host programs through the app,
# over hybrid vsock (doc/hybrid-vsock.md), in one QEMU run with two boots.
# Every transfer is checked at both ends: byte count, pattern, FNV checksum.
#
# Boot 0 (the guest finds the host listening on the probe port 5009):
#   5000  guest connect -> host listen    64 MiB guest -> host
#   5001  guest connect -> host listen    64 MiB host -> guest
#   5002  host CONNECT  -> guest listen   64 MiB host -> guest
#   5003  host CONNECT  -> guest listen   64 MiB guest -> host
#   5004  SOCK_SEQPACKET guest -> host    4 MiB in messages, each length checked
#   5005  SOCK_SEQPACKET host -> guest    the same the other way
#   5006  guest connect, 5007 host CONNECT: endless transfers, and the guest
#         reboots (reboot -f) in the middle of them; both host programs must
#         see EOF or ECONNRESET within REBOOT_CLOSE_S, not hang
# Boot 1 (the probe listener is gone, so the guest takes the other branch):
#   5010  guest connect -> host listen    8 MiB guest -> host
#   5011  host CONNECT  -> guest listen   8 MiB host -> guest
# Then the app must exit 0 on SIGTERM and remove its sockets.
#
# Environment (from tests/qemu/meson.build): VSOCK_APP, GUEST_DIR, RUN_GUEST,
# UDS_IO (tests/host/uds-io); VSOCK_DEVICE_OPTS=,packed=on (run-guest.sh) runs
# it all over packed virtqueues. Prints TAP, and the timings as diagnostics.
# the per-program variables (pid_NAME, rc_NAME, ...) are set through eval
# shellcheck disable=SC2154
set -u
. "$(dirname "$0")/lib.sh"

cid=3
big=67108864			# 64 MiB each way
seq_bytes=4194304
after_bytes=8388608
endless=4000000000		# far more than TCG moves before the reboot
reboot_after_s=6		# how long the endless transfers run
REBOOT_CLOSE_S=10
host_timeout=150		# every host program gives up on its own
qemu_timeout=240

qemu_test_init datapath VSOCK_APP GUEST_DIR RUN_GUEST UDS_IO
sock=$work/vm$cid.sock
uds=$work/vm$cid.vsock
start_app -l 0-1 -- --vm "cid=$cid,socket=$sock,uds=$uds"
wait_sockets "app creates its vhost-user socket" "$sock"

# The listeners exist before the guest connects; uds-io removes each one
# once it accepted, so a second connect to the same port gets RST.
host p5009 listen "${uds}_5009" send 0
host h5000 listen "${uds}_5000" recv
host h5001 listen "${uds}_5001" send $big
host h5004 --seqpacket listen "${uds}_5004" recv
host h5005 --seqpacket listen "${uds}_5005" send $seq_bytes
host h5006 listen "${uds}_5006" recv
host h5010 listen "${uds}_5010" recv

# The host's CONNECTs start when the guest prints LISTENING <port>.
connect_ports="5002 5003 5007 5011"
connect_host() {	# PORT
	case $1 in
	5002) host h5002 connect "$uds" 5002 send $big ;;
	5003) host h5003 connect "$uds" 5003 recv ;;
	5007) host h5007 connect "$uds" 5007 send $endless ;;
	5011) host h5011 connect "$uds" 5011 send $after_bytes ;;
	esac
}

# step PORT ARGS...: one guest command that reports its own failure
step() {
	p=$1
	shift
	printf '%s' "vsock-io $* || echo STEP-FAILED $p; "
}
boot0="$(step 5000 connect 2 5000 send $big)$(step 5001 connect 2 5001 recv)"
boot0="$boot0$(step 5002 listen 5002 recv)$(step 5003 listen 5003 send $big)"
boot0="$boot0$(step 5004 --seqpacket connect 2 5004 send $seq_bytes)"
boot0="$boot0$(step 5005 --seqpacket connect 2 5005 recv)"
boot0="$boot0 vsock-io connect 2 5006 send $endless & vsock-io listen 5007 recv &"
boot0="$boot0 sleep $reboot_after_s"
boot1="$(step 5010 connect 2 5010 send $after_bytes)$(step 5011 listen 5011 recv)"
guest_cmd="if vsock-io connect 2 5009 recv; then $boot0; else $boot1 fi"

start=$(now_ms)
"$RUN_GUEST" -g "$GUEST_DIR" -s "$sock" -t $qemu_timeout -r 1 -- "$guest_cmd" \
	>"$work/console.raw" 2>&1 &
qemu=$!
t_reboot=
t_boot0=
t_boot1=
# Poll the console: start host CONNECTs, note the markers' times, and note
# when each host program ends (to time transfers and the reboot's close).
while alive "$qemu"; do
	for p in $connect_ports; do
		if grep -q "^LISTENING $p" "$work/console.raw"; then
			connect_host "$p"
			connect_ports=$(echo "$connect_ports" | sed "s/\b$p\b//")
		fi
	done
	[ -z "$t_boot0" ] && grep -q "^GUEST-BOOT: 0" "$work/console.raw" && t_boot0=$(now_ms)
	[ -z "$t_reboot" ] && grep -q "^GUEST-REBOOT" "$work/console.raw" && t_reboot=$(now_ms)
	[ -z "$t_boot1" ] && grep -q "^GUEST-BOOT: 1" "$work/console.raw" && t_boot1=$(now_ms)
	for h in $hosts; do
		eval "p=\$pid_$h e=\$end_$h"
		[ -z "$e" ] && ! alive "$p" && eval "end_$h=$(now_ms)"
	done
	sleep 0.05
done
wait "$qemu"
qemu_rc=$?
qemu=
t_end=$(now_ms)
tr -d '\r' <"$work/console.raw" >"$work/console.log"
echo "# QEMU ran $((t_end - start)) ms: boot 0 marker at $((${t_boot0:-$start} - start))," \
	"reboot at $((${t_reboot:-$start} - start)), boot 1 at $((${t_boot1:-$start} - start))"

# What is still running now hung: stop it, it fails its checks below.
for h in $hosts; do
	eval "p=\$pid_$h"
	if alive "$p"; then
		echo "# $h still running after QEMU exited: killed" >>"$work/$h.err"
		kill -KILL "$p"
	fi
	wait "$p"
	eval "rc_$h=$?"
	eval "e=\$end_$h"
	[ -z "$e" ] && eval "end_$h=$t_end"
done

# The guest's result lines by port: a result line belongs to the last
# "CONNECTED 2 <port>" (connect) or "LISTENING <port>" (listen) before it;
# a listener's "CONNECTED 2 <host_port>" (>= 2^30) is kept as HOSTPORT.
awk '/^LISTENING [0-9]+$/ { lport = $2; cur = $2 }
	/^CONNECTED 2 [0-9]+$/ {
		if ($3 >= 1073741824) print lport " HOSTPORT " $3; else cur = $3
	}
	/^(SENT|RECV|ECHO) / { print cur " " $0 }
	/^STEP-FAILED / { print $2 " " $0 }' "$work/console.log" >"$work/guest.res"

guest_line() {	# PORT KIND: the guest's line of that kind for PORT, without the port
	sed -n "s/^$1 $2 /$2 /p" "$work/guest.res" | head -n 1
}

# check_pair NAME PORT SENDER BYTES: SENDER (guest|host) sent BYTES on PORT
# and got its checksum back; the receiver saw the same bytes and checksum.
check_pair() {
	what=$1
	port=$2
	bytes=$4
	if [ "$3" = guest ]; then
		sent=$(guest_line "$port" SENT)
		recvd=$(host_line "h$port" RECV)
	else
		sent=$(host_line "h$port" SENT)
		recvd=$(guest_line "$port" RECV)
	fi
	eval "rc=\$rc_h$port t0=\$((\$start_h$port - start)) t1=\$((\$end_h$port - start))"
	before=$failed
	[ "$rc" -eq 0 ] && ! grep -q "^$port STEP-FAILED" "$work/guest.res"
	ok $? "$what: both ends exit 0"
	[ "$(field "$sent" 2)" = "$bytes" ] && [ "$(field "$recvd" 2)" = "$bytes" ]
	ok $? "$what: $bytes bytes sent and received"
	[ "$(field "$sent" 7)" = OK ] && [ "$(field "$recvd" 8)" = OK ] &&
		[ -n "$(field "$recvd" 4)" ] && [ "$(field "$sent" 4)" = "$(field "$recvd" 4)" ]
	ok $? "$what: pattern intact, checksums equal at both ends"
	echo "#   sender:   $sent"
	echo "#   receiver: $recvd"
	echo "#   host program: started at $t0 ms, ended at $t1 ms (QEMU started at 0)"
	if [ $failed -ne $before ]; then
		diag_file "h$port stdout" "$work/h$port.out"
		diag_file "h$port stderr" "$work/h$port.err"
	fi
}

# check_hostport PORT: the OK line's port is the guest's view of its peer
check_hostport() {
	hp=$(field "$(host_line "h$1" CONNECTED)" 3)
	[ -n "$hp" ] && [ "$hp" = "$(guest_line "$1" HOSTPORT | cut -d' ' -f2)" ]
	ok $? "$1: OK line names the port the guest accepted from (${hp:-none})"
}

ok $qemu_rc "QEMU exits 0"
case ${VSOCK_DEVICE_OPTS:-} in
*packed=on*)
	f=$(sed -n 's/.*running on lcore.*(features \(0x[0-9a-f]*\)).*/\1/p' "$work/app.log" |
		head -n 1)
	[ -n "$f" ] && [ $(((f >> 34) & 1)) -eq 1 ]
	ok $? "VIRTIO_F_RING_PACKED negotiated (features ${f:-not logged})"
	;;
esac
[ "$(grep -c '^GUEST-BOOT: [01]$' "$work/console.log")" -eq 2 ] &&
	[ "$(grep -c '^GUEST-REBOOT$' "$work/console.log")" -eq 1 ]
ok $? "the guest booted, rebooted itself once, and booted again"
[ "$rc_p5009" -eq 0 ]
ok $? "boot 0 found the probe listener (port 5009)"

check_pair "5000 guest connect, guest->host" 5000 guest $big
check_pair "5001 guest connect, host->guest" 5001 host $big
check_pair "5002 host CONNECT, host->guest" 5002 host $big
check_hostport 5002
check_pair "5003 host CONNECT, guest->host" 5003 guest $big
check_hostport 5003
# The receivers check every message length against the sender's sequence
# and exit 1 on the first wrong one; MSGS shows there were several.
check_pair "5004 seqpacket guest->host" 5004 guest $seq_bytes
msgs=$(field "$(host_line h5004 RECV)" 6)
[ "${msgs:-0}" -gt 1 ] && [ "$rc_h5004" -eq 0 ]
ok $? "5004: host received $msgs messages, each with the sent length"
check_pair "5005 seqpacket host->guest" 5005 host $seq_bytes
msgs=$(field "$(guest_line 5005 RECV)" 6)
[ "${msgs:-0}" -gt 1 ] && ! grep -q "^5005 STEP-FAILED" "$work/guest.res"
ok $? "5005: guest received $msgs messages, each with the sent length"

# Reboot in the middle: both host programs end by themselves, soon, having
# moved some (correct) bytes and seen EOF or ECONNRESET, not the timeout.
before=$failed
for h in h5006 h5007; do
	eval "e=\$end_$h"
	if [ -n "$t_reboot" ]; then
		dt=$((e - t_reboot))
	else
		dt=999999
	fi
	! grep -q 'timeout\|killed' "$work/$h.err" && [ "$dt" -le $((REBOOT_CLOSE_S * 1000)) ]
	ok $? "$h: host side closed ${dt} ms after the guest's reboot (limit ${REBOOT_CLOSE_S} s)"
done
r=$(host_line h5006 RECV)
b=$(field "$r" 2)
[ "${b:-0}" -gt 0 ] && [ "$b" -lt $endless ] && [ "$(field "$r" 8)" = OK ] &&
	grep -Eq '^BROKEN (recv ECONNRESET|reply (EPIPE|ECONNRESET))' "$work/h5006.out"
ok $? "5006 guest->host: host read ${b:-0} correct bytes, then EOF or ECONNRESET"
r=$(host_line h5007 BROKEN)
b=$(field "$r" 5)
[ "$(field "$r" 2)" = send ] && [ "${b:-0}" -gt 0 ]
ok $? "5007 host->guest: host wrote ${b:-0} bytes, then EPIPE or ECONNRESET ($r)"
if [ $failed -ne $before ]; then
	for h in h5006 h5007; do
		diag_file "$h stdout" "$work/$h.out"
		diag_file "$h stderr" "$work/$h.err"
	done
fi

alive "$app"
ok $? "app still running after the reboot"
check_pair "5010 after reboot, guest->host" 5010 guest $after_bytes
check_pair "5011 after reboot, host CONNECT, host->guest" 5011 host $after_bytes

stop_app
left=$(ls -d "$sock" "$uds" 2>/dev/null)
[ -z "$left" ]
ok $? "app removed its sockets${left:+ (left: $left)}"
if [ $failed -ne 0 ]; then
	diag_file "guest results by port" "$work/guest.res"
	diag_file "console" "$work/console.log"
	diag_file "app log" "$work/app.log"
fi

tap_done
