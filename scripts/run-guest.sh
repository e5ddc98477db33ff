#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# run-guest.sh -g GUESTDIR [-s SOCK] [-q QMP] [-r N] [-t SECS] [-m MB]
#              [-k vmlinux|bzImage] [-a APPEND] [--] [CMD...]
#
# Boot the test guest built by scripts/build-guest.sh under QEMU/TCG, run CMD
# (a shell command line, without double quotes) inside it, and return when the
# guest powers off. The serial console goes to stdout, QEMU's own messages to
# stderr. Exit status: QEMU's, or 124 when the timeout killed it.
#   -s SOCK  attach vhost-user-vsock-pci to the vhost-user server at SOCK
#   -q QMP   QEMU's QMP on the Unix socket QMP, and the vsock device (id vsock0)
#            on a hot-pluggable PCIe root port, for scripts/vsock-replug.py
#   -r N     let the guest reboot itself N times (after each run of CMD)
#   -t SECS  kill QEMU after SECS seconds (default 120)
#   -m MB    guest memory, shared through a memfd for vhost-user (default 256)
#   -k KIND  kernel to boot: vmlinux through PVH (the default when the build
#            produced one; about 1.5 s faster to the first marker) or bzImage
#   -a TEXT  more kernel command line
# VSOCK_DEVICE_OPTS in the environment is appended to the -device option,
# e.g. ",packed=on" for packed virtqueues; VSOCK_CHARDEV_OPTS to the -chardev
# option, e.g. ",server=on,wait=on" for an app in client mode (--vm ...,client=1).
set -eu

die() { echo "run-guest: $*" >&2; exit 2; }

dir=${GUEST_DIR:-}
sock=
qmp=
reboots=0
secs=120
mem=256
kind=
append=
while getopts g:s:q:r:t:m:k:a: o; do
	case $o in
	g) dir=$OPTARG ;;
	s) sock=$OPTARG ;;
	q) qmp=$OPTARG ;;
	r) reboots=$OPTARG ;;
	t) secs=$OPTARG ;;
	m) mem=$OPTARG ;;
	k) kind=$OPTARG ;;
	a) append=$OPTARG ;;
	*) die "bad option" ;;
	esac
done
shift $((OPTIND - 1))
cmd="$*"

[ -n "$dir" ] && [ -f "$dir/initramfs.cpio.gz" ] || die "no guest in '$dir' (-g)"
case $cmd in *\"*) die "the guest command cannot contain double quotes" ;; esac
if [ -z "$kind" ]; then
	kind=bzImage
	[ -f "$dir/vmlinux" ] && kind=vmlinux
fi
[ -f "$dir/$kind" ] || die "no kernel $dir/$kind"

set -- -accel tcg -machine q35 -smp 1 -m "$mem" \
	-object "memory-backend-memfd,id=mem,size=${mem}M,share=on" -numa node,memdev=mem \
	-nodefaults -no-user-config -display none -serial stdio \
	-kernel "$dir/$kind" -initrd "$dir/initramfs.cpio.gz"
plug=
if [ -n "$qmp" ]; then
	# A device on q35's root complex cannot be unplugged; one on a root port can.
	set -- "$@" -qmp "unix:$qmp,server=on,wait=off" \
		-device pcie-root-port,id=vsock-port,bus=pcie.0,chassis=1
	plug=",bus=vsock-port,id=vsock0"
fi
[ -n "$sock" ] && set -- "$@" -chardev "socket,id=vsock,path=$sock${VSOCK_CHARDEV_OPTS:-}" \
	-device "vhost-user-vsock-pci,chardev=vsock$plug${VSOCK_DEVICE_OPTS:-}"
# Without -no-reboot a guest reset restarts it (with a fresh initramfs). The
# guest counts its reboots on a one-sector disk, zeroed here for every run: a
# file opened on fd 3 and unlinked at once, which QEMU (after the exec below)
# opens again through /proc/self/fd/3, so nothing is left behind.
if [ "$reboots" -gt 0 ]; then
	boots=$(mktemp "${TMPDIR:-/tmp}/vsock-boots.XXXXXX")
	head -c 512 /dev/zero >"$boots"
	exec 3<>"$boots"
	rm -f "$boots"
	set -- "$@" -drive file=/proc/self/fd/3,if=none,id=boots,format=raw \
		-device virtio-blk-pci,drive=boots
else
	set -- "$@" -no-reboot
fi
# quiet: the serial console is slow under TCG; mitigations=off: saves boot
# time patching alternatives; panic=-1: a guest panic ends QEMU at once;
# no_timer_check: the boot's check that the IO-APIC timer ticks in time fails
# when the host is busy (emulated time runs late) and panics the guest.
set -- "$@" -append "console=ttyS0 quiet mitigations=off panic=-1 no_timer_check \
vsocktest.reboot=$reboots vsocktest.cmd=\"$cmd\" $append"

exec timeout -k 5 "$secs" qemu-system-x86_64 "$@" </dev/null
