# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Two virtio-net NICs on one network (VIRTIO_NET_NICS, as for the
# kselftests in drivers/net), for the tests of user/ that need a real
# NAPI: the first in a server namespace with one queue pair, so that every
# connection is that queue's NAPI, the second in a client namespace.
# Deferral is off on every NAPI and config slot of both but the server
# queue's, whose values the test sets. Sourced after the kselftests'
# ktap_helpers.sh; it sources net/lib.sh and net/busy_poll_lib.sh of the
# installed kselftests (KSFT_DIR), or ends the test as skipped without
# them.
#
#   pair_setup         sets NSSV, NSCL, SV_DEV, CL_DEV and NAPI_ID
#   pair_cleanup       puts the NICs back as they were, removes the test's
#                      tmpdir (busy_poll_lib.sh's bp_tmpdir)
#   pair_napi_set JSON napi-set of the server NAPI with JSON's attributes

for f in net/lib.sh net/busy_poll_lib.sh net/lib/ynl/cli.py; do
	if [ ! -f "$KSFT_DIR/$f" ]; then
		ktap_print_header
		ktap_skip_all "$KSFT_DIR/$f not installed (the net kselftests)"
		exit "$KSFT_SKIP"
	fi
done
# shellcheck source=/dev/null
source "$KSFT_DIR"/net/lib.sh
# shellcheck source=/dev/null
source "$KSFT_DIR"/net/busy_poll_lib.sh

SV_ADDR=192.0.2.1
CL_ADDR=192.0.2.2
YNL=(python3 "$KSFT_DIR"/net/lib/ynl/cli.py --spec
     "$KSFT_DIR"/net/lib/specs/netdev.yaml --no-schema --output-json)

NSSV=
NSCL=
SV_DEV=
CL_DEV=
SV_CHANNELS=
NAPI_ID=

# nic_to_ns DEV NETNS ADDR
nic_to_ns()
{
	ip link set dev "$1" netns "$2" &&
		ip -n "$2" addr add "$3"/24 dev "$1" &&
		ip -n "$2" link set dev "$1" up
}

# deferral_off NETNS DEV: no deferral on any NAPI or config slot of DEV
deferral_off()
{
	local f

	[ -n "$2" ] || return 0
	for f in napi_defer_hard_irqs gro_flush_timeout; do
		echo 0 | ip netns exec "$1" tee /sys/class/net/"$2"/"$f" > /dev/null
	done
}

# pair_napi_set JSON: napi-set on the server NAPI, JSON being the
# attributes besides its ID ("\"irq-suspend-timeout\": 0")
pair_napi_set()
{
	ip netns exec "$NSSV" "${YNL[@]}" --do napi-set --json \
		"{\"id\": $NAPI_ID, $1}" > /dev/null
}

pair_cleanup()
{
	local dev

	kill_ns_tasks "$NSSV" "$NSCL"
	[ -n "$NAPI_ID" ] && pair_napi_set '"irq-suspend-timeout": 0'
	[ -n "$SV_CHANNELS" ] &&
		ip netns exec "$NSSV" ethtool -L "$SV_DEV" combined "$SV_CHANNELS" 2>/dev/null
	deferral_off "$NSSV" "$SV_DEV"
	deferral_off "$NSCL" "$CL_DEV"
	cleanup_all_ns
	for dev in "$SV_DEV" "$CL_DEV"; do
		[ -n "$dev" ] && slowwait 10 test -e /sys/class/net/"$dev"
	done
	[ -n "${tmpdir:-}" ] && rm -rf "$tmpdir"
	return 0
}

pair_setup()
{
	local nics

	command -v ethtool > /dev/null || skip_all "ethtool not installed"
	read -r -a nics <<< "${VIRTIO_NET_NICS:-}"
	[ "${#nics[@]}" -ge 2 ] ||
		skip_all "set VIRTIO_NET_NICS to two virtio-net NICs on one" \
			 "network that the test may take over"
	SV_DEV=${nics[0]}
	CL_DEV=${nics[1]}

	setup_ns NSSV NSCL || return 1
	nic_to_ns "$SV_DEV" "$NSSV" "$SV_ADDR" || return 1
	nic_to_ns "$CL_DEV" "$NSCL" "$CL_ADDR" || return 1
	SV_CHANNELS=$(ip netns exec "$NSSV" ethtool -l "$SV_DEV" |
		      awk '/^Combined:/ { n = $2 } END { print n }')
	ip netns exec "$NSSV" ethtool -L "$SV_DEV" combined 1 || return 1
	slowwait 10 carrier_up "$NSSV" "$SV_DEV" || return 1
	slowwait 10 carrier_up "$NSCL" "$CL_DEV" || return 1

	deferral_off "$NSSV" "$SV_DEV"
	deferral_off "$NSCL" "$CL_DEV"
	# The NAPI of RX queue 0, the only one left
	NAPI_ID=$(ip netns exec "$NSSV" "${YNL[@]}" --do queue-get --json \
		  "{\"ifindex\": $(ifindex "$NSSV" "$SV_DEV"), \"id\": 0, \"type\": \"rx\"}" |
		  python3 -c 'import json, sys; print(json.load(sys.stdin)["napi-id"])') ||
		{ ktap_print_msg "no NAPI for RX queue 0 of $SV_DEV"; return 1; }
	ktap_print_msg "server $SV_DEV (NAPI $NAPI_ID), client $CL_DEV"
}
