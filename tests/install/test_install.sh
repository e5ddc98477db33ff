#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# `meson install` as a user of the installed copy sees it: install into a DESTDIR, check
# what is there (programs, shared library with its soname, static library, headers,
# pkg-config file, man pages, units, sample config, the re-plug command, the Prometheus
# exporter), verify the units with systemd-analyze, then build the native-API example from
# its installed sources alone (no source of the app beside them) in a directory outside the
# tree with `pkg-config --cflags --libs libdpdk-vsock`, shared and static, and run each: it
# starts the engine on a VM and listens, and stops cleanly.
# Usage: test_install.sh BUILD_DIR (TAP).
set -uo pipefail
build=$1
n=0
fails=0
ok() {	# CONDITION-STATUS DESCRIPTION
	n=$((n + 1))
	if [[ $1 == 0 ]]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fails=$((fails + 1)); fi
}
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }

work=$(mktemp -d /tmp/vsock-install-XXXXXX)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$work"
}
trap cleanup EXIT
dest=$work/dest

meson install -C "$build" --no-rebuild --destdir "$dest" >"$work/install.log" 2>&1
ok $? "meson install --destdir"
intro=$(meson introspect "$build" --buildoptions)
opt() { python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == sys.argv[1]))' "$1" <<<"$intro"; }
prefix=$(opt prefix)
libdir=$prefix/$(opt libdir)
bindir=$prefix/$(opt bindir)
sysconfdir=$(opt sysconfdir)
[[ $sysconfdir == /* ]] || sysconfdir=$prefix/$sysconfdir
version=$(meson introspect "$build" --projectinfo | python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
so_major=$(readlink "$dest$libdir/libvsock_pmd.so")
root=$dest$prefix

for f in "$bindir/dpdk-vsock-app" "$bindir/vsock-perf" "$bindir/dpdk-vsock-replug" \
	"$bindir/dpdk-vsock-exporter"; do
	[[ -x $dest$f ]]
	ok $? "installed executable $f"
done
[[ -f $dest$libdir/libvsock_pmd.so.$version && -f $dest$libdir/libvsock_pmd.a ]]
ok $? "shared libvsock_pmd.so.$version and static libvsock_pmd.a"
soname=$(readelf -d "$dest$libdir/libvsock_pmd.so.$version" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[[ -n $soname && -e $dest$libdir/$soname && $so_major == "$soname" ]]
ok $? "soname $soname, and libvsock_pmd.so links to it"
# Symbols only: the version node (VSOCK_PMD_0, an absolute symbol) is no function.
exported=$(nm -D --defined-only "$dest$libdir/libvsock_pmd.so.$version" | awk '$2 != "A" {sub(/@.*/, "", $3); print $3}')
! grep -qv '^vsock_pmd_\|^vsock_native_' <<<"$exported" &&
	grep -qx vsock_pmd_version <<<"$exported" && grep -qx vsock_pmd_start <<<"$exported"
ok $? "the shared library exports the public API only"
for h in vsock_pmd.h vsock_pmd_native.h vsock_pmd_version.h; do
	[[ -f $root/include/dpdk-vsock/$h ]]
	ok $? "header include/dpdk-vsock/$h"
done
grep -q "^#define VSOCK_PMD_VERSION \"$version\"" "$root/include/dpdk-vsock/vsock_pmd_version.h"
ok $? "VSOCK_PMD_VERSION is the project version $version"
pc=$dest$libdir/pkgconfig/libdpdk-vsock.pc
grep -q '^Requires:.*libdpdk' "$pc" && grep -q "^Version: $version" "$pc"
ok $? "libdpdk-vsock.pc: Requires libdpdk, Version $version"
for m in dpdk-vsock-app.8 dpdk-vsock-exporter.8; do
	[[ -f $root/share/man/man8/$m ]]
	ok $? "man page man8/$m"
done
for u in dpdk-vsock@.service dpdk-vsock-exporter@.service; do
	[[ -f $root/lib/systemd/system/$u || -f $dest$(opt systemdunitdir)/$u ]]
	ok $? "unit $u"
done
[[ -f $dest$sysconfdir/dpdk-vsock/example.conf ]]
ok $? "sample $sysconfdir/dpdk-vsock/example.conf"
"$dest$bindir/dpdk-vsock-replug" --help >/dev/null 2>&1
ok $? "dpdk-vsock-replug --help"
"$dest$bindir/dpdk-vsock-app" --version >"$work/version" 2>&1 &&
	grep -q "^dpdk-vsock-app $version " "$work/version" && grep -q 'built with DPDK' "$work/version"
ok $? "installed dpdk-vsock-app --version: $(head -1 "$work/version")"
"$dest$bindir/dpdk-vsock-exporter" --version >"$work/version" 2>&1 &&
	grep -qx "dpdk-vsock-exporter $version" "$work/version"
ok $? "installed dpdk-vsock-exporter --version: $(head -1 "$work/version")"

