# shellcheck shell=bash
# ./kdev try: a throwaway Debian 12 virtual machine to try the packages in,
# as README.md's "Using it" describes them, before a real machine gets
# them. It boots like a machine with a boot loader: the newest kernel in
# its /boot, with that kernel's initrd, and again after every reboot.

# shellcheck source=tooling/lib/image.sh
. "$KDEV_ROOT/tooling/lib/image.sh"

KDEV_TRY_DIR=$KDEV_CACHE/try
# What a small Debian server has, and what "Using it" runs: sudo, man,
# ssh to reach it, curl to load it. Not python3-yaml: apt installs it
# with the tools package, as on a user's machine, from the package lists
# the image keeps.
KDEV_TRY_PACKAGES=linux-image-amd64,kmod,iproute2,ethtool,procps,python3,systemd-sysv,udev,dbus,openssh-server,sudo,man-db,less,curl,ca-certificates
KDEV_TRY_SSH_PORT=${KDEV_TRY_SSH_PORT:-10022}
KDEV_TRY_HOSTNAME=kdev-try

# try_debs: the packages to try: ./kdev package's if it made some, else
# package_install_boot's
try_debs()
{
	local dir

	for dir in "$KDEV_PKG_OUT" "$KDEV_PKG_TEST_OUT"; do
		if compgen -G "$dir/${KDEV_TOOLS_PACKAGE}_*.deb" > /dev/null; then
			find "$dir" -maxdepth 1 -name '*.deb' ! -name '*-dbg_*' | sort
			return 0
		fi
	done
	die "no packages to try: run ./kdev package (or ./kdev test) first"
}

# try_image DEB...: a fresh disk image with DEBs in /root/debs (not
# installed), root reachable by ssh with a key of the try directory, and
# eth0 configured by DHCP
try_image()
{
	local root=$KDEV_TRY_DIR/root tar key=$KDEV_TRY_DIR/id_ed25519

	tar=$(image_rootfs "$KDEV_CACHE/try-image" "$KDEV_TRY_PACKAGES" \
		"$KDEV_TRY_DIR/mmdebstrap.log" --skip=cleanup/apt/lists) ||
		die "mmdebstrap failed (see $KDEV_TRY_DIR/mmdebstrap.log)"
	rm -rf "$root"
	mkdir -p "$root"
	tar -xf "$tar" -C "$root" --numeric-owner
	[ -s "$key" ] || ssh-keygen -q -t ed25519 -N '' -C kdev-try -f "$key"
	install -d -m 700 "$root/root/.ssh"
	install -m 600 "$key.pub" "$root/root/.ssh/authorized_keys"
	mkdir -p "$root/root/debs"
	cp "$@" "$root/root/debs/"
	echo "$KDEV_TRY_HOSTNAME" > "$root/etc/hostname"
	printf '127.0.1.1\t%s\n' "$KDEV_TRY_HOSTNAME" >> "$root/etc/hosts"
	printf '%s\n' '[Match]' 'Name=eth0' '[Network]' 'DHCP=yes' \
		> "$root/etc/systemd/network/10-eth0.network"
	image_chroot "$root" systemctl enable systemd-networkd ssh \
		> "$KDEV_TRY_DIR/systemctl.log" 2>&1 ||
		die "cannot enable the VM's services (see $KDEV_TRY_DIR/systemctl.log)"
	mkfs.ext4 -q -F -L kdevtry -d "$root" "$KDEV_TRY_DIR/disk.img" 8G \
		> "$KDEV_TRY_DIR/mkfs.log" 2>&1 ||
		die "mkfs.ext4 failed (see $KDEV_TRY_DIR/mkfs.log)"
	rm -rf "$root"
}

# try_boot KREL: the image with kernel release KREL, until it powers off
# or reboots; its console goes to console.log. Returns 0 for a reboot.
try_boot()
{
	local krel=$1 image=$KDEV_TRY_DIR/disk.img log=$KDEV_TRY_DIR/console.log
	local initrd=()

	image_dump "$image" "/boot/vmlinuz-$krel" "$KDEV_TRY_DIR/vmlinuz" ||
		die "the image has no /boot/vmlinuz-$krel"
	rm -f "$KDEV_TRY_DIR/initrd"
	image_dump "$image" "/boot/initrd.img-$krel" "$KDEV_TRY_DIR/initrd" &&
		initrd=(-initrd "$KDEV_TRY_DIR/initrd")
	"${IMAGE_QEMU[@]}" -display none -no-reboot \
		-kernel "$KDEV_TRY_DIR/vmlinuz" "${initrd[@]}" \
		-drive file="$image",format=raw,if=virtio \
		-netdev user,id=n0,hostfwd=tcp:127.0.0.1:"$KDEV_TRY_SSH_PORT"-:22 \
		-device virtio-net-pci,netdev=n0 \
		-serial file:"$log" \
		-append "console=ttyS0 root=/dev/vda rw net.ifnames=0" < /dev/null ||
		die "QEMU failed (see $log)"
	grep -q 'reboot: Restarting system' "$log"
}

cmd_try()
{
	local debs krel ssh=$KDEV_TRY_DIR/ssh

	[ $# -gt 0 ] || mapfile -t debs < <(try_debs)
	[ $# -eq 0 ] || debs=("$@")
	apt_ensure mmdebstrap e2fsprogs openssh-client qemu-system-x86
	mkdir -p "$KDEV_TRY_DIR"
	log "a new disk image, with ${debs[*]##*/} in /root/debs"
	try_image "${debs[@]}"
	cat > "$ssh" <<-EOF
	#!/bin/sh
	# ssh into the VM of ./kdev try, as root
	exec ssh -i $KDEV_TRY_DIR/id_ed25519 -p $KDEV_TRY_SSH_PORT \\
		-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \\
		-o LogLevel=ERROR root@127.0.0.1 "\$@"
	EOF
	chmod 755 "$ssh"
	while :; do
		krel=$(image_kernels "$KDEV_TRY_DIR/disk.img" | tail -n 1)
		log "booting $krel (console: $KDEV_TRY_DIR/console.log); log in with $ssh"
		try_boot "$krel" || break
		log "the VM rebooted"
	done
	log "the VM powered off and is gone; run ./kdev try again for a new one"
}
