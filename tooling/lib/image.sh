# shellcheck shell=bash
# Debian root filesystems and ext4 disk images of them, booted under QEMU:
# package_install_boot (tests/package/install-boot.sh) and ./kdev try
# (tooling/lib/try.sh). Not tied to the rest of kdev, so that the test can
# source this file alone.

IMAGE_SUITE=bookworm
# How an image boots: QEMU's q35 machine, whose ACPI tables route PCI
# interrupts from a static table. The default i440FX machine computes its
# _PRT in an AML loop that the debug kernel, under TCG, takes 20 s and more
# to run for every PCI device it enables: soft lockups, and ACPI's
# AE_AML_LOOP_TIMEOUT, which leaves the device without its interrupt.
# shellcheck disable=SC2034 # used by the files that source this one
IMAGE_QEMU=(qemu-system-x86_64 -machine q35 -accel tcg -m 2G -smp 2)

# image_rootfs CACHE PACKAGES LOG [OPTION...]: a tarball of a minimal
# Debian root filesystem with PACKAGES (comma-separated), made with
# mmdebstrap and its OPTIONs (its output in LOG) and kept in CACHE, which
# holds one such tarball at a time; prints its path.
image_rootfs()
{
	local cache=$1 packages=$2 log=$3 tar
	shift 3

	tar=$cache/$IMAGE_SUITE-$(echo "$packages${*:+ $*}" | sha256sum | cut -c1-12).tar
	if [ ! -s "$tar" ]; then
		rm -f "$cache/$IMAGE_SUITE"-*.tar
		mkdir -p "$cache"
		mmdebstrap --quiet --mode=root --variant=minbase --format=tar \
			--include="$packages" "$@" "$IMAGE_SUITE" "$tar.tmp" \
			> "$log" 2>&1 || return 1
		mv "$tar.tmp" "$tar"
	fi
	printf '%s\n' "$tar"
}

# image_chroot ROOT COMMAND...: COMMAND chrooted in ROOT, with /proc and
# /dev mounted in a mount namespace of its own
image_chroot()
{
	# shellcheck disable=SC2016 # expanded by the inner shell
	unshare --mount --fork -- sh -c '
		mount -t proc proc "$0/proc" && mount --rbind /dev "$0/dev" &&
		exec chroot "$0" "$@"' "$@"
}

# image_cat IMAGE PATH: a file of the ext4 IMAGE, which nothing has
# mounted or booted
image_cat()
{
	debugfs -R "cat $2" "$1" 2>/dev/null
}

# image_dump IMAGE PATH FILE: copy a file of IMAGE out to FILE
image_dump()
{
	debugfs -R "dump $2 $3" "$1" > /dev/null 2>&1 && [ -s "$3" ]
}

# image_kernels IMAGE: the kernel releases IMAGE has in /boot, oldest
# first (as Debian numbers them)
image_kernels()
{
	debugfs -R "ls -p /boot" "$1" 2>/dev/null |
		awk -F/ '$6 ~ /^vmlinuz-/ { sub(/^vmlinuz-/, "", $6); print $6 }' |
		sort -V
}
