#!/usr/bin/env bash
# Build the Debian packages (dpdk-vsock, dpdk-vsock-dev) with dpkg-buildpackage from a
# copy of the tracked tree, into OUT-DIR (default build-deb/). With --test BUILD-DIR, then
# install them (root), start the packaged /usr/bin/dpdk-vsock-app under the frontend-driven
# attach test from BUILD-DIR, and remove them again; the exit status says whether all
# of that worked. Usage: scripts/package.sh [--test BUILD-DIR] [OUT-DIR]
set -euo pipefail
source "$(dirname "$0")/lib.sh"

test_build=
if [[ ${1:-} == --test ]]; then
	test_build=$2
	shift 2
fi
out=$(realpath -m "${1:-$VSOCK_TOP/build-deb}")
work=$(mktemp -d /tmp/vsock-deb-XXXXXX)
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/dpdk-vsock" "$out"
git -C "$VSOCK_TOP" ls-files -z --cached --others --exclude-standard |
	(cd "$VSOCK_TOP" && xargs -0 cp --parents -t "$work/dpdk-vsock" 2>/dev/null || true)
echo "package: dpkg-buildpackage in $work (log: $out/build.log)"
if ! (cd "$work/dpdk-vsock" && DEB_BUILD_OPTIONS="parallel=2 nocheck" \
	dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1; then
	tail -30 "$out/build.log" >&2
	echo "package: dpkg-buildpackage failed" >&2
	exit 1
fi
rm -f "$out"/*.deb
mv "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$out"/
ls "$out"/*.deb
[[ -n $test_build ]] || exit 0

debs=("$out"/dpdk-vsock_*.deb "$out"/dpdk-vsock-dev_*.deb)
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${debs[@]}" \
	>"$out/install.log" 2>&1 || { tail -20 "$out/install.log" >&2; exit 1; }
rc=0
for f in /usr/bin/dpdk-vsock-app /usr/bin/dpdk-vsock-replug /usr/bin/vsock-perf \
	/usr/bin/dpdk-vsock-exporter /lib/systemd/system/dpdk-vsock@.service \
	/lib/systemd/system/dpdk-vsock-exporter@.service /etc/dpdk-vsock/example.conf \
	/usr/share/man/man8/dpdk-vsock-app.8.gz /usr/share/man/man8/dpdk-vsock-exporter.8.gz \
	/usr/include/dpdk-vsock/vsock_pmd.h; do
	[[ -e $f ]] || { echo "package: $f is missing" >&2; rc=1; }
done
# The exporter runs with the packaged Python and its Prometheus client (a Depends).
/usr/bin/dpdk-vsock-exporter --version | grep -q '^dpdk-vsock-exporter ' ||
	{ echo "package: dpdk-vsock-exporter --version failed" >&2; rc=1; }
pkg-config --exists libdpdk-vsock || { echo "package: no libdpdk-vsock.pc" >&2; rc=1; }
# grep reads it all: grep -q's early exit would fail ldconfig's write (SIGPIPE) under pipefail.
ldconfig -p | grep 'libvsock_pmd\.so\.' >/dev/null || { echo "package: no shared library" >&2; rc=1; }
echo "package: the attach test against the packaged /usr/bin/dpdk-vsock-app"
VSOCK_APP=/usr/bin/dpdk-vsock-app "$test_build/tests/integration/test_attach" || rc=1
dpkg --purge dpdk-vsock-dev dpdk-vsock >/dev/null
exit $rc
