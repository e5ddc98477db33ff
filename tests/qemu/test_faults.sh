#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# QEMU SIGKILLed in the middle of transfers both ways (a real Linux guest, TCG):
#   5006  guest connect -> host listen    endless guest -> host
#   5007  host CONNECT  -> guest listen   endless host -> guest
# After KILL_AFTER_S of transfer QEMU gets SIGKILL. Both host programs must end by
# themselves within CLOSE_S, having received only correct bytes, with EOF, ECONNRESET or
# EPIPE. The app's resources (/vsock/resources over telemetry: mbufs in use, open
# descriptors, connections) must come back to their values before QEMU started. Then a
# new QEMU on the same vhost-user socket moves checked bytes both ways:
#   5010  guest connect -> host listen    8 MiB guest -> host
#   5011  host CONNECT  -> guest listen   8 MiB host -> guest
# and the resources are back to start once it powered off. The app exits 0 on SIGTERM.
#
# Environment (tests/qemu/meson.build): VSOCK_APP, GUEST_DIR, RUN_GUEST, UDS_IO.
# shellcheck disable=SC2154
set -u
. "$(dirname "$0")/lib.sh"

cid=3
endless=4000000000
after_bytes=8388608
KILL_AFTER_S=5
CLOSE_S=10
host_timeout=150
qemu_timeout=200
diag_lines=40			# a failure shows eleven files

qemu_test_init faults VSOCK_APP GUEST_DIR RUN_GUEST UDS_IO
sock=$work/vm$cid.sock
uds=$work/vm$cid.vsock
prefix=vsock-faults-$$
scratch=/var/run/dpdk/$prefix	# the app's telemetry socket lives there

# resources: "mbufs_in_use open_fds conns" from the app's telemetry
resources() {
	python3 - "/var/run/dpdk/$prefix/dpdk_telemetry.v2" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.settimeout(10)
s.connect(sys.argv[1])
s.recv(16384)
s.send(b"/vsock/resources")
r = json.loads(s.recv(16384))["/vsock/resources"]
print(r["mbufs_in_use"], r["open_fds"], r["conns"])
PY
}
# wait_resources WANT SECS: until resources() prints WANT; the last reading in $res
wait_resources() {
	i=0
	res=$(resources)
	while [ "$res" != "$1" ] && [ $i -lt $(($2 * 10)) ]; do
		sleep 0.1
		i=$((i + 1))
		res=$(resources)
	done
	[ "$res" = "$1" ]
}

start_app -l 0-1 --file-prefix="$prefix" -- --vm "cid=$cid,socket=$sock,uds=$uds"
wait_sockets "app creates its vhost-user socket" "$sock"
start_res=$(resources)
[ -n "$start_res" ]
ok $? "start resources (mbufs in use, fds, conns): $start_res"

# --- first QEMU: transfers both ways, then SIGKILL ---
host h5006 listen "${uds}_5006" recv
"$RUN_GUEST" -g "$GUEST_DIR" -s "$sock" -t $qemu_timeout -- \
	"vsock-io connect 2 5006 send $endless & vsock-io listen 5007 recv & sleep 600" \
	>"$work/console1.raw" 2>&1 &
runner=$!
t_listen=
deadline=$(($(now_ms) + 120000))
while alive "$runner" && [ "$(now_ms)" -lt $deadline ]; do
	if [ -z "$t_listen" ] && grep -q "^LISTENING 5007" "$work/console1.raw"; then
		host h5007 connect "$uds" 5007 send $endless
		t_listen=$(now_ms)
	fi
	[ -n "$t_listen" ] && [ $(($(now_ms) - t_listen)) -ge $((KILL_AFTER_S * 1000)) ] && break
	sleep 0.05
done
# run-guest.sh execs timeout(1), whose child is QEMU: that is the process to kill.
qemu=$(pgrep -P "$runner" -x qemu-system-x86)
[ -z "$qemu" ] && qemu=$(pgrep -P "$runner")
mid_res=$(resources)
echo "# mid-transfer resources (mbufs in use, fds, conns): $mid_res"
[ -n "$t_listen" ] && [ -n "$qemu" ]
ok $? "transfers both ways under way for ${KILL_AFTER_S} s, QEMU pid ${qemu:-none}"
t_kill=$(now_ms)
[ -n "$qemu" ] && kill -KILL "$qemu"
wait "$runner" 2>/dev/null
qemu=

