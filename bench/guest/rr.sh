#!/bin/bash
# Runs inside the guest: the IRQ suspension benchmark (the cover letter's
# memcached/mutilate comparison, scaled to a QEMU guest).
#
# usage: rr.sh KERNEL_TREE TOOLS_DIR OUT_DIR
#
# Two virtio-net ports on one QEMU hub, each in its own network namespace:
# the server's (CPU 1, its interrupts on CPU 1) and the client's (CPU 0).
# rr_server answers fixed-size requests from an epoll loop; rr_client sends
# them open-loop at a fixed rate, or closed-loop for the maximum. Every
# mode runs every load BENCH_REPS times; OUT_DIR/MODE/LOAD/REP gets the
# client's result and /proc snapshots at both ends of the window.
set -euo pipefail

tree=$1
tools=$2
out=$3
# shellcheck source=bench/guest/lib.sh
. "$(dirname "$0")/lib.sh"

BENCH_LOADS=${BENCH_LOADS:-25 50 75}	# % of base's closed-loop rate, then max
BENCH_XS=${BENCH_XS:-50 200}		# gro-flush-timeout values, us
BENCH_CONNS=${BENCH_CONNS:-16}

SRV_NS=rr-srv
CLI_NS=rr-cli
SRV_MAC=52:54:00:12:00:01
CLI_MAC=52:54:00:12:00:02
SRV_ADDR=10.77.0.1
CLI_ADDR=10.77.0.2
SRV_CPU=1
CLI_CPU=0
SUSPEND_NS=20000000

srv_pid=

