#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# package_install_boot: a kernel's packages made with "make bindeb-pkg"
# (image, headers; the test's are of the debug kernel) and the tools
# package are installed with dpkg -i into a minimal Debian root
# filesystem made with mmdebstrap (which has Debian's own kernel and
# systemd), the tools package's examples are copied where README.md's
# "Using it" tells a user to, and that filesystem is booted by systemd from
# its own disk under QEMU with the package's kernel. image-checks.sh, a
# unit of that boot, checks from inside (see there). Then the image boots
# its own kernel once more, to show that removing the packages left it
# working.
#
# The image also gets a multiqueue virtio-net NIC, eth0 (net.ifnames=0),
# which systemd-networkd brings up, and the installed kselftests, for the
# one case the test guest cannot run: a guest whose root is on virtio 9p
# cannot suspend, this one can (image-checks.sh).
#
# usage: install-boot.sh WORK_DIR CACHE_DIR KSELFTESTS DEB...
#   WORK_DIR    emptied, then holds the image and the consoles
#   CACHE_DIR   keeps the Debian root filesystem between runs
#   KSELFTESTS  an installed kselftest tree (make install), copied in
#   DEB...      the linux-image, linux-headers and tools packages
#
# Prints the result in the format of the kselftest runner (the test's own
# KTAP indented with "# ", then one line for the test), which the report
# reads like a kselftest's.

set -uo pipefail

IMAGE_PACKAGES=linux-image-amd64,kmod,iproute2,ethtool,python3,python3-yaml,systemd-sysv,udev
IMAGE_SIZE=3G
BOOT_TIMEOUT=900
CHECKS=/usr/local/sbin/kdev-package-checks
CHECKS_UNIT=/etc/systemd/system/kdev-package-checks.service
# The tools package's examples, and where a user copies them
EXAMPLES=/usr/share/doc/adaptive-irq-tools/examples
NIC=eth0
# The second boot's init: which kernel runs, into /kdev-own-kernel
OWN_INIT=/usr/local/sbin/kdev-own-init
NAME="selftests: host: package_install_boot"
# The NIC: a multiqueue tap, in a network namespace of the boot's own
TAP=kdevpkg0
NIC_QUEUES=2

work=$1
cache=$2
kselftests=$3
shift 3
debs=("$@")
here=$(dirname "$(readlink -f "$0")")
# shellcheck source=tooling/lib/image.sh
. "$here/../../tooling/lib/image.sh"
root=$work/root
image=$work/disk.img
n=0
failed=0

msg()
{
	printf '# # %s\n' "$*"
}

case_result()
{
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		printf '# ok %d %s\n' "$n" "$2"
	else
		printf '# not ok %d %s\n' "$n" "$2"
		failed=1
	fi
}

finish()
{
	printf '# 1..%d\n' "$n"
	if [ "$failed" = 0 ]; then
		printf 'ok 1 %s\n' "$NAME"
	else
		printf 'not ok 1 %s\n' "$NAME"
	fi
	exit 0
}

skip_all()
{
	msg "SKIP: $*"
	printf 'ok 1 %s # SKIP %s\n' "$NAME" "$*"
	exit 0
}

# tail_of FILE: its last lines, as diagnostics
tail_of()
{
	tail -n 15 "$1" 2>/dev/null | tr -d '\r' | while IFS= read -r line; do
		msg "  $line"
	done
}

# install_packages: sets KREL, DEBIAN_KREL, TOOLS
install_packages()
{
	local deb names=()

	mkdir -p "$root/tmp/debs"
	for deb in "${debs[@]}"; do
		cp "$deb" "$root/tmp/debs/"
		names+=("/tmp/debs/${deb##*/}")
		case "$(dpkg-deb -f "$deb" Package)" in
		linux-image-*-dbg) ;;
		linux-image-*) KREL=$(dpkg-deb -f "$deb" Package | sed 's/^linux-image-//') ;;
		linux-headers-*) ;;
		*) TOOLS=$(dpkg-deb -f "$deb" Package) ;;
		esac
	done
	DEBIAN_KREL=$(find "$root/lib/modules" -mindepth 1 -maxdepth 1 -printf '%f\n' | head -n 1)
	msg "image's kernel $DEBIAN_KREL; installing ${names[*]##*/}"
	[ -n "${KREL:-}" ] && [ -n "$DEBIAN_KREL" ] && [ -n "${TOOLS:-}" ] ||
		return 1
	DEBIAN_FRONTEND=noninteractive image_chroot "$root" dpkg -i "${names[@]}" \
		< /dev/null > "$work/dpkg.log" 2>&1 || return 1
	rm -rf "$root/tmp/debs"
	[ -f "$root/boot/vmlinuz-$KREL" ]
}

# user_settings: the examples, copied and enabled as README.md's "Using
# it" says: GSIM knobs through tmpfiles.d, the udev rule that starts
# adaptive-irq@eth0.service, and that interface's file
user_settings()
{
	mkdir -p "$root/etc/adaptive-irq" &&
	cp "$root$EXAMPLES/gsim.conf" "$root/etc/tmpfiles.d/gsim.conf" &&
	cp "$root$EXAMPLES/90-adaptive-irq.rules" "$root/etc/udev/rules.d/" &&
	cp "$root$EXAMPLES/adaptive-irq-eth0.conf" "$root/etc/adaptive-irq/$NIC.conf"
}

