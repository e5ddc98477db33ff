#!/usr/bin/env bash
# Set up, build and run every test; the last line is "N passed, N failed, N skipped"
# (skipped: TAP TODO/SKIP directives, known gaps that are reported, not hidden).
#
# Four passes: the whole suite on the normal build, the whole suite again on an
# ASan+UBSan build (the benchmark smoke and the newest kernel's real guests aside), each
# libFuzzer target for a bounded time, and the Debian packages built, installed and
# serving the attach test (scripts/package.sh; each of the last two counts as one result).
# Usage: scripts/test.sh [meson test arguments, e.g. --suite unit];
# with arguments only the first pass runs, with those arguments.
# Environment: VSOCK_FUZZ_SECONDS (default 20) per fuzz target.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

"$VSOCK_TOP/scripts/setup.sh"
echo "test: building in $VSOCK_BUILD"
vsock_build

status=0
logs=()
extra_passed=0
extra_failed=0

run_suite() {	# BUILD-DIR [meson test arguments]
	local dir=$1
	shift
	meson test -C "$dir" --print-errorlogs --num-processes 2 "$@" || status=1
	logs+=("$dir/meson-logs/testlog.json")
}

run_suite "$VSOCK_BUILD" "$@"
if (($# == 0)); then
	asan=$(dirname "$VSOCK_BUILD")/$(basename "$VSOCK_BUILD")-asan
	echo "test: ASan+UBSan build in $asan"
	[[ -f $asan/build.ninja ]] || meson setup "$asan" "$VSOCK_TOP" -Dsanitize=true >/dev/null
	ninja -C "$asan" >/dev/null
	# The real guests of the newest kernel run once, in the first pass: QEMU under TCG is
	# most of their time, and their datapath is the same code the other guests run here.
	run_suite "$asan" --no-suite bench-smoke --no-suite qemu-newest

	echo "test: fuzzing each target for ${VSOCK_FUZZ_SECONDS:-20} s"
	if "$VSOCK_TOP/scripts/fuzz.sh" "${VSOCK_FUZZ_SECONDS:-20}"; then
		extra_passed=1
	else
		extra_failed=1
		status=1
	fi

	echo "test: Debian packages (scripts/package.sh --test)"
	if "$VSOCK_TOP/scripts/package.sh" --test "$VSOCK_BUILD" "$VSOCK_BUILD-deb"; then
		extra_passed=$((extra_passed + 1))
	else
		extra_failed=$((extra_failed + 1))
		status=1
	fi
fi

# Count TAP results across all test programs; a program that crashed or timed
# out without a "not ok" line counts as one failure.
rc=0
python3 - "$extra_passed" "$extra_failed" "${logs[@]}" <<'PY' || rc=$?
import json, re, sys
passed, failed = int(sys.argv[1]), int(sys.argv[2])
skipped = 0
for path in sys.argv[3:]:
    for line in open(path):
        t = json.loads(line)
        out = t.get("stdout") or ""
        # TAP directives: "# TODO" marks a known gap, "# SKIP" a check that could not run.
        todo = len(re.findall(r"^(?:not )?ok \d+.*# (?:TODO|SKIP)", out, re.M | re.I))
        ok = len(re.findall(r"^ok \d+", out, re.M))
        bad = len(re.findall(r"^not ok \d+", out, re.M))
        ok -= len(re.findall(r"^ok \d+.*# (?:TODO|SKIP)", out, re.M | re.I))
        bad -= len(re.findall(r"^not ok \d+.*# (?:TODO|SKIP)", out, re.M | re.I))
        if t["result"] not in ("OK", "SKIP", "EXPECTEDFAIL") and bad == 0:
            bad = 1
            print(f"test: {t['name']} ended {t['result']} ({path})")
        # Name every failure again here, at the end: a CI log is often read from its tail.
        for line in re.findall(r"^not ok \d+.*$", out, re.M):
            if not re.search(r"# (?:TODO|SKIP)", line, re.I):
                print(f"test: {t['name']}: {line} ({path})")
        passed += ok
        failed += bad
        skipped += todo
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed or passed == 0 else 0)
PY
exit $((rc ? rc : status))