# Both host programs end by themselves, soon.
for h in h5006 h5007; do
	eval "p=\${pid_$h:-}"
	i=0
	while [ -n "$p" ] && alive "$p" && [ $i -lt $((CLOSE_S * 20)) ]; do
		sleep 0.05
		i=$((i + 1))
	done
	dt=$(($(now_ms) - t_kill))
	if [ -n "$p" ] && ! alive "$p"; then
		wait "$p"
		ok 0 "$h: host side closed ${dt} ms after QEMU's SIGKILL (limit ${CLOSE_S} s)"
	else
		ok 1 "$h: host side closed within ${CLOSE_S} s of QEMU's SIGKILL"
		[ -n "$p" ] && kill -KILL "$p" 2>/dev/null
	fi
done
r=$(host_line h5006 RECV)
b=$(field "$r" 2)
[ "${b:-0}" -gt 0 ] && [ "$b" -lt $endless ] && [ "$(field "$r" 8)" = OK ]
ok $? "5006 guest->host: host read ${b:-0} correct bytes, then EOF or ECONNRESET"
r=$(host_line h5007 BROKEN)
b=$(field "$r" 5)
[ "$(field "$r" 2)" = send ] && [ "${b:-0}" -gt 0 ]
ok $? "5007 host->guest: host wrote ${b:-0} bytes, then EPIPE or ECONNRESET ($r)"
wait_resources "$start_res" 10
ok $? "resources back to start after the kill: $res (start $start_res)"
alive "$app"
ok $? "app still running"

# --- a new QEMU on the same socket ---
hosts=
host h5010 listen "${uds}_5010" recv
"$RUN_GUEST" -g "$GUEST_DIR" -s "$sock" -t $qemu_timeout -- \
	"vsock-io connect 2 5010 send $after_bytes; vsock-io listen 5011 recv" \
	>"$work/console2.raw" 2>&1 &
qemu=$!
started=
while alive "$qemu"; do
	if [ -z "$started" ] && grep -q "^LISTENING 5011" "$work/console2.raw"; then
		host h5011 connect "$uds" 5011 send $after_bytes
		started=1
	fi
	sleep 0.05
done
wait "$qemu"
qemu_rc=$?
qemu=
ok $qemu_rc "the new QEMU ran its guest and powered off"
tr -d '\r' <"$work/console2.raw" >"$work/console2.log"
for h in h5010 h5011; do
	eval "p=\${pid_$h:-}"
	i=0
	while [ -n "$p" ] && alive "$p" && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ -n "$p" ] && ! alive "$p" && wait "$p"
	eval "rc_$h=\$?"
done
g=$(grep "^SENT " "$work/console2.log" | head -n 1)
hr=$(host_line h5010 RECV)
[ "$rc_h5010" -eq 0 ] && [ "$(field "$hr" 2)" = $after_bytes ] &&
	[ "$(field "$hr" 8)" = OK ] && [ "$(field "$g" 4)" = "$(field "$hr" 4)" ]
ok $? "5010 new guest->host: $after_bytes bytes, checksums equal ($hr)"
hs=$(host_line h5011 SENT)
gr=$(grep "^RECV " "$work/console2.log" | head -n 1)
[ "${rc_h5011:-1}" -eq 0 ] && [ "$(field "$gr" 2)" = $after_bytes ] &&
	[ "$(field "$gr" 8)" = OK ] && [ "$(field "$hs" 4)" = "$(field "$gr" 4)" ]
ok $? "5011 new host->guest: $after_bytes bytes, checksums equal ($gr)"
wait_resources "$start_res" 10
ok $? "resources back to start after the new QEMU powered off: $res (start $start_res)"

stop_app
if [ $failed -ne 0 ]; then
	for f in h5006 h5007 h5010 h5011; do
		diag_file "$f out" "$work/$f.out"
		diag_file "$f err" "$work/$f.err"
	done
	tr -d '\r' <"$work/console1.raw" >"$work/console1.log"
	diag_file "console 1" "$work/console1.log"
	diag_file "console 2" "$work/console2.log"
	diag_file "app log" "$work/app.log"
fi
tap_done
