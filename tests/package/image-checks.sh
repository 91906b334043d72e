#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# PID 1 of the package test's Debian image (see install-boot.sh), booted
# from its own disk. Checks, as KTAP into /kdev-package.ktap: the running
# kernel is the installed package's, napi-set and napi-get work on a
# netdevsim device, the GSIM procfs directory is there, virtio_net keeps
# its NAPI settings across a suspend (the case the 9p-rooted test guest
# skips), and removing the package leaves the image's own kernel in
# place. Then powers off.
#
# The host writes /kdev-package.env: KREL (the package's kernel release)
# and DEBIAN_KREL (the image's own kernel).

# PID 1 starts without PATH; dpkg's maintainer scripts need one
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
OUT=/kdev-package.ktap
YNL="python3 /opt/kdev/ynl/cli.py --no-schema --output-json --spec /opt/kdev/netdev.yaml"
NSIM_ID=7
n=0

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -o remount,rw /
# shellcheck source=/dev/null
. /kdev-package.env

msg()
{
	echo "# $*"
}

# result NAME COMMAND...: one KTAP result, the command's output as
# diagnostics
result()
{
	name=$1
	shift
	n=$((n + 1))
	if "$@" > /tmp/out 2>&1; then
		sed 's/^/# /' /tmp/out
		echo "ok $n $name"
	else
		sed 's/^/# /' /tmp/out
		echo "not ok $n $name"
	fi
}

running_kernel()
{
	msg "running $(uname -r), package's $KREL"
	[ "$(uname -r)" = "$KREL" ] || return 1
	dpkg -S "/boot/vmlinuz-$KREL" | grep "^linux-image-$KREL:"
}

# napi_of IFINDEX: the first NAPI ID napi-get lists for the device
napi_of()
{
	$YNL --dump napi-get --json "{\"ifindex\": $1}" |
		grep -o '"id": [0-9]*' | head -n 1 | cut -d' ' -f2
}

napi_config()
{
	modprobe netdevsim || return 1
	echo "$NSIM_ID 1 2" > /sys/bus/netdevsim/new_device || return 1
	dev=$(ls /sys/bus/netdevsim/devices/netdevsim$NSIM_ID/net/)
	ip link set dev "$dev" up || return 1
	ifindex=$(cat "/sys/class/net/$dev/ifindex")
	id=$(napi_of "$ifindex")
	msg "$dev (ifindex $ifindex), NAPI $id"
	[ -n "$id" ] || return 1
	$YNL --do napi-set --json "{\"id\": $id, \"defer-hard-irqs\": 7,
		\"gro-flush-timeout\": 12345, \"irq-suspend-timeout\": 54321}" ||
		return 1
	got=$($YNL --do napi-get --json "{\"id\": $id}")
	msg "$got"
	echo "$got" | grep -q '"defer-hard-irqs": 7' &&
		echo "$got" | grep -q '"gro-flush-timeout": 12345' &&
		echo "$got" | grep -q '"irq-suspend-timeout": 54321'
}

soft_moderation()
{
	for f in delay_us target_intr_rate hardirq_percent update_ms \
		 scale_cpus stats; do
		[ -e "/proc/irq/soft_moderation/$f" ] ||
			{ msg "no /proc/irq/soft_moderation/$f"; return 1; }
	done
	msg "delay_us $(cat /proc/irq/soft_moderation/delay_us)"
}

# virtio_net_napi_config.py on the image's virtio-net NIC: its suspend
# case must run (not skip) and pass, as must the others.
virtio_suspend()
{
	for dev in /sys/class/net/*; do
		[ "$(basename "$(readlink -f "$dev/device/driver")")" = virtio_net ] &&
			NETIF=${dev##*/}
	done
	msg "virtio-net NIC: ${NETIF:-none}"
	[ -n "${NETIF:-}" ] || return 1
	export NETIF
	cd /opt/kdev/kselftest/drivers/net || return 1
	./virtio_net_napi_config.py > /tmp/virtio.ktap 2>&1
	rc=$?
	cat /tmp/virtio.ktap
	cd / || return 1
	[ "$rc" = 0 ] &&
		grep -Eq '^ok [0-9]+ [a-z_.]*kept_across_suspend_resume$' /tmp/virtio.ktap
}

# The package is removed while its kernel runs, as a user would after
# booting the old kernel; the image's own kernel must be untouched.
removal()
{
	dpkg -r "linux-image-$KREL" "linux-headers-$KREL" || return 1
	for f in "/boot/vmlinuz-$KREL" "/lib/modules/$KREL"; do
		[ ! -e "$f" ] || { msg "$f left behind"; return 1; }
	done
	for f in "/boot/vmlinuz-$DEBIAN_KREL" "/boot/initrd.img-$DEBIAN_KREL" \
		 "/lib/modules/$DEBIAN_KREL/modules.dep"; do
		[ -e "$f" ] || { msg "$f is gone"; return 1; }
	done
	dpkg-query -W -f='${Status}\n' "linux-image-$DEBIAN_KREL" |
		grep -x 'install ok installed'
}

# The package kernel's log: no warning, bug or lockup report
clean_log()
{
	! dmesg | grep -E 'WARNING:|BUG:|Oops|Call Trace:|INFO: task .* blocked'
}

{
	echo "KTAP version 1"
	echo "1..6"
	result "running kernel is the package's" running_kernel
	result "napi-set and napi-get on netdevsim" napi_config
	result "/proc/irq/soft_moderation is there" soft_moderation
	result "virtio_net_napi_config kept_across_suspend_resume" virtio_suspend
	result "removing the package leaves the image's kernel" removal
	result "kernel log free of splats" clean_log
	# the host checks that the guest got this far
	echo "# done"
} > "$OUT" 2>&1
# debugfs reads the image without replaying the journal
sync
mount -o remount,ro /
# Power off; should that fail, PID 1's exit panics and the host's QEMU,
# started with -no-reboot, ends.
echo o > /proc/sysrq-trigger
sleep 30
