#!/bin/bash
# Runs inside the guest: the IRQ suspension benchmark (the cover letter's
# memcached/mutilate comparison, scaled to a QEMU guest).
#
# usage: rr.sh KERNEL_TREE TOOLS_DIR OUT_DIR [rr|memcached]
#
# Two virtio-net ports on one QEMU hub, each in its own network namespace:
# the server's (CPU 1, its interrupts on CPU 1) and the client's (CPU 0).
# The server is rr_server (fixed-size requests answered from an epoll loop,
# setting EPIOCSPARAMS itself) or memcached (one worker thread, which never
# sets it: libepoll-busy-poll.so does, from BENCH_PRELOAD_LIB). rr_client
# sends requests open-loop at a fixed rate, or closed-loop for the maximum,
# and checks every reply. Every mode runs every load BENCH_REPS times;
# OUT_DIR/MODE/LOAD/REP gets the client's result and /proc snapshots at
# both ends of the window. For memcached, OUT_DIR/pinning/PIN/MODE/LOAD/REP
# then repeats some of the points with the host's threads unpinned and
# pinned (see host_ask in lib.sh).
set -euo pipefail

tree=$1
tools=$2
out=$3
server=${4:-rr}
# shellcheck source=bench/guest/lib.sh
. "$(dirname "$0")/lib.sh"

BENCH_LOADS=${BENCH_LOADS:-25 50 75}	# % of base's closed-loop rate, then max
BENCH_XS=${BENCH_XS:-50 200}		# gro-flush-timeout values, us
BENCH_CONNS=${BENCH_CONNS:-16}
# Requests each memcached connection keeps outstanding at MAX (closed
# loop): pipelining, so that the server always has work
BENCH_MC_DEPTH=${BENCH_MC_DEPTH:-8}
# The pinning study: modes and loads run with the host's threads unpinned
# and pinned, side by side
BENCH_PIN_MODES=${BENCH_PIN_MODES:-base fullbusy suspend50}
BENCH_PIN_LOADS=${BENCH_PIN_LOADS:-75 max}

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
sample_host=0
case "$server" in
rr)
	port=7777
	client_opts=
	max_depth=1
	;;
memcached)
	MC_PORT=11211
	port=$MC_PORT
	client_opts=-m
	max_depth=$BENCH_MC_DEPTH
	;;
*)
	echo "unknown server $server" >&2
	exit 1
	;;
esac

