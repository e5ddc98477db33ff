#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# fetch-guest-kernel.sh: the newest Linux Debian ships (sid's linux-image-cloud-amd64), for
# the real-guest tests beside Debian 12's own kernel. Downloaded with apt through a private
# apt state (its own sources, lists and cache: the system's apt is not touched), unpacked
# without installing, its modules indexed with depmod:
#
#   $VSOCK_KERNEL_CACHE/<kver>/usr/lib/modules/<kver>/{vmlinuz,kernel/...,modules.dep}
#   $VSOCK_KERNEL_CACHE/newest -> <kver>
#
# scripts/build-guest.sh boots it with GUEST_KERNEL=newest. A kernel already fetched is
# kept (a second run downloads nothing); VSOCK_KERNEL_REFRESH=1 looks for a newer one.
# Environment: VSOCK_KERNEL_CACHE (default /var/cache/dpdk-vsock/kernels),
# VSOCK_KERNEL_SUITE (default sid), VSOCK_KERNEL_META (default linux-image-cloud-amd64).
set -euo pipefail

cache=${VSOCK_KERNEL_CACHE:-/var/cache/dpdk-vsock/kernels}
suite=${VSOCK_KERNEL_SUITE:-sid}
meta=${VSOCK_KERNEL_META:-linux-image-cloud-amd64}

log() { printf 'fetch-guest-kernel: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

if [[ -e $cache/newest/.complete && ${VSOCK_KERNEL_REFRESH:-0} != 1 ]]; then
	log "have $(readlink "$cache/newest") in $cache"
	exit 0
fi
command -v depmod >/dev/null || die "depmod not found; install kmod"

mkdir -p "$cache/apt/lists/partial" "$cache/apt/archives/partial" "$cache/apt/sources"
cat >"$cache/apt/sources/$suite.sources" <<EOF
Types: deb
URIs: http://deb.debian.org/debian
Suites: $suite
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
apt_opts=(
	-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$cache/apt/sources"
	-o "Dir::State::Lists=$cache/apt/lists" -o "Dir::Cache=$cache/apt"
	-o "Dir::State::status=/dev/null" -o "Debug::NoLocking=1" -o "APT::Sandbox::User=root"
	-q
)
log "looking up $meta in Debian $suite"
apt-get "${apt_opts[@]}" update >/dev/null || die "apt-get update of $suite failed"

# The meta package depends on the image package of one version (linux-image-<kver>), which
# depends on the binary (the kernel) and modules packages of that version.
deps() { apt-cache "${apt_opts[@]}" depends --no-recommends --no-suggests "$1" 2>/dev/null |
	sed -n 's/^ *Depends: //p'; }
image=$(deps "$meta" | grep '^linux-image-[0-9]' | head -n 1 || true)
[[ -n $image ]] || die "$meta names no kernel in $suite"
kver=${image#linux-image-}
pkgs=$(deps "$image" | grep -xF -e "linux-binary-$kver" -e "linux-modules-$kver" | sort -u ||
	true)
[[ -n $pkgs ]] || die "$image depends on no kernel package"

dir=$cache/$kver
if [[ ! -e $dir/.complete ]]; then
	tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	log "downloading $kver: $(echo $pkgs)"
	# shellcheck disable=SC2086
	(cd "$tmp" && apt-get "${apt_opts[@]}" download $pkgs >/dev/null) ||
		die "download of $kver failed"
	mkdir -p "$tmp/root"
	for deb in "$tmp"/*.deb; do
		dpkg-deb -x "$deb" "$tmp/root"
	done
	mods=$tmp/root/usr/lib/modules/$kver
	[[ -f $mods/vmlinuz ]] || die "no vmlinuz in the packages of $kver"
	# depmod looks under <base>/lib/modules; the packages put them under /usr.
	ln -sfn usr/lib "$tmp/root/lib"
	# Its warnings name the lists the packages do not ship (modules.order, .builtin).
	depmod -b "$tmp/root" "$kver" 2>"$tmp/depmod.log" ||
		die "depmod of $kver failed: $(cat "$tmp/depmod.log")"
	rm -rf "$dir"
	mv "$tmp/root" "$dir"
	touch "$dir/.complete"
fi
ln -sfn "$kver" "$cache/newest"
log "newest guest kernel: $kver in $dir"
