#!/usr/bin/env bash
# The main job on the embedded default: set up, build, start dpdk-vsock-app
# with config/default.conf (one VM, CID 3, sockets in run/), boot the bundled
# test guest under QEMU against it, show what the guest sees over vsock, let
# the guest and a host program exchange checksummed bytes both ways through
# the app (hybrid vsock, doc/hybrid-vsock.md), and stop everything.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

PORT_G2H=5000	# the guest connects to CID 2 port 5000 = run/vm3.vsock_5000
PORT_H2G=5001	# the host writes "CONNECT 5001" to run/vm3.vsock
BYTES=$((16 << 20))
SEED_H2G=7	# another stream than the guest's, so the two checksums differ
SUM_LINE=21	# each receiver answers "SUM <16 hex>\n" (tests/common/stream_io.h)

"$VSOCK_TOP/scripts/setup.sh"
echo "demo: building"
vsock_build
ninja -C "$VSOCK_BUILD" tests/qemu/guest tests/host/uds-io >/dev/null
guest=$VSOCK_BUILD/tests/qemu/guest
uds_io=$VSOCK_BUILD/tests/host/uds-io

run=$VSOCK_TOP/run
mkdir -p "$run"
rm -f "$run"/guest.log "$run"/host-*.log
app_pid=
host_pids=()
cleanup() {
	local p
	for p in "${host_pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	if [[ -n $app_pid ]] && kill -0 "$app_pid" 2>/dev/null; then
		kill -TERM "$app_pid"
		wait "$app_pid" || true
	fi
	rm -f "$run/vm3.vsock_$PORT_G2H"
}
trap cleanup EXIT

echo "demo: starting dpdk-vsock-app (log: run/app.log)"
# shellcheck disable=SC2046
(cd "$run" && exec "$VSOCK_APP" -l 0-1 --no-pci $(vsock_eal_mem_args) \
	--log-level=lib.eal:error -- --config "$VSOCK_TOP/config/default.conf" \
	--stats-period 2) \
	>"$run/app.log" 2>&1 &
app_pid=$!
for _ in $(seq 100); do
	[[ -S $run/vm3.sock ]] && break
	kill -0 "$app_pid" 2>/dev/null || { cat "$run/app.log"; exit 1; }
	sleep 0.1
done
[[ -S $run/vm3.sock ]] || { echo "demo: the app did not create run/vm3.sock"; exit 1; }

# Guest -> host: a host program listens where the app connects for port 5000.
"$uds_io" --timeout 150 listen "$run/vm3.vsock_$PORT_G2H" recv >"$run/host-recv.log" 2>&1 &
host_pids+=($!)
# Host -> guest: once the guest listens on 5001, CONNECT to it through the app.
(
	for _ in $(seq 1500); do
		grep -q "^LISTENING $PORT_H2G" "$run/guest.log" 2>/dev/null && break
		sleep 0.1
	done
	exec "$uds_io" --timeout 60 --seed $SEED_H2G connect "$run/vm3.vsock" "$PORT_H2G" \
		send "$BYTES"
) >"$run/host-send.log" 2>&1 &
host_pids+=($!)

echo "demo: booting the test guest under QEMU (TCG): it prints its CID, sends $((BYTES >> 20))" \
	"MiB to host port $PORT_G2H, then receives $((BYTES >> 20)) MiB on its port $PORT_H2G"
ok=1
"$VSOCK_TOP/scripts/run-guest.sh" -g "$guest" -s "$run/vm3.sock" -t 150 -- \
	"vsock-cid && vsock-io connect 2 $PORT_G2H send $BYTES &&"\
	" vsock-io --seed $SEED_H2G listen $PORT_H2G recv" |
	while IFS= read -r line; do
		line=${line%$'\r'}
		# one line at a time, so the host side sees LISTENING as it happens
		echo "$line" >>"$run/guest.log"
		case $line in
		CID* | CONNECTED* | LISTENING* | SENT* | RECV* | GUEST-RESULT*)
			echo "guest: $line" ;;
		esac
	done || { echo "demo: QEMU failed (run/guest.log)"; ok=0; }

