#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# build-guest.sh OUTDIR [PROG...]
#
# Build the test guest for QEMU into OUTDIR:
#   OUTDIR/vmlinux            uncompressed kernel, booted through PVH (only when
#                             the kernel carries the PVH ELF note)
#   OUTDIR/bzImage            the distribution kernel as is (the slower fallback)
#   OUTDIR/initramfs.cpio.gz  busybox, the virtio/vsock modules, PROGs, /init
# from the kernel of the installed linux-image-amd64 (or $GUEST_KVER), the
# busybox-static binary and the static guest programs PROG... (copied to /bin).
# GUEST_KERNEL=NAME takes the kernel and its modules from the unpacked packages
# in $VSOCK_KERNEL_CACHE/NAME instead (scripts/fetch-guest-kernel.sh: "newest").
# Nothing is rebuilt while the checksums of all inputs, this script included,
# match OUTDIR/stamp.
#
# The /init it writes reads the kernel command line:
#   vsocktest.cmd="sh command"  run it with sh -c, output on the console
#   vsocktest.reboot=N          reboot (instead of power off) after the command
#                               while fewer than N reboots have happened; the
#                               count survives the reset on the disk
#                               run-guest.sh -r attaches (/dev/vda)
#   vsocktest.shell=1           drop to a console shell instead of powering off
# and prints on the console:
#   GUEST-BOOT: <boot number, 0 first>   once modules are loaded
#   GUEST-ERROR: <what>                  when setup failed
#   GUEST-RESULT: rc=<status>            after the command
#   GUEST-REBOOT / GUEST-POWEROFF        just before leaving
set -eu

die() { echo "build-guest: $*" >&2; exit 1; }

[ $# -ge 1 ] || die "usage: build-guest.sh OUTDIR [PROG...]"
out=$1
shift

if [ -n "${GUEST_KERNEL:-}" ]; then
	# Unpacked, not installed: kernel and modules under the package root's /usr/lib/modules.
	kroot=${VSOCK_KERNEL_CACHE:-/var/cache/dpdk-vsock/kernels}/$GUEST_KERNEL
	[ -e "$kroot/.complete" ] ||
		die "no kernel '$GUEST_KERNEL' in ${kroot%/*}; run scripts/fetch-guest-kernel.sh"
	kver=$(basename "$(readlink -f "$kroot")")
	moddir=$kroot/usr/lib/modules/$kver
	kernel=$moddir/vmlinuz
else
	# The kernel linux-image-amd64 depends on, else the newest one in /boot.
	kver=${GUEST_KVER:-}
	if [ -z "$kver" ]; then
		kver=$(dpkg-query -W -f='${Depends}' linux-image-amd64 2>/dev/null |
			sed -n 's/^linux-image-\([^ ,]*\).*/\1/p')
	fi
	if [ -z "$kver" ]; then
		kver=$(ls /boot/vmlinuz-* 2>/dev/null | sed 's|^/boot/vmlinuz-||' | sort -V |
			tail -n 1)
	fi
	kernel=/boot/vmlinuz-$kver
	moddir=/lib/modules/$kver
fi
[ -r "$kernel" ] || die "no kernel found (tried '$kernel'); install linux-image-amd64"
[ -r "$moddir/modules.dep" ] || die "no $moddir/modules.dep"
busybox=$(command -v busybox) || die "busybox not found; install busybox-static"
ldd "$busybox" >/dev/null 2>&1 && die "$busybox is dynamic; install busybox-static"

# Modules wanted, then every dependency modules.dep lists, dependencies first.
# vsock_loopback lets vsock-io test itself inside the guest (CID 1). A kernel
# may build some of them in (Debian's cloud kernels do virtio_pci): not
# being a module is no error for them; the guest's vsock-io says if one is missing.
# virtio_blk: the reboot count's disk.
wanted="virtio_pci virtio_blk vmw_vsock_virtio_transport vsock_loopback"
may_be_builtin=" virtio_pci virtio_blk vsock_loopback "
mods=
add_mod() {
	local path deps d
	if ! path=$(grep -m 1 "/$1\.ko[^:]*:" "$moddir/modules.dep"); then
		case $may_be_builtin in *" $1 "*) return 0 ;; esac
		die "module $1 not in modules.dep"
	fi
	deps=${path#*:}
	path=${path%%:*}
	for d in $deps; do
		add_mod "$(basename "$d" | sed 's/\.ko.*//')"
	done
	case " $mods " in *" $moddir/$path "*) ;; *) mods="$mods $moddir/$path" ;; esac
}
for m in $wanted; do
	add_mod "$m"
done

for p in "$@"; do
	[ -x "$p" ] || die "guest program $p missing"
	ldd "$p" >/dev/null 2>&1 && die "guest program $p is not static"
done

self=$(readlink -f "$0")
mkdir -p "$out"
stamp=$(sha256sum "$kernel" "$busybox" "$self" $mods "$@" | sha256sum)
stamp="$kver $stamp"
if [ -f "$out/stamp" ] && [ "$(cat "$out/stamp")" = "$stamp" ] &&
   [ -f "$out/initramfs.cpio.gz" ] && [ -f "$out/bzImage" ]; then
	exit 0
fi
rm -f "$out/stamp" "$out/vmlinux"

