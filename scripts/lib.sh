# Shared by the scripts: paths and EAL defaults. Source it, don't run it.
VSOCK_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VSOCK_BUILD=${VSOCK_BUILD:-$VSOCK_TOP/build}
VSOCK_APP=$VSOCK_BUILD/app/dpdk-vsock-app/dpdk-vsock-app

# EAL memory arguments: hugepages when setup.sh could reserve them, else --no-huge.
vsock_eal_mem_args() {
	if mountpoint -q /dev/hugepages 2>/dev/null &&
		(($(awk '/HugePages_Free/ {print $2}' /proc/meminfo) >= 256)); then
		echo "--huge-dir /dev/hugepages --in-memory"
	else
		echo "--no-huge -m 512 --no-shconf"
	fi
}

# Configure (once) and build the project.
vsock_build() {
	if [[ ! -f $VSOCK_BUILD/build.ninja ]]; then
		meson setup "$VSOCK_BUILD" "$VSOCK_TOP" "$@" >/dev/null
	fi
	ninja -C "$VSOCK_BUILD" >/dev/null
}
