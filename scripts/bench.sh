#!/usr/bin/env bash
# The benchmark in one command (doc/performance.md): build, run every comparison, write the
# JSON and text tables to build/bench/, the callgrind figures, and the plots.
#
#   scripts/bench.sh            full run (about 30 minutes on 2 cores)
#   scripts/bench.sh --quick    one repetition, short cases (about 4 minutes)
#
# Environment: BUILD (default build), OUT (default $BUILD/bench), REPS, TIME (seconds per case),
# PARTS (default "payload wait burst ring512 conns native rings irq isolation scale callgrind":
# the comparisons to run), ISO_SLICES and ISO_TIME (the isolation part's slices of each
# condition, seconds each), SCALE_VMS and SCALE_TIME (the scale part's VM counts, seconds per
# window).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
OUT=${OUT:-$BUILD/bench}
REPS=${REPS:-5}
TIME=${TIME:-1}
PARTS=${PARTS:-payload wait burst ring512 conns native rings irq isolation scale callgrind}
ISO_SLICES=${ISO_SLICES:-10}
ISO_TIME=${ISO_TIME:-0.2}
# vsock-perf's default: 1,16,64,256, those one app can serve (VSOCK_PMD_MAX_VMS).
SCALE_VMS=${SCALE_VMS:-}
SCALE_TIME=${SCALE_TIME:-0.5}
CG=1
if [[ ${1:-} == --quick ]]; then
	REPS=1
	TIME=0.3
	ISO_SLICES=4
	ISO_TIME=0.1
	SCALE_TIME=0.2
fi
[[ ${1:-} == --no-callgrind || ${2:-} == --no-callgrind ]] && CG=0

log() { printf 'bench: %s\n' "$*" >&2; }

[[ -f $BUILD/build.ninja ]] || meson setup "$BUILD" "$ROOT" >/dev/null
ninja -C "$BUILD" app/dpdk-vsock-app/dpdk-vsock-app app/vsock-perf/vsock-perf >/dev/null
APP=$BUILD/app/dpdk-vsock-app/dpdk-vsock-app
PERF=$BUILD/app/vsock-perf/vsock-perf
export VSOCK_APP=$APP
mkdir -p "$OUT"
SYS=()
if command -v perf >/dev/null && perf stat -e raw_syscalls:sys_enter true >/dev/null 2>&1; then
	SYS=(--syscalls)
fi

run() {
	local name=$1
	shift
	log "$name: vsock-perf $*"
	# A failed case is in the table and the JSON; the other comparisons still run.
	"$PERF" --reps "$REPS" --time "$TIME" --json "$OUT/$name.json" "$@" | tee "$OUT/$name.txt" ||
		log "$name: some cases FAILED (see $OUT/$name.txt)"
}

# Every payload, every direction; shadow used ring against per-entry publication, A B A B.
want() { [[ " $PARTS " == *" $1 "* ]]; }
want payload && run payload --refs "${SYS[@]}" --variants batch,per-entry
# Polling against sleeping on the kick eventfd (the kernel's and rust-vmm's model).
want wait && run wait --variants poll,notify --payloads 64,4096,65536
# Burst sizes, small packets, where the burst decides the cost per packet.
want burst && run burst --modes g2h,h2g,rr --payloads 64 --bursts 1,4,16,32,64,128,256
# The 64 B streams again on a 512-entry ring (QEMU's device has 128, Firecracker's 256, virtio
# allows 32768): on QEMU's, a burst of 64 already takes half the ring (the most a burst takes),
# and the worker and the guest driver partly take turns. With room to run ahead, whether the
# backend, not the client, bounds the rate.
want ring512 && run ring512 --ring 512 --host uds,native --modes g2h,h2g --payloads 64 \
	--bursts 32,128
# Connections: 1 to 1023 (the table's limit), round-robin over all of them.
want conns && run conns --modes g2h,h2g,rr --payloads 4096 --conns 1,16,256,1023
# The host end: the app's Unix sockets against the native poll-mode API (the engine in
# vsock-perf's own process), A B A B over every payload; the ratio column is native/uds.
want native && run native "${SYS[@]}" --host uds,native
# The ring layout the guest asks for: split against packed (VIRTIO_F_RING_PACKED), A B A B;
# the ratio column is packed/split.
want rings && run rings --rings split,packed --payloads 64,4096,65536
# A guest that wants an interrupt per used entry, as Linux's driver: EVENT_IDX should bring the
# interrupts per packet near 1/burst at full rate (the irq/pk column).
want irq && run irq --guest-irq --modes g2h,h2g --payloads 64,4096
# Isolation: VM 5's 64 B round trips on the lcore where VM 3 streams 64 KiB guest -> host, in
# quiet and flood slices alternated; its own slices and slice length (the later options win).
want isolation && run isolation --isolation --reps "$ISO_SLICES" --time "$ISO_TIME"
# Scale: 1 to 256 VMs on one worker lcore, all idle but VM 3 (64 B round trips, 64 KiB g2h);
# the slope of the worker's idle round time over the VM count is the cost per idle VM per round.
want scale && run scale --scale ${SCALE_VMS:+--vms "$SCALE_VMS"} --time "$SCALE_TIME"

# Instructions per packet in the backend's steady state: dp_dev_poll and everything under
# it, and the virtqueue code alone, in the rounds that moved packets, counted by callgrind
# (stable on a noisy machine, unlike cycles), on split and on packed rings (one app under
# valgrind each, alternated as everywhere), for both host ends (callgrind.json: the app's Unix
# sockets; callgrind_native.json: the native API).
if ((CG)) && want callgrind && command -v valgrind >/dev/null; then
	mkdir -p "$OUT/callgrind"
	rm -f "$OUT"/callgrind/callgrind.out.*
	cat >"$OUT/callgrind/app.sh" <<-EOF
		#!/bin/sh
		exec valgrind --tool=callgrind --callgrind-out-file=$OUT/callgrind/callgrind.out.%p \
			--toggle-collect=dp_dev_poll "$APP" "\$@"
	EOF
	chmod +x "$OUT/callgrind/app.sh"
	log "callgrind: 64 B and 4 KiB, each direction, split and packed rings"
	VSOCK_APP=$OUT/callgrind/app.sh VSOCK_PERF_CG_DIR=$OUT/callgrind \
		"$PERF" --callgrind --reps 1 --time 2 --modes g2h,h2g --payloads 64,4096 \
		--rings split,packed --json "$OUT/callgrind.json" | tee "$OUT/callgrind.txt" ||
		log "callgrind: some cases FAILED"
	# The native host end's engine runs in vsock-perf's own process: that one under
	# callgrind, its worker and client threads taking turns fairly.
	log "callgrind: the same cases on the native host end"
	VSOCK_PERF_CG_DIR=$OUT/callgrind valgrind --tool=callgrind --fair-sched=yes \
		--log-file="$OUT/callgrind/valgrind-native.log" \
		--callgrind-out-file="$OUT/callgrind/callgrind.out.%p" --toggle-collect=dp_dev_poll \
		"$PERF" --callgrind --host native --reps 1 --time 2 --modes g2h,h2g \
		--payloads 64,4096 --rings split,packed --json "$OUT/callgrind_native.json" |
		tee "$OUT/callgrind_native.txt" ||
		log "callgrind (native): some cases FAILED"
fi

if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
	/usr/bin/python3 "$ROOT/scripts/plot_bench.py" "$OUT"
else
	log "python3-matplotlib missing (scripts/setup.sh installs it): no plots"
fi
python3 "$ROOT/scripts/bench_summary.py" "$OUT" || log "bench_summary.py failed: no summary.md"
log "results in $OUT"
