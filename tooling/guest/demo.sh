#!/bin/bash
# Runs inside the guest: shows the patched kernel at work.
#
# usage: demo.sh KERNEL_TREE
set -euo pipefail

tree=$1
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

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

step "napi-get (dump) for $NSIM_DEV_A through the in-tree YNL CLI"
ynl "$NSIM_NS_A" --dump napi-get --json "{\"ifindex\": $NSIM_IFINDEX_A}"

nsim_pair_cleanup
