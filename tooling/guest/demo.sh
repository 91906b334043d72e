#!/bin/bash
# Runs inside the guest: shows the patched kernel at work.
#
# usage: demo.sh KERNEL_TREE KSELFTEST_INSTALL_DIR
set -euo pipefail

tree=$1
ksft=$2
export PATH=${KDEV_GUEST_PATH:+$KDEV_GUEST_PATH:}/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# shellcheck source=tooling/guest/nsim.sh
. "$(dirname "$0")/nsim.sh"

# ynl NETNS ARGS...: the in-tree YNL CLI on the netdev family, in NETNS.
ynl()
{
	local ns=$1
	shift
	ip netns exec "$ns" python3 "$tree/tools/net/ynl/cli.py" \
		--spec "$tree/Documentation/netlink/specs/netdev.yaml" "$@"
}

step()
{
	printf '\n### %s\n' "$*"
}

step "guest kernel"
uname -a

step "netdevsim pair: two devices with 4 queues each, linked across two netns"
nsim_pair_setup 4
ip -n "$NSIM_NS_A" -br link show dev "$NSIM_DEV_A"
ip -n "$NSIM_NS_B" -br link show dev "$NSIM_DEV_B"

# napi_dump: the NAPIs of device A, one line each.
napi_dump()
{
	ynl "$NSIM_NS_A" --dump napi-get --json "{\"ifindex\": $NSIM_IFINDEX_A}" |
		python3 -c 'import ast, sys
for n in sorted(ast.literal_eval(sys.stdin.read()), key=lambda n: n["id"]):
    print("  " + ", ".join(f"{k}={n[k]}" for k in sorted(n)))'
}

step "napi-get (dump) for $NSIM_DEV_A through the in-tree YNL CLI"
napi_dump

first=$(ynl "$NSIM_NS_A" --dump napi-get --json "{\"ifindex\": $NSIM_IFINDEX_A}" |
	python3 -c 'import ast, sys; print(min(n["id"] for n in ast.literal_eval(sys.stdin.read())))')
step "napi-set on NAPI $first only: defer-hard-irqs 100, gro-flush-timeout 20000"
ynl "$NSIM_NS_A" --do napi-set >/dev/null \
	--json "{\"id\": $first, \"defer-hard-irqs\": 100, \"gro-flush-timeout\": 20000}"
napi_dump

step "ip link set down/up and ethtool -L combined 2 then 4: IDs and settings stay"
ip -n "$NSIM_NS_A" link set dev "$NSIM_DEV_A" down
ip -n "$NSIM_NS_A" link set dev "$NSIM_DEV_A" up
ip netns exec "$NSIM_NS_A" ethtool -L "$NSIM_DEV_A" combined 2
ip netns exec "$NSIM_NS_A" ethtool -L "$NSIM_DEV_A" combined 4
napi_dump

step "sysfs napi_defer_hard_irqs=5 sets every NAPI of the device"
ip netns exec "$NSIM_NS_A" sh -c "echo 5 > /sys/class/net/$NSIM_DEV_A/napi_defer_hard_irqs"
napi_dump

nsim_pair_cleanup

step "IRQ suspension on a netdevsim pair (busy_poll_test.sh)"
echo "Under load: softirq polls of the receiving NAPI, and how often epoll armed its"
echo "timer with irq-suspend-timeout (timer:hrtimer_start trace event), without and"
echo "with suspension. Released: the NAPI timer left once the application is idle"
echo "or has closed its epoll context. Stalled: the socket queue during the stall."
(cd "$ksft/net" && ./busy_poll_test.sh) | grep -E '^(ok|not ok|# (plain|suspend|softirq|idle|close|stall))'

step "GSIM: interrupts of a virtio-blk disk (MSI-X) with and without moderation"
# shellcheck source=/dev/null
. "$ksft/irq_moderation/lib.sh"
disk=$(gsim_disk gsim-mq)
mapfile -t irqs < <(disk_irqs "$disk")
echo "disk $disk, queue interrupts ${irqs[*]}; fio: 4k random writes at depth 32, then verified reads"

# gsim_run LABEL: one verified fio run; interrupts per second and per
# 1000 I/Os.
gsim_run()
{
	local i0 o0 t0 n ios ms

	i0=$(irq_count "${irqs[@]}")
	o0=$(disk_ios "$disk")
	t0=$(date +%s%N)
	fio --name=demo --filename="/dev/$disk" --direct=1 --ioengine=libaio \
		--iodepth=32 --rw=randwrite --bs=4k --size=16M --verify=crc32c \
		--verify_fatal=1 --verify_state_save=0 --output=/dev/null
	ms=$((($(date +%s%N) - t0) / 1000000))
	n=$(($(irq_count "${irqs[@]}") - i0))
	ios=$(($(disk_ios "$disk") - o0))
	printf '  %-38s %5d interrupts/s, %4d per 1000 I/Os (%d I/Os in %d ms)\n' \
		"$1" $((n * 1000 / ms)) $((n * 1000 / ios)) "$ios" "$ms"
}

gsim_run "warm-up (first writes to the image)"
gsim_run "moderation off"
echo 500 > "$MOD_DIR/delay_us"
for irq in "${irqs[@]}"; do
	echo on > "/proc/irq/$irq/soft_moderation"
done
gsim_run "fixed, delay_us 500"
echo 50000000 > "$MOD_DIR/target_intr_rate"
gsim_run "adaptive, target 50M/s (not reached)"
echo 200 > "$MOD_DIR/target_intr_rate"
gsim_run "adaptive, target 200/s (exceeded)"
echo "/proc/irq/soft_moderation/stats:"
sed 's/^/  /' "$MOD_DIR/stats"
for irq in "${irqs[@]}"; do
	echo off > "/proc/irq/$irq/soft_moderation"
done
echo 0 > "$MOD_DIR/target_intr_rate"
echo 0 > "$MOD_DIR/delay_us"