# add_checks: what the guest runs, and what it needs to know
add_checks()
{
	install -m 755 "$here/image-checks.sh" "$root$CHECKS" &&
	printf '%s\n' '[Unit]' 'Description=package_install_boot checks' \
		'[Service]' 'Type=oneshot' \
		"ExecStart=$CHECKS" 'StandardOutput=journal+console' \
		'[Install]' 'WantedBy=multi-user.target' > "$root$CHECKS_UNIT" &&
	image_chroot "$root" systemctl enable kdev-package-checks.service systemd-networkd \
		> "$work/systemctl.log" 2>&1 &&
	printf '%s\n' '[Match]' "Name=$NIC" '[Link]' 'RequiredForOnline=no' \
		'[Network]' 'ConfigureWithoutCarrier=yes' 'LinkLocalAddressing=no' \
		> "$root/etc/systemd/network/10-$NIC.network" &&
	printf '%s\n' '#!/bin/sh' 'mount -t proc proc /proc' \
		'uname -r > /kdev-own-kernel' sync 'mount -o remount,ro /' \
		'echo o > /proc/sysrq-trigger' 'sleep 30' > "$root$OWN_INIT" &&
	chmod 755 "$root$OWN_INIT" &&
	printf 'KREL=%s\nDEBIAN_KREL=%s\nTOOLS=%s\n' "$KREL" "$DEBIAN_KREL" \
		"$TOOLS" > "$root/kdev-package.env" &&
	mkdir -p "$root/opt/kdev" &&
	cp -r "$kselftests" "$root/opt/kdev/kselftest"
}

# boot KERNEL INITRD CONSOLE [INIT]: the image, from its own disk, with
# INIT as PID 1, else with systemd
boot()
{
	local initrd=() init=

	[ -n "$2" ] && initrd=(-initrd "$2")
	[ -n "${4:-}" ] && init=" init=$4"
	# shellcheck disable=SC2016 # expanded by the inner shell
	# --foreground: QEMU stays in the caller's process group, so that an
	# interrupted run does not leave it behind
	timeout --foreground -k 10 "$BOOT_TIMEOUT" unshare --net -- sh -c '
		ip tuntap add dev "$0" mode tap multi_queue &&
		ip link set dev "$0" up && exec "$@"' "$TAP" \
		"${IMAGE_QEMU[@]}" -nographic -no-reboot \
		-kernel "$1" "${initrd[@]}" \
		-drive file="$image",format=raw,if=virtio \
		-netdev tap,id=n0,ifname="$TAP",script=no,downscript=no,queues="$NIC_QUEUES" \
		-device virtio-net-pci,netdev=n0,mq=on,vectors=$((2 * NIC_QUEUES + 2)) \
		-append "console=ttyS0 root=/dev/vda rw net.ifnames=0 panic=-1 quiet$init" \
		< /dev/null > "$3" 2>&1
}

printf '# KTAP version 1\n'
[ "$(id -u)" = 0 ] || skip_all "needs root (mmdebstrap, chroot, image ownership)"
rm -rf "$work"
mkdir -p "$work" "$root"

if tar=$(image_rootfs "$cache" "$IMAGE_PACKAGES" "$work/mmdebstrap.log"); then
	msg "Debian $IMAGE_SUITE root filesystem: $tar"
	tar -xf "$tar" -C "$root" --numeric-owner
	case_result $? "Debian root filesystem made with mmdebstrap"
else
	tail_of "$work/mmdebstrap.log"
	case_result 1 "Debian root filesystem made with mmdebstrap"
	finish
fi

install_packages
rc=$?
[ "$rc" = 0 ] || tail_of "$work/dpkg.log"
case_result "$rc" "packages installed with dpkg -i"
[ "$rc" = 0 ] || finish

user_settings
case_result $? "the tools package's examples copied into /etc"

add_checks && mkfs.ext4 -q -F -L kdevroot -d "$root" "$image" "$IMAGE_SIZE" \
	> "$work/mkfs.log" 2>&1
rc=$?
[ "$rc" = 0 ] || tail_of "$work/mkfs.log"
case_result "$rc" "disk image made"

start=$SECONDS
boot "$root/boot/vmlinuz-$KREL" "" "$work/console.log"
rc=$?
msg "package's kernel: QEMU ended with $rc after $((SECONDS - start)) s"
ktap=$(image_cat "$image" /kdev-package.ktap)
plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' <<< "$ktap")
results=$(grep -cE '^(not )?ok [0-9]+ ' <<< "$ktap")
if [ "$rc" = 0 ] && [ -n "$plan" ] && [ "$results" = "$plan" ] &&
   grep -qx '# done' <<< "$ktap"; then
	# The guest's own results become this test's cases
	while IFS= read -r line; do
		case "$line" in
		"ok "*)	case_result 0 "${line#ok [0-9]* }" ;;
		"not ok "*) case_result 1 "${line#not ok [0-9]* }" ;;
		"# "*)	msg "${line#\# }" ;;
		esac
	done <<< "$ktap"
else
	msg "the guest did not finish its checks (${results:-0} of ${plan:-?} results); its console ended with:"
	tail_of "$work/console.log"
	case_result 1 "guest booted the package's kernel and checked it"
	finish
fi

# The image's own kernel, as the image holds it after the removal
start=$SECONDS
image_dump "$image" "/boot/vmlinuz-$DEBIAN_KREL" "$work/own-vmlinuz"
image_dump "$image" "/boot/initrd.img-$DEBIAN_KREL" "$work/own-initrd"
boot "$work/own-vmlinuz" "$work/own-initrd" "$work/console-own.log" "$OWN_INIT"
own=$(image_cat "$image" /kdev-own-kernel)
msg "image's own kernel: ${own:-no answer} after $((SECONDS - start)) s"
[ "$own" = "$DEBIAN_KREL" ] || tail_of "$work/console-own.log"
[ "$own" = "$DEBIAN_KREL" ]
case_result $? "the image's own kernel boots after the removal"
finish