tmp=$(mktemp -d "$out/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# --- kernel: the bzImage and, for PVH, the ELF inside its payload ---
cp "$kernel" "$tmp/bzImage"
# Try every compressed-stream magic in the file; the payload is the one that
# decompresses to an ELF (the others are chance matches).
try_payload() {	# MAGIC DECOMPRESSOR...
	magic=$1
	shift
	for off in $(LC_ALL=C grep -obUaP "$magic" "$kernel" | cut -d: -f1); do
		tail -c +$((off + 1)) "$kernel" | "$@" >"$tmp/vmlinux" 2>/dev/null || true
		if [ "$(head -c 4 "$tmp/vmlinux" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
			return 0
		fi
	done
	rm -f "$tmp/vmlinux"
	return 1
}
try_payload '\xfd\x37\x7a\x58\x5a\x00' xz -dc --single-stream ||
	try_payload '\x28\xb5\x2f\xfd' zstd -dcq ||
	try_payload '\x1f\x8b\x08' gzip -dc ||
	echo "build-guest: no ELF payload in $kernel; QEMU will boot the bzImage" >&2
# QEMU loads an ELF -kernel only through the PVH entry note (Xen type 18).
if [ -f "$tmp/vmlinux" ] && ! readelf -n "$tmp/vmlinux" 2>/dev/null |
		grep -q 'Xen.*0x00000012\|PHYS32_ENTRY'; then
	echo "build-guest: $kernel has no PVH entry; QEMU will boot the bzImage" >&2
	rm -f "$tmp/vmlinux"
fi

# --- initramfs ---
root=$tmp/root
mkdir -p "$root/bin" "$root/dev" "$root/proc" "$root/sys" "$root/tmp" "$root/lib/modules"
cp "$busybox" "$root/bin/busybox"
for app in sh mount insmod poweroff reboot sleep cat echo sed dd od tr ls ps kill \
	   grep head tail wc seq true false uname dmesg cut; do
	ln -s busybox "$root/bin/$app"
done
for p in "$@"; do
	cp "$p" "$root/bin/"
done
: >"$root/lib/modules/order"
# Compressed modules (.ko.xz, .ko.zst, .ko.gz) go in uncompressed: busybox insmod
# loads plain ELF only.
for m in $mods; do
	ko=$(basename "$m" | sed 's/\.ko\..*$/.ko/')
	case $m in
	*.ko.xz) xz -dc "$m" >"$root/lib/modules/$ko" ;;
	*.ko.zst) zstd -dcq "$m" >"$root/lib/modules/$ko" ;;
	*.ko.gz) gzip -dc "$m" >"$root/lib/modules/$ko" ;;
	*) cp "$m" "$root/lib/modules/$ko" ;;
	esac
	echo "$ko" >>"$root/lib/modules/order"
done

cat >"$root/init" <<'EOF'
#!/bin/sh
# Test guest init, written by scripts/build-guest.sh (see there).
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp

fail() {
	echo "GUEST-ERROR: $*"
	echo GUEST-POWEROFF
	poweroff -f
}

while read -r m; do
	insmod "/lib/modules/$m" || fail "insmod $m"
done </lib/modules/order

cmdline=$(cat /proc/cmdline)
arg() {	# NAME: value of vsocktest.NAME="..." or vsocktest.NAME=word
	echo "$cmdline" | sed -n -e "s/.*vsocktest\.$1=\"\([^\"]*\)\".*/\1/p" \
		-e "t" -e "s/.*vsocktest\.$1=\([^ ]*\).*/\1/p"
}
cmd=$(arg cmd)
reboots=$(arg reboot)
shell=$(arg shell)
reboots=${reboots:-0}

# The reboot count lives in the first byte of a one-sector disk that
# run-guest.sh attaches when reboots are allowed: RAM and the initramfs are
# fresh after a reset, the disk is not. (CMOS RAM would do without a disk, but
# newer kernels offer neither /dev/port nor its nvmem device.)
boots=0
if [ "$reboots" -gt 0 ]; then
	i=0
	while [ ! -b /dev/vda ] && [ $i -lt 50 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ -b /dev/vda ] || fail "no /dev/vda for the reboot count (run-guest.sh -r)"
	boots=$(dd if=/dev/vda bs=1 count=1 2>/dev/null | od -An -tu1 | tr -d ' ')
fi

echo "GUEST-BOOT: $boots"
rc=0
if [ -n "$cmd" ]; then
	sh -c "$cmd"
	rc=$?
fi
echo "GUEST-RESULT: rc=$rc"

# run-guest.sh gives every run a fresh disk, so no one needs to clear it.
if [ "$boots" -lt "$reboots" ]; then
	printf "\\$(printf %03o $((boots + 1)))" |
		dd of=/dev/vda bs=1 count=1 conv=notrunc,fsync 2>/dev/null
	echo GUEST-REBOOT
	reboot -f
fi
[ "$shell" = 1 ] && sh
echo GUEST-POWEROFF
poweroff -f
EOF
chmod 755 "$root/init"

(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) |
	gzip -1 -n >"$tmp/initramfs.cpio.gz"

mv "$tmp/bzImage" "$tmp/initramfs.cpio.gz" "$out/"
[ -f "$tmp/vmlinux" ] && mv "$tmp/vmlinux" "$out/"
echo "$stamp" >"$out/stamp"