# dev_by_mac MAC: the interface with that address (in the initial netns).
dev_by_mac()
{
	local d

	for d in /sys/class/net/*; do
		if [ "$(cat "$d/address")" = "$1" ]; then
			basename "$d"
			return 0
		fi
	done
	echo "no interface with address $1: is bench/qemu-opts in use?" >&2
	return 1
}

# port_setup MAC NETNS ADDR CPU: move the port into NETNS with ADDR, its
# interrupts on CPU; prints "IFNAME IRQ...".
port_setup()
{
	local mac=$1 ns=$2 addr=$3 cpu=$4 dev virtio irqs

	dev=$(dev_by_mac "$mac")
	virtio=$(basename "$(readlink -f "/sys/class/net/$dev/device")")
	mapfile -t irqs < <(virtio_irqs "$virtio")
	pin_irqs "$cpu" "${irqs[@]}"
	ip netns add "$ns"
	ip link set dev "$dev" netns "$ns"
	ip -n "$ns" link set dev lo up
	ip -n "$ns" addr add "$addr/24" dev "$dev"
	ip -n "$ns" link set dev "$dev" up
	echo "$dev ${irqs[*]}"
}

# napi_set DEFER GRO_NS SUSPEND_NS: on every NAPI of the server's port.
napi_set()
{
	ip netns exec "$SRV_NS" python3 "$(dirname "$0")/napi_set.py" "$tree" \
		"$srv_ifindex" "$@" >&2
}

# mode_setup MODE: the NAPI settings of MODE; prints rr_server's options.
# The modes are the cover letter's (X is the gro-flush-timeout in us).
mode_setup()
{
	local mode=$1 x

	case "$mode" in
	base)
		napi_set 0 0 0
		;;
	defer*)
		x=${mode#defer}
		napi_set 100 $((x * 1000)) 0
		;;
	napibusy)
		napi_set 100 200000 0
		echo -u 64 -b 64 -P 1
		;;
	fullbusy)
		# As in the cover letter: epoll_wait() with a 1 ms timeout,
		# busy polling all of it, so the server never sleeps.
		napi_set 100 5000000 0
		echo -t 1 -u 1000 -b 64 -P 1
		;;
	suspend*)
		x=${mode#suspend}
		if [ "$x" = 0 ]; then
			napi_set 0 0 "$SUSPEND_NS"
		else
			napi_set 100 $((x * 1000)) "$SUSPEND_NS"
		fi
		echo -u 0 -b 64 -P 1
		;;
	*)
		echo "unknown mode $mode" >&2
		return 1
		;;
	esac
}

server_start()
{
	# shellcheck disable=SC2086 # the options are words
	ip netns exec "$SRV_NS" taskset -c "$SRV_CPU" "$tools/rr_server" $1 \
		> /dev/null &
	srv_pid=$!
	for _ in $(seq 50); do
		ip netns exec "$SRV_NS" ss -Hltn 'sport = :7777' | grep -q . && return 0
		sleep 0.1
	done
	echo "rr_server did not start listening" >&2
	return 1
}

server_stop()
{
	[ -n "$srv_pid" ] || return 0
	kill "$srv_pid" 2>/dev/null || true
	wait "$srv_pid" 2>/dev/null || true
	srv_pid=
}

# point DIR RATE: one client run (RATE 0: closed loop) into DIR.
point()
{
	local dir=$1 rate=$2

	mkdir -p "$dir"
	ip netns exec "$CLI_NS" taskset -c "$CLI_CPU" "$tools/rr_client" \
		-a "$SRV_ADDR" -c "$BENCH_CONNS" -r "$rate" -w "$BENCH_WARMUP" \
		-d "$BENCH_SECS" -S "$dir" > "$dir/client.json"
}

cleanup()
{
	server_stop
	ip netns del "$SRV_NS" 2>/dev/null || true
	ip netns del "$CLI_NS" 2>/dev/null || true
}
trap cleanup EXIT

read -r srv_dev srv_irqs < <(port_setup "$SRV_MAC" "$SRV_NS" "$SRV_ADDR" "$SRV_CPU")
read -r _ cli_irqs < <(port_setup "$CLI_MAC" "$CLI_NS" "$CLI_ADDR" "$CLI_CPU")
srv_ifindex=$(ip netns exec "$SRV_NS" cat "/sys/class/net/$srv_dev/ifindex")
log "server $srv_dev (IRQs $srv_irqs) on CPU $SRV_CPU, client IRQs $cli_irqs on CPU $CLI_CPU"

modes=(base)
for x in $BENCH_XS; do
	modes+=("defer$x")
done
modes+=(napibusy fullbusy suspend0)
for x in $BENCH_XS; do
	modes+=("suspend$x")
done

# The loads are fractions of what base sustains closed-loop.
mkdir -p "$out"
server_start "$(mode_setup base)"
point "$out/calibrate" 0
server_stop
sat=$(python3 -c 'import json, sys; print(int(json.load(open(sys.argv[1]))["qps"]))' \
	"$out/calibrate/client.json")
log "base sustains $sat requests/s closed-loop"

loads=()
for pct in $BENCH_LOADS; do
	loads+=("$pct:$((sat * pct / 100))")
done
loads+=("max:0")

# shellcheck disable=SC2086 # word lists
printf '{"server_cpu": %d, "server_irqs": %s, "saturation_qps": %d, "conns": %d, "secs": %s, "reps": %d, "modes": "%s", "loads": "%s"}\n' \
	"$SRV_CPU" "$(json_list $srv_irqs)" "$sat" "$BENCH_CONNS" "$BENCH_SECS" \
	"$BENCH_REPS" "${modes[*]}" "${loads[*]}" > "$out/meta.json"

# Repetitions outermost, so that every mode sees the same drift of the host.
for rep in $(seq "$BENCH_REPS"); do
	for mode in "${modes[@]}"; do
		log "rep $rep/$BENCH_REPS: $mode"
		opts=$(mode_setup "$mode")
		for load in "${loads[@]}"; do
			server_start "$opts"
			point "$out/$mode/${load%%:*}/$rep" "${load#*:}"
			server_stop
		done
	done
done
napi_set 0 0 0
log "done"
