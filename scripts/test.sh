#!/usr/bin/env bash
# Set up, build and run every test; the last line is "N passed, N failed".
# Usage: scripts/test.sh [meson test arguments, e.g. --suite unit]
set -euo pipefail
source "$(dirname "$0")/lib.sh"

"$VSOCK_TOP/scripts/setup.sh"
echo "test: building in $VSOCK_BUILD"
vsock_build

status=0
meson test -C "$VSOCK_BUILD" --print-errorlogs --num-processes 2 "$@" || status=$?

# Count TAP results across all test programs; a program that crashed or timed
# out without a "not ok" line counts as one failure.
rc=0
python3 - "$VSOCK_BUILD/meson-logs/testlog.json" <<'PY' || rc=$?
import json, re, sys
passed = failed = 0
for line in open(sys.argv[1]):
    t = json.loads(line)
    out = t.get("stdout") or ""
    ok = len(re.findall(r"^ok \d+", out, re.M))
    bad = len(re.findall(r"^not ok \d+", out, re.M))
    if t["result"] not in ("OK", "SKIP", "EXPECTEDFAIL") and bad == 0:
        bad = 1
        print(f"test: {t['name']} ended {t['result']}")
    passed += ok
    failed += bad
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed or passed == 0 else 0)
PY
exit $((rc ? rc : status))