# dev_by_mac MAC: the interface with that address (in the initial netns),
# waiting up to 10 s: an earlier part's deleted namespaces hand their
# devices back asynchronously.
dev_by_mac()
{
	local d

	for _ in $(seq 100); do
		for d in /sys/class/net/*; do
			if [ "$(cat "$d/address")" = "$1" ]; then
				basename "$d"
				return 0
			fi
		done
		sleep 0.1
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

# mode_setup MODE: the NAPI settings of MODE; prints the epoll settings
# "BUSY_POLL_USECS BUDGET PREFER EPOLL_TIMEOUT_MS", or "none" for a server
# that sets no EPIOCSPARAMS and blocks in epoll_wait(). The modes are the
# cover letter's (X is the gro-flush-timeout in us).
mode_setup()
{
	local mode=$1 x

	case "$mode" in
	base)
		napi_set 0 0 0
		echo none
		;;
	defer*)
		x=${mode#defer}
		napi_set 100 $((x * 1000)) 0
		echo none
		;;
	napibusy)
		napi_set 100 200000 0
		echo 64 64 1 -1
		;;
	fullbusy)
		# As in the cover letter: epoll_wait() with a 1 ms timeout,
		# busy polling all of it, so the server never sleeps.
		napi_set 100 5000000 0
		echo 1000 64 1 1
		;;
	suspend*)
		x=${mode#suspend}
		if [ "$x" = 0 ]; then
			napi_set 0 0 "$SUSPEND_NS"
		else
			napi_set 100 $((x * 1000)) "$SUSPEND_NS"
		fi
		echo 0 64 1 -1
		;;
	*)
		echo "unknown mode $mode" >&2
		return 1
		;;
	esac
}

# server_cmd EPOLL_SETTINGS: the server's command line, for mode_setup's
# settings. memcached gets them from the preload library's environment,
# and its epoll_wait() timeout from libepoll-timeout.so (the cover letter
# patched libevent instead).
server_cmd()
{
	local usecs budget prefer timeout preload

	read -r usecs budget prefer timeout <<< "$1"
	if [ "$server" = rr ]; then
		echo "$tools/rr_server"
		[ "$usecs" = none ] ||
			echo -u "$usecs" -b "$budget" -P "$prefer" -t "$timeout"
		return 0
	fi
	if [ "$usecs" != none ]; then
		preload=$BENCH_PRELOAD_LIB
		[ "$timeout" = -1 ] || preload+=":$tools/libepoll-timeout.so"
		echo env LD_PRELOAD="$preload" EPOLL_BUSY_POLL_USECS="$usecs" \
			EPOLL_BUSY_POLL_BUDGET="$budget" \
			EPOLL_PREFER_BUSY_POLL="$prefer" \
			BENCH_EPOLL_TIMEOUT_MS="$timeout"
	fi
	echo "$BENCH_MEMCACHED" -u root -t 1 -U 0 -c 4096 -l "$SRV_ADDR" \
		-p "$MC_PORT"
}

# server_start EPOLL_SETTINGS: start the server on its CPU, wait until it
# listens.
server_start()
{
	# shellcheck disable=SC2046 # the command is words
	ip netns exec "$SRV_NS" taskset -c "$SRV_CPU" $(server_cmd "$1") \
		> "$out/server.log" 2>&1 &
	srv_pid=$!
	for _ in $(seq 100); do
		ip netns exec "$SRV_NS" ss -Hltn "sport = :$port" | grep -q . && return 0
		sleep 0.1
	done
	echo "$server did not start listening" >&2
	return 1
}

# alive PID: PID runs (a zombie does not).
alive()
{
	local st

	st=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
	[[ "$st" != Z* ]]
}

# server_stop: SIGTERM, and SIGKILL for a server that has not exited 10 s
# later, after its threads' kernel stacks and every task's state (in the
# console log) are recorded.
server_stop()
{
	local task

	[ -n "$srv_pid" ] || return 0
	kill "$srv_pid" 2>/dev/null || true
	for _ in $(seq 100); do
		alive "$srv_pid" || break
		sleep 0.1
	done
	if alive "$srv_pid"; then
		log "$server (pid $srv_pid) still runs 10 s after SIGTERM; its threads:"
		for task in /proc/"$srv_pid"/task/*; do
			log "$(cat "$task/comm") $(grep '^State' "$task/status")"
			cat "$task/stack" >&2 || true
		done
		echo t > /proc/sysrq-trigger || true
		kill -KILL "$srv_pid" 2>/dev/null || true
	fi
	wait "$srv_pid" 2>/dev/null || true
	srv_pid=
}

# point DIR RATE [DEPTH]: one client run into DIR; RATE 0 is closed loop,
# DEPTH requests outstanding per connection (default: max_depth). With
# sample_host set, the CPU time of QEMU's threads on the host before and
# after it too (DIR/host-start, DIR/host-end: the warm-up and the drain
# are in that span).
point()
{
	local dir=$1 rate=$2 depth=${3:-$max_depth}

	mkdir -p "$dir"
	[ "$sample_host" = 0 ] || host_ask sample "${dir#"$BENCH_TOP"/}/host-start" || true
	# shellcheck disable=SC2086 # the options are words
	ip netns exec "$CLI_NS" taskset -c "$CLI_CPU" "$tools/rr_client" \
		$client_opts -q "$depth" -a "$SRV_ADDR" -c "$BENCH_CONNS" \
		-r "$rate" -w "$BENCH_WARMUP" -d "$BENCH_SECS" -S "$dir" \
		> "$dir/client.json"
	[ "$sample_host" = 0 ] || host_ask sample "${dir#"$BENCH_TOP"/}/host-end" || true
}

# run_points DIR MODE REP LOAD...: run REP of each LOAD (PCT:RATE) under
# MODE, into DIR/MODE/PCT/REP; a fresh server for each.
run_points()
{
	local dir=$1 mode=$2 rep=$3 settings load
	shift 3

	settings=$(mode_setup "$mode")
	for load in "$@"; do
		server_start "$settings"
		point "$dir/$mode/${load%%:*}/$rep" "${load#*:}"
		server_stop
	done
}

cleanup()
{
	server_stop
	ip netns del "$SRV_NS" 2>/dev/null || true
	ip netns del "$CLI_NS" 2>/dev/null || true
	# also after a late answer the guest gave up on
	host_ask pin spread || true
}
trap cleanup EXIT

# QEMU's main loop moves every packet between the two ports; sharing host
# CPUs with both vCPUs, it is slowed most by a server that busy-polls.
# The server's vCPU gets a host CPU of its own (the pinning study below
# shows both ways).
host_threads=spread
if host_ask pin split; then
	host_threads="split"
fi

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

# The loads are fractions of what base sustains closed-loop, one request
# outstanding per connection; MAX pipelines max_depth.
mkdir -p "$out"
server_start "$(mode_setup base)"
point "$out/calibrate" 0 1
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
printf '{"server": "%s", "host_threads": "%s", "server_cpu": %d, "server_irqs": %s, "saturation_qps": %d, "conns": %d, "depth": %d, "secs": %s, "reps": %d, "modes": "%s", "loads": "%s"}\n' \
	"$server" "$host_threads" "$SRV_CPU" "$(json_list $srv_irqs)" "$sat" \
	"$BENCH_CONNS" "$max_depth" \
	"$BENCH_SECS" "$BENCH_REPS" "${modes[*]}" "${loads[*]}" > "$out/meta.json"

# Repetitions outermost, so that every mode sees the same drift of the host.
for rep in $(seq "$BENCH_REPS"); do
	for mode in "${modes[@]}"; do
		log "rep $rep/$BENCH_REPS: $mode"
		run_points "$out" "$mode" "$rep" "${loads[@]}"
	done
done

# The pinning study (memcached): the same points with QEMU's threads free
# on the host's CPUs and with the server's vCPU alone on one, alternating,
# with the host threads' CPU time.
pin_loads=()
for load in "${loads[@]}"; do
	[[ " $BENCH_PIN_LOADS " = *" ${load%%:*} "* ]] && pin_loads+=("$load")
done
if [ "$server" = memcached ] && [ "$host_threads" = split ] &&
   [ "${#pin_loads[@]}" -gt 0 ]; then
	sample_host=1
	for rep in $(seq "$BENCH_REPS"); do
		for pin in spread split; do
			log "pinning study, rep $rep/$BENCH_REPS: host threads $pin"
			host_ask pin "$pin" || continue
			for mode in $BENCH_PIN_MODES; do
				log "pinning study, rep $rep/$BENCH_REPS: $pin, $mode"
				run_points "$out/pinning/$pin" "$mode" "$rep" "${pin_loads[@]}"
			done
		done
	done
	sample_host=0
fi
napi_set 0 0 0
log "done"
