#!/usr/bin/env bash
# Build the libFuzzer targets (clang, -Dfuzz=true) and run each for SECONDS
# (default 60). The seed corpus and the crash regressions are copied to a
# temporary directory, so the tree stays clean; a crash, leak or timeout is
# kept under the build directory, its path printed, and the script fails.
# Usage: scripts/fuzz.sh [SECONDS]
# Environment: VSOCK_FUZZ_BUILD (default: build-fuzz beside $VSOCK_BUILD),
#              FUZZ_RSS_MB (default 2048).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

secs=${1:-60}
build=${VSOCK_FUZZ_BUILD:-$(dirname "$VSOCK_BUILD")/build-fuzz}
targets=(virtq virtq_packed vsock_pkt conn)
fuzzdir=$VSOCK_TOP/tests/fuzz

if [[ ! $secs =~ ^[0-9]+$ ]] || ((secs == 0)); then
	echo "usage: $0 [SECONDS > 0]" >&2
	exit 2
fi
command -v clang >/dev/null || { echo "fuzz: clang not found" >&2; exit 1; }

if [[ ! -f $build/build.ninja ]]; then
	CC=clang meson setup "$build" "$VSOCK_TOP" -Dfuzz=true >/dev/null
else
	meson configure "$build" -Dfuzz=true >/dev/null
fi
ninja -C "$build" "${targets[@]/#/tests/fuzz/fuzz_}" >/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
crashes=$build/fuzz-crashes
mkdir -p "$crashes"

status=0
for t in "${targets[@]}"; do
	bin=$build/tests/fuzz/fuzz_$t
	if [[ ! -x $bin ]]; then
		echo "fuzz: $bin not built (is $build configured with CC=clang?)" >&2
		exit 1
	fi
	mkdir -p "$work/$t"
	cp "$fuzzdir/corpus/$t"/* "$work/$t"/
	if [[ -d $fuzzdir/regressions/$t ]]; then
		cp "$fuzzdir/regressions/$t"/* "$work/$t"/ 2>/dev/null || true
	fi
	log=$crashes/$t.log
	echo "fuzz: $t for ${secs}s (log $log)"
	rc=0
	# An input takes milliseconds; the timeout is wall time, and a loaded machine can stall
	# a process for seconds: only a hang may trip it.
	"$bin" -max_total_time="$secs" -rss_limit_mb="${FUZZ_RSS_MB:-2048}" -timeout=60 \
		-max_len=4096 -print_final_stats=1 -artifact_prefix="$crashes/$t-" \
		"$work/$t" >"$log" 2>&1 || rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	if ((rc != 0)); then
		status=1
		found=$(sed -n 's/.*Test unit written to //p' "$log" | tail -1)
		grep -m1 -E "ERROR: |invariant failed|runtime error" "$log" || tail -5 "$log"
		echo "fuzz: $t: FAILED (exit $rc), input saved at ${found:-<none, see log>}"
	else
		echo "fuzz: $t: ${runs:-?} runs, corpus $(ls "$work/$t" | wc -l) inputs, no crash"
	fi
done
exit $status
