#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The checks inside the package test's Debian image (see install-boot.sh),
# run by kdev-package-checks.service once systemd has booted the installed
# kernel. The image holds the three packages and the tools package's
# examples, copied where its README tells a user to copy them: GSIM knobs
# in /etc/tmpfiles.d, the udev rule and /etc/adaptive-irq/eth0.conf for
# the virtio NIC. KTAP goes to /kdev-package.ktap; then the image powers
# off.
#
# The host writes /kdev-package.env: KREL (the package's kernel release),
# DEBIAN_KREL (the image's own kernel) and TOOLS (the tools package).

# Functions called through result look unreachable:
# shellcheck disable=SC2317

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
OUT=/kdev-package.ktap
NIC=eth0
NSIM_ID=7
# The examples' values (adaptive-irq-eth0.conf, gsim.conf)
NAPI_EXPECTED=('"defer-hard-irqs": 100[,}]' '"gro-flush-timeout": 100000[,}]'
	       '"irq-suspend-timeout": 1000000000[,}]')
GSIM_CONF=/etc/tmpfiles.d/gsim.conf
# How long the boot's unit may take to apply the settings
APPLY_WAIT=120
APPLY=/usr/libexec/adaptive-irq-tools/apply-interface
n=0

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
	local name=$1

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

# napi_values IFNAME: every NAPI of IFNAME has the example's values
napi_values()
{
	local got v

	got=$(napictl --json show "$1") || return 1
	echo "$got"
	[ "$(grep -o '"id": [0-9]*' <<< "$got" | wc -l)" -gt 0 ] || return 1
	for v in "${NAPI_EXPECTED[@]}"; do
		[ "$(grep -o "$v" <<< "$got" | wc -l)" = \
		  "$(grep -o '"id": [0-9]*' <<< "$got" | wc -l)" ] ||
			{ msg "not every NAPI has $v"; return 1; }
	done
}

# Set at boot, with nothing run by hand: the unit the udev rule started
# has finished, and its settings are there
boot_napi_settings()
{
	local i state

	for ((i = 0; i < APPLY_WAIT; i++)); do
		state=$(systemctl show -p ActiveState --value "adaptive-irq@$NIC.service")
		[ "$state" = active ] || [ "$state" = failed ] && break
		sleep 1
	done
	msg "adaptive-irq@$NIC.service: $state"
	systemctl status --no-pager "adaptive-irq@$NIC.service" | tail -n 8
	napi_values "$NIC"
}

boot_gsim_knobs()
{
	local path value rc=0

	[ -s "$GSIM_CONF" ] || { msg "no $GSIM_CONF"; return 1; }
	while read -r _ path _ _ _ _ value; do
		msg "$path: $(cat "$path") (configured $value)"
		[ "$(cat "$path")" = "$value" ] || rc=1
	done < <(grep '^w ' "$GSIM_CONF")
	return "$rc"
}

boot_vectors_moderated()
{
	local out

	out=$(irq-soft-moderation show "$NIC") || return 1
	echo "$out"
	grep -q ': on$' <<< "$out" && ! grep -q ': off$' <<< "$out"
}

# A channel change keeps a NAPI's settings: virtio_net keeps its NAPIs
# across ethtool -L, and a NAPI the kernel deletes and adds back gets its
# slot's values again
channels_keep_settings()
{
	local max

	max=$(ethtool -l "$NIC" | awk '/^Combined:/ { print $2; exit }')
	msg "$NIC: up to $max combined channels"
	ethtool -L "$NIC" combined 1 && ethtool -L "$NIC" combined "$max" &&
		napi_values "$NIC"
}

tools_on_path()
{
	local ifindex out

	ifindex=$(cat "/sys/class/net/$NIC/ifindex")
	command -v ynl napictl irq-soft-moderation || return 1
	ynl --family netdev --dump napi-get --json "{\"ifindex\": $ifindex}" ||
		return 1
	# errors a user may meet, said plainly
	out=$(napictl show nosuchif0 2>&1) && return 1
	echo "$out"
	grep -q "no interface 'nosuchif0'" <<< "$out" || return 1
	out=$(napictl set "$NIC" --defer-hard-irqs 2147483648 2>&1) && return 1
	echo "$out"
	grep -q 'out of range.*largest value taken: 2147483647' <<< "$out" ||
		return 1
	out=$(napictl set "$NIC" --defer-hard-irqs 1 --wait-up -1 2>&1) &&
		return 1
	echo "$out"
	grep -q 'must not be negative' <<< "$out"
}

