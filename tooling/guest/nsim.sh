# shellcheck shell=bash
# A pair of linked netdevsim devices, each in its own network namespace,
# for the demo. Sets NSIM_NS_{A,B}, NSIM_DEV_{A,B} and NSIM_IFINDEX_{A,B}.

NSIM_ID_A=${NSIM_ID_A:-101}
NSIM_ID_B=${NSIM_ID_B:-102}
NSIM_NS_A=nsim-a
NSIM_NS_B=nsim-b
NSIM_SYS=/sys/bus/netdevsim

# nsim_new ID QUEUES NETNS: a one-port device, moved into NETNS; prints its
# interface name.
nsim_new()
{
	local id=$1 queues=$2 ns=$3 dev

	echo "$id 1 $queues" > "$NSIM_SYS/new_device"
	udevadm settle 2>/dev/null || true
	dev=$(ls "$NSIM_SYS/devices/netdevsim$id/net/")
	ip link set dev "$dev" netns "$ns"
	printf '%s\n' "$dev"
}

# nsim_pair_setup QUEUES
nsim_pair_setup()
{
	local queues=$1 fd_a fd_b

	modprobe netdevsim
	ip netns add "$NSIM_NS_A"
	ip netns add "$NSIM_NS_B"
	NSIM_DEV_A=$(nsim_new "$NSIM_ID_A" "$queues" "$NSIM_NS_A")
	NSIM_DEV_B=$(nsim_new "$NSIM_ID_B" "$queues" "$NSIM_NS_B")
	NSIM_IFINDEX_A=$(ip netns exec "$NSIM_NS_A" cat "/sys/class/net/$NSIM_DEV_A/ifindex")
	NSIM_IFINDEX_B=$(ip netns exec "$NSIM_NS_B" cat "/sys/class/net/$NSIM_DEV_B/ifindex")

	exec {fd_a}< "/var/run/netns/$NSIM_NS_A"
	exec {fd_b}< "/var/run/netns/$NSIM_NS_B"
	echo "$fd_a:$NSIM_IFINDEX_A $fd_b:$NSIM_IFINDEX_B" > "$NSIM_SYS/link_device"
	exec {fd_a}<&- {fd_b}<&-

	# Links set up before linking can stay NO-CARRIER: bring them up now.
	ip -n "$NSIM_NS_A" addr add 192.0.2.1/24 dev "$NSIM_DEV_A"
	ip -n "$NSIM_NS_B" addr add 192.0.2.2/24 dev "$NSIM_DEV_B"
	ip -n "$NSIM_NS_A" link set dev "$NSIM_DEV_A" up
	ip -n "$NSIM_NS_B" link set dev "$NSIM_DEV_B" up
	export NSIM_NS_A NSIM_NS_B NSIM_DEV_A NSIM_DEV_B NSIM_IFINDEX_A NSIM_IFINDEX_B
}

nsim_pair_cleanup()
{
	ip netns del "$NSIM_NS_A" 2>/dev/null || true
	ip netns del "$NSIM_NS_B" 2>/dev/null || true
	echo "$NSIM_ID_A" > "$NSIM_SYS/del_device" 2>/dev/null || true
	echo "$NSIM_ID_B" > "$NSIM_SYS/del_device" 2>/dev/null || true
}
