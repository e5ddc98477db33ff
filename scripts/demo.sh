#!/usr/bin/env bash
# The main job on the embedded default: set up, build, start dpdk-vsock-app
# with config/default.conf (one VM, CID 3, sockets in run/), boot the bundled
# test guest under QEMU against it, show what the guest sees over vsock, and
# stop everything.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

"$VSOCK_TOP/scripts/setup.sh"
echo "demo: building"
vsock_build
ninja -C "$VSOCK_BUILD" tests/qemu/guest >/dev/null
guest=$VSOCK_BUILD/tests/qemu/guest

run=$VSOCK_TOP/run
mkdir -p "$run"
app_pid=
cleanup() {
	if [[ -n $app_pid ]] && kill -0 "$app_pid" 2>/dev/null; then
		kill -TERM "$app_pid"
		wait "$app_pid" || true
	fi
}
trap cleanup EXIT

echo "demo: starting dpdk-vsock-app (log: run/app.log)"
# shellcheck disable=SC2046
(cd "$run" && exec "$VSOCK_APP" -l 0-1 --no-pci $(vsock_eal_mem_args) \
	--log-level=lib.eal:error -- --config "$VSOCK_TOP/config/default.conf") \
	>"$run/app.log" 2>&1 &
app_pid=$!
for _ in $(seq 100); do
	[[ -S $run/vm3.sock ]] && break
	kill -0 "$app_pid" 2>/dev/null || { cat "$run/app.log"; exit 1; }
	sleep 0.1
done
[[ -S $run/vm3.sock ]] || { echo "demo: the app did not create run/vm3.sock"; exit 1; }

echo "demo: booting the test guest under QEMU (TCG)"
"$VSOCK_TOP/scripts/run-guest.sh" -g "$guest" -s "$run/vm3.sock" -t 120 -- vsock-cid |
	tr -d '\r' | tee "$run/guest.log" | grep -E '^(CID|GUEST-)' | sed 's/^/guest: /'

kill -TERM "$app_pid"
wait "$app_pid"
app_pid=
grep -q '^CID 3$' "$run/guest.log" || { echo "demo: the guest did not see CID 3"; exit 1; }
echo "demo: the guest saw CID 3; app stopped cleanly (sockets removed: $(ls "$run" | grep -c sock || true) left)"