# The installed units, their ExecStart and man page looked up inside the DESTDIR.
installed_unit() { ls "$root/lib/systemd/system/$1" "$dest$(opt systemdunitdir)/$1" 2>/dev/null | head -1; }
unit=$(installed_unit dpdk-vsock@.service)
for u in dpdk-vsock dpdk-vsock-exporter; do
	if ! command -v systemd-analyze >/dev/null; then
		skip "systemd-analyze verify $u@example.service" "systemd-analyze is not installed"
		continue
	fi
	mkdir -p "$work/units"
	sed "s|^ExecStart=/|ExecStart=$dest/|" "$(installed_unit "$u@.service")" \
		>"$work/units/$u@example.service"
	MANPATH=$root/share/man systemd-analyze verify "$work/units/$u@example.service" \
		>"$work/verify.log" 2>&1
	rc=$?
	sed 's/^/# /' "$work/verify.log"
	[[ $rc == 0 && ! -s $work/verify.log ]]
	ok $? "systemd-analyze verify $u@example.service: no error, no warning"
done
grep -q '^Type=notify' "$unit" && grep -q '^Restart=on-failure' "$unit" &&
	grep -q '^LimitNOFILE=' "$unit" && grep -q '^After=.*dev-hugepages.mount' "$unit"
ok $? "the unit: Type=notify, Restart=on-failure, LimitNOFILE, After=dev-hugepages.mount"
exporter_unit=$(installed_unit dpdk-vsock-exporter@.service)
grep -q "^ExecStart=$bindir/dpdk-vsock-exporter --file-prefix=dpdk-vsock-%i " "$exporter_unit" &&
	grep -q '^Environment=RUNTIME_DIRECTORY=/run/dpdk-vsock/%i$' "$exporter_unit" &&
	grep -q '^Environment="EXPORTER_LISTEN=127.0.0.1:9877"' "$exporter_unit" &&
	grep -q '^After=dpdk-vsock@%i.service' "$exporter_unit"
ok $? "the exporter's unit: the instance's telemetry, 127.0.0.1:9877 unless NAME.env says"

# An out-of-tree program on the installed copy, as its developer would build it. The
# DESTDIR is the sysroot: pkg-config puts it before every path, libdpdk's too, so the
# system's DPDK headers are made visible in it, as a cross sysroot has them.
for d in $(pkg-config --cflags-only-I libdpdk | tr ' ' '\n' | sed -n 's/^-I//p'); do
	d=$(realpath -m "$d")
	if [[ -d $d && ! -e $dest$d ]]; then
		mkdir -p "$(dirname "$dest$d")" && ln -s "$d" "$dest$d"
	fi
done
export PKG_CONFIG_SYSROOT_DIR=$dest
export PKG_CONFIG_PATH=$dest$libdir/pkgconfig
pkg-config --cflags --libs libdpdk-vsock >"$work/pc" 2>&1
ok $? "pkg-config --cflags --libs libdpdk-vsock: $(cat "$work/pc")"
run_example() {	# DIR KIND
	local dir=$1 kind=$2 pid i
	mkdir -p "$dir/run"
	LD_LIBRARY_PATH=$dest$libdir "$dir/vsock-native-example" --no-huge -m 256 --no-pci \
		--no-shconf -l 0-1 --log-level=lib.eal:error -- \
		--vm "cid=3,socket=$dir/run/vm3.sock,uds=$dir/run/vm3.vsock" --port 5000 \
		>"$dir/log" 2>&1 &
	pid=$!
	pids+=("$pid")
	for ((i = 0; i < 600; i++)); do
		grep -qs "^LISTENING 5000" "$dir/log" && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	grep -q '^LISTENING 5000' "$dir/log" && [[ -S $dir/run/vm3.sock && -S $dir/run/vm3.vsock ]]
	ok $? "$kind example: engine started, VM 3's sockets listening, port 5000 listened on"
	kill -TERM "$pid"
	wait "$pid"
	ok $? "$kind example: stopped cleanly on SIGTERM"
	[[ ! -e $dir/run/vm3.sock && ! -e $dir/run/vm3.vsock ]]
	ok $? "$kind example: its sockets removed"
	sed 's/^/# /' "$dir/log" | tail -5
}
# Self-contained, as DPDK's examples are: its own sources and its Makefile, none of the app's.
example=$root/share/doc/dpdk-vsock/examples/vsock-native-example
[[ $(cd "$example" && ls | tr '\n' ' ') == "Makefile main.c " ]]
ok $? "the installed example is its own main.c and Makefile only ($(cd "$example" && ls | tr '\n' ' '))"
for kind in shared static; do
	dir=$work/out-of-tree-$kind
	cp -r "$example" "$dir"
	args=()
	[[ $kind == static ]] && args=(static=1)
	# A sanitized build installs a sanitized library: its users must link the runtimes.
	san=
	[[ $(opt sanitize) == True ]] && san=-fsanitize=address,undefined
	CFLAGS=$san LDFLAGS=$san make -C "$dir" "${args[@]}" >"$dir/build.log" 2>&1
	ok $? "$kind: make in a copy of the installed example outside the tree"
	sed 's/^/# /' "$dir/build.log" | head -20
	if [[ $kind == shared ]]; then
		LD_LIBRARY_PATH=$dest$libdir ldd "$dir/vsock-native-example" | grep "$soname => $dest" >/dev/null
		ok $? "shared: the example loads $soname from the installed copy"
	else
		! ldd "$dir/vsock-native-example" | grep libvsock_pmd >/dev/null
		ok $? "static: the example has libvsock_pmd linked in"
	fi
	run_example "$dir" "$kind"
done

echo "1..$n"
((fails == 0))