# The host programs end with their connection; one still running has lost it.
for p in "${host_pids[@]}"; do
	for _ in $(seq 50); do
		kill -0 "$p" 2>/dev/null || break
		sleep 0.1
	done
	kill "$p" 2>/dev/null || true
	wait "$p" || true
done
host_pids=()
rm -f "$run/vm3.vsock_$PORT_G2H"	# left only when the guest never connected
grep -hE '^(CONNECTED [0-9]|SENT|RECV|BROKEN)|uds-io' "$run/host-recv.log" "$run/host-send.log" |
	sed 's/^/host:  /' || true

kill -TERM "$app_pid"
wait "$app_pid"
app_pid=

# field FILE KIND N: word N of the first line starting with KIND in FILE
field() { awk -v k="$2" -v n="$3" '$1 == k { print $n; exit }' "$1"; }
check() {	# WHAT SENDER-FILE RECEIVER-FILE [NOTE]
	local sum_s sum_r
	sum_s=$(field "$2" SENT 4)
	sum_r=$(field "$3" RECV 4)
	if [[ $(field "$2" SENT 2) == "$BYTES" && $(field "$3" RECV 2) == "$BYTES" &&
	      $(field "$2" SENT 7) == OK && $(field "$3" RECV 8) == OK &&
	      -n $sum_s && $sum_s == "$sum_r" ]]; then
		echo "  $1  $((BYTES >> 20)) MiB, same checksum at both ends ($sum_s)${4:+, $4}"
	else
		echo "  $1  FAILED: sent ${sum_s:-nothing}, received ${sum_r:-nothing}"
		ok=0
	fi
}
# What the app printed when it stopped: its totals, taken once the workers stopped.
final=$(awk '/final statistics/ { grab = 1 } grab && /^  /' "$run/app.log")
echo "demo: the app's final statistics (printed as it stopped)"
printf '%s\n' "$final"
# counted LINE: the payload bytes and the host socket bytes of LINE ("Guest->host", ...)
counted() { awk -v k="$1" '$1 == k && $2 == "packets:" { print $5, $9; exit }' <<<"$final"; }
counters() {	# WHAT LINE HOST-COLUMN SENDER-FILE RECEIVER-FILE
	local vm host sent got
	read -r vm host < <(counted "$2") || true
	sent=$(field "$4" SENT 2)
	got=$(field "$5" RECV 2)
	# Beside the stream, the app carried the other direction's "SUM <16 hex>\n" answer.
	if [[ -n $vm && -n $sent && $vm == $((sent + SUM_LINE)) && $host == "$vm" &&
	      $got == "$sent" ]]; then
		echo "  app counted    $1 $vm bytes, $3 $host: the ends' $sent and the" \
			"$SUM_LINE-byte SUM answer"
	else
		echo "  app counted    $1 FAILED: ${vm:-nothing} bytes, $3 ${host:-nothing};" \
			"the ends sent ${sent:-nothing} and received ${got:-nothing} (+ $SUM_LINE)"
		ok=0
	fi
}
echo "demo: summary"
if grep -q '^CID 3$' "$run/guest.log"; then
	echo "  guest CID      3, as the app answered QEMU's GET_CONFIG"
else
	echo "  guest CID      FAILED: the guest did not see CID 3"
	ok=0
fi
check "guest -> host" "$run/guest.log" "$run/host-recv.log" "via run/vm3.vsock_$PORT_G2H"
hp=$(field "$run/host-send.log" CONNECTED 3)
check "host -> guest" "$run/host-send.log" "$run/guest.log" \
	"via CONNECT $PORT_H2G, OK ${hp:-?}"
counters "guest -> host" Guest-\>host "host sockets written" "$run/guest.log" \
	"$run/host-recv.log"
counters "host -> guest" Host-\>guest "host sockets read" "$run/host-send.log" "$run/guest.log"
echo "  app            stopped cleanly, $(find "$run" -type s | wc -l) sockets left in run/"
((ok)) || { echo "demo: FAILED (logs in run/)"; exit 1; }