# An interface file with garbage: the unit's helper says so, and fails
bad_conf_refused()
{
	local out rc=0

	echo 'WAIT_UP=soon' > /etc/adaptive-irq/kdevbad0.conf
	out=$("$APPLY" kdevbad0 2>&1) || rc=$?
	rm -f /etc/adaptive-irq/kdevbad0.conf
	echo "$out"
	[ "$rc" != 0 ] && grep -q 'WAIT_UP=soon is not a whole number' <<< "$out"
}

napi_config_nsim()
{
	local dev id got

	modprobe netdevsim || return 1
	echo "$NSIM_ID 1 2" > /sys/bus/netdevsim/new_device || return 1
	dev=$(ls /sys/bus/netdevsim/devices/netdevsim$NSIM_ID/net/)
	ip link set dev "$dev" up || return 1
	id=$(ynl --family netdev --output-json --dump napi-get \
		--json "{\"ifindex\": $(cat "/sys/class/net/$dev/ifindex")}" |
	     grep -o '"id": [0-9]*' | head -n 1 | cut -d' ' -f2)
	msg "$dev, NAPI $id"
	[ -n "$id" ] || return 1
	ynl --family netdev --do napi-set --json "{\"id\": $id,
		\"defer-hard-irqs\": 7, \"gro-flush-timeout\": 12345,
		\"irq-suspend-timeout\": 54321}" || return 1
	got=$(ynl --family netdev --output-json --do napi-get --json "{\"id\": $id}")
	msg "$got"
	grep -q '"defer-hard-irqs": 7' <<< "$got" &&
		grep -q '"gro-flush-timeout": 12345' <<< "$got" &&
		grep -q '"irq-suspend-timeout": 54321' <<< "$got"
}

soft_moderation()
{
	local f

	for f in delay_us target_intr_rate hardirq_percent update_ms \
		 scale_cpus stats; do
		[ -e "/proc/irq/soft_moderation/$f" ] ||
			{ msg "no /proc/irq/soft_moderation/$f"; return 1; }
	done
}

# virtio_net_napi_config.py on the image's virtio-net NIC: its suspend
# case must run (not skip) and pass, as must the others.
virtio_suspend()
{
	local rc

	export NETIF=$NIC
	cd /opt/kdev/kselftest/drivers/net || return 1
	./virtio_net_napi_config.py > /tmp/virtio.ktap 2>&1
	rc=$?
	cat /tmp/virtio.ktap
	cd / || return 1
	[ "$rc" = 0 ] &&
		grep -Eq '^ok [0-9]+ [a-z_.]*kept_across_suspend_resume$' /tmp/virtio.ktap
}

# The packages are removed while their kernel runs, as a user would after
# booting the old kernel: nothing of theirs is left, not even a directory
# of the tools package's own (Python's byte-code caches, written when the
# tools ran, would keep one), and the image's own kernel is untouched.
removal()
{
	local f left=0

	dpkg -L "$TOOLS" > /tmp/tools.files || return 1
	dpkg -r "linux-image-$KREL" "linux-headers-$KREL" "$TOOLS" || return 1
	while read -r f; do
		# directories the package shares with others stay
		[ -d "$f" ] && [[ "$f" != *adaptive-irq* ]] && [[ "$f" != */ynl* ]] &&
			continue
		[ -e "$f" ] || [ -L "$f" ] || continue
		msg "$f left behind"
		left=1
	done < <(cat /tmp/tools.files; echo "/boot/vmlinuz-$KREL"; echo "/lib/modules/$KREL")
	[ "$left" = 0 ] || return 1
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
	echo "1..12"
	result "running kernel is the package's" running_kernel
	result "at boot: napi-get shows the configured values on every NAPI of the NIC" \
		boot_napi_settings
	result "at boot: the GSIM knobs hold the configured values" boot_gsim_knobs
	result "at boot: the NIC's vectors are moderated" boot_vectors_moderated
	result "ethtool -L down and back keeps every NAPI's values" channels_keep_settings
	result "ynl and napictl on PATH, napictl's errors" tools_on_path
	result "a bad /etc/adaptive-irq file is refused" bad_conf_refused
	result "napi-set and napi-get on netdevsim" napi_config_nsim
	result "/proc/irq/soft_moderation is there" soft_moderation
	result "virtio_net_napi_config kept_across_suspend_resume" virtio_suspend
	result "removing the packages leaves nothing of theirs, and the image's kernel" removal
	result "kernel log free of splats" clean_log
	# the host checks that the guest got this far
	echo "# done"
} > "$OUT" 2>&1
sync
systemctl --no-block poweroff
