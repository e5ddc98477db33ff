#!/usr/bin/env bash
# Install everything the build, the app and the tests need (the newest guest kernel
# too: scripts/fetch-guest-kernel.sh), and reserve hugepages when the machine allows
# it. Idempotent: a second run installs nothing and changes nothing.
set -euo pipefail

PACKAGES=(
	libdpdk-dev dpdk dpdk-dev meson ninja-build pkg-config gcc libc6-dev libnuma-dev python3
	qemu-system-x86 linux-image-amd64 busybox-static cpio xz-utils zstd gzip
	clang libclang-rt-14-dev python3-matplotlib libyaml-dev
	libsystemd-dev systemd debhelper dpkg-dev kmod
	python3-prometheus-client prometheus
	valgrind stress-ng
)
# Hugepages to reserve (2 MiB each) for runs that do not pass --no-huge.
HUGEPAGES=${VSOCK_HUGEPAGES:-512}

log() { printf 'setup: %s\n' "$*"; }

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' ||
		missing+=("$p")
done
if ((${#missing[@]})); then
	if [[ $(id -u) -ne 0 ]]; then
		log "missing packages: ${missing[*]}; run as root to install them" >&2
		exit 1
	fi
	log "installing: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null
	apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi
log "packages present"

# The newest guest kernel Debian ships, beside Debian 12's, for the real-guest tests.
"$(dirname "$0")/fetch-guest-kernel.sh"

# Hugepages are an optimisation: every program here also runs with --no-huge.
huge_ok=0
if [[ $(id -u) -eq 0 && -w /proc/sys/vm/nr_hugepages ]]; then
	cur=$(cat /proc/sys/vm/nr_hugepages)
	if ((cur < HUGEPAGES)); then
		echo "$HUGEPAGES" >/proc/sys/vm/nr_hugepages 2>/dev/null || true
	fi
	if ! mountpoint -q /dev/hugepages 2>/dev/null; then
		mkdir -p /dev/hugepages
		mount -t hugetlbfs -o pagesize=2M nodev /dev/hugepages 2>/dev/null || true
	fi
	if mountpoint -q /dev/hugepages && (($(cat /proc/sys/vm/nr_hugepages) > 0)); then
		huge_ok=1
	fi
fi
if ((huge_ok)); then
	log "hugepages: $(cat /proc/sys/vm/nr_hugepages) x 2 MiB on /dev/hugepages"
else
	log "hugepages unavailable: programs will run with --no-huge (plain memory, IOVA=VA)"
fi
