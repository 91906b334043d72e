#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The series' three interfaces under load at once: per-NAPI configuration
# over netdev netlink (napi-set, napi-get, queue-get), IRQ suspension
# (epoll EPIOCSPARAMS with prefer_busy_poll, irq-suspend-timeout) and GSIM
# (/proc/irq/soft_moderation/, /proc/irq/N/soft_moderation), while
# netdevsim devices are reconfigured, added and deleted, CPU 1 goes
# offline and online, interrupts move between CPUs, and failslab and
# fail_page_alloc make allocations fail inside the netlink requests and
# the procfs and debugfs writes of some of the workers.
#
# For MINUTES minutes, these workers run at once (the python ones start
# first, and the minutes count once they have set up), each counting its
# operations and their outcomes (format: stress_lib.py):
#   netlink    stress_netlink.py: napi-set and napi-get with live, dead and
#              never-existing NAPI IDs and valid and invalid values,
#              napi-get and queue-get dumps and gets, in every namespace
#   epoll      stress_epoll.py: EPIOCSPARAMS/EPIOCGPARAMS, valid and
#              invalid; epoll add/del/close of sockets that receive data
#              while their NAPI is suspended
#   receivers  two busy_pollers at a time (IRQ suspension, random epoll
#              and NAPI settings) receiving from socat across the
#              receivers' linked netdevsim devices, in a loop; what
#              arrived is compared with what was sent
#   reconfig   ethtool -L and -G, link down/up, queue_reset in its four
#              modes (valid, and where it must say EBUSY, EINVAL,
#              ENETDOWN), on a pair of its own carrying traffic, a device
#              of its own, and the receivers' devices; its own ones are
#              deleted (with the traffic running) and made anew, with new
#              IDs, in a loop
#   gsim       GSIM settings (valid, out of range: ERANGE, not numbers:
#              EINVAL, which must change nothing), the per-interrupt
#              switches, the stats file, reads of the GSIM test disks
#   hotplug    CPU 1 offline and online, interrupt affinities
# Faults (fail_nth.py) are injected into single system calls: a share of
# the netlink worker's requests and of the reconfig worker's queue_reset
# writes. GSIM's procfs writes allocate nothing, so a fault armed there
# could not hit; faults in netdevsim's bus writes (device add, link,
# delete) would test the driver core, not the series.
#
# An error is expected when the operation may return it; any other is
# unexpected, unless a fault was injected into that operation (an
# injected ENOMEM often surfaces as another error).
# At the end the workers stop, their devices are deleted (each deletion
# bounded), and GSIM, the per-interrupt switches, CPU 1, the affinities
# and fault injection are put back; then the KTAP cases:
#   workers_ran            every worker had operations that succeeded
#   no_unexpected_errors   none, else each listed
#   no_napi_timer          no napi_watchdog timer in /proc/timer_list
#   no_irq_left_disabled   no interrupt with a handler disabled that was
#                          not before the run (GENERIC_IRQ_DEBUGFS), and
#                          every /proc/irq/N/soft_moderation off
#   gsim_lists_empty       no interrupt held back (IRQS_MODERATED),
#                          every CPU's delay 0 and nothing deferred any
#                          more in /proc/irq/soft_moderation/stats
#   devices_gone           every netdevsim device the run made is gone,
#                          each deletion returned in time
#   kmemleak_clean         two kmemleak scans find nothing (leak suspects
#                          from before the run are cleared first)
#   faults_injected        faults were injected into the netlink worker's
#                          requests and, in runs of 10 minutes or more,
#                          into queue_reset writes (skipped on a kernel
#                          without FAULT_INJECTION)
# and a summary line (minutes, operations per worker, errors by kind,
# faults injected), also as JSON in $STRESS_RESULTS/stress.json.
#
# usage: stress.sh MINUTES (env: KSFT_DIR, the installed kselftests with
# net/ and irq_moderation/; STRESS_RESULTS, optional: a directory for
# stress.json and the workers' counts and logs)

# Functions run in the background or through bounded look unreachable;
# each worker sets WORKER and its counts in a subshell of its own:
# shellcheck disable=SC2317,SC2030,SC2031

set -uo pipefail

HERE=$(dirname "$(readlink -f "$0")")
MINUTES=${1:-}
export PYTHONDONTWRITEBYTECODE=1

# Bounds. The test guest (QEMU TCG, KASAN, lockdep, 2 vCPUs) runs all this
# 10-50 times slower than hardware: they are generous, and only there so
# that a hang becomes a failure instead of holding the run.
OP_TIMEOUT=60		# one command of a worker
TRANSFER_TIMEOUT=180	# one receivers' transfer (at most 4 MiB)
HOTPLUG_TIMEOUT=180	# one CPU offline or online
DEL_TIMEOUT=120		# one del_device at the end
KMEMLEAK_TIMEOUT=300	# one kmemleak scan
STOP_GRACE=120		# for the workers to finish what they are doing
READY_TIMEOUT=300	# for the python workers to set up
KSFT_SKIP=4

# Fault injection (fail_nth.py): one allocation failed inside single
# system calls, through /proc/thread-self/fail-nth, in the netlink
# worker's requests (NETLINK_FAULTS of their send and receive calls) and
# in one in FAULT_WRITE_ONE_IN of the reconfig worker's queue_reset
# writes (debugfs). The attributes' probability stays 0, so nothing
# else fails: GFP_KERNEL allocations are candidates too (ignore-gfp-wait
# N), user pages (__GFP_HIGHMEM) are not.
NETLINK_FAULTS=0.3
FAULT_WRITE_ONE_IN=2
FAULT_WRITES_MIN_MINUTES=10
# "times" counts down per injected fault: the faults of the run are what
# it took off this (with -1, the documented "no limit", nothing counts).
FAULT_TIMES=1000000000
FAULT_ATTRS=(failslab fail_page_alloc)

# The receivers' pair: server device "sv" in NSSV, client "cl" in NSCL.
# The epoll worker's connections use it too. The reconfig worker's own
# pair: "ra" in NSRA, "rb" in NSRB, and "ri" in this namespace, unlinked.
RX_QUEUES=4
RC_QUEUES_MAX=8
SV_ADDR=192.0.2.1
CL_ADDR=192.0.2.2
RA_ADDR=198.51.100.1
RB_ADDR=198.51.100.2
RX_PORT=48700		# and RX_PORT + 1
EP_PORT=48710
RC_PORT=48720
# netdevsim IDs: from a base of this run's own, each used once (the
# receivers' pair takes the first two, the reconfig worker's devices the
# next ones)
NSIM_BASE=$((100000 + RANDOM * 10))

NSIM_BUS=/sys/bus/netdevsim
NSIM_DFS=/sys/kernel/debug/netdevsim
MOD_DIR=/proc/irq/soft_moderation
IRQ_DFS=/sys/kernel/debug/irq/irqs
KMEMLEAK=/sys/kernel/debug/kmemleak
CPU1_ONLINE=/sys/devices/system/cpu/cpu1/online
NETNS_DIR=/var/run/netns

# GSIM settings: range and default (Documentation/core-api/irq/
# irq-moderation.rst); hardirq_percent's maximum is 0 without
# IRQ_TIME_ACCOUNTING (found in gsim_setup).
KNOBS=(delay_us target_intr_rate hardirq_percent update_ms scale_cpus)
declare -A KNOB_MIN=([delay_us]=0 [target_intr_rate]=0 [hardirq_percent]=0
		     [update_ms]=1 [scale_cpus]=50)
declare -A KNOB_MAX=([delay_us]=500 [target_intr_rate]=50000000
		     [hardirq_percent]=100 [update_ms]=100 [scale_cpus]=1000)
declare -A KNOB_DEFAULT=([delay_us]=0 [target_intr_rate]=0
			 [hardirq_percent]=0 [update_ms]=5 [scale_cpus]=150)
STATS_HEADER="cpu global_rate local_rate active_cpus hardirq_percent delay_ns rate_high time_high timers deferred replayed held empty off_rate handled lapsed"

# The python workers come first: start_workers waits for them to set up
PY_WORKERS=(netlink epoll)
WORKERS=("${PY_WORKERS[@]}" receivers reconfig gsim hotplug)
WORKER_PIDS=()
CASES=()
TMP=
NSSV=''
NSCL=''
NSRA=''
NSRB=''
SV_IFINDEX=
GSIM_DISKS=()

# Per worker process (each worker is a subshell with its own copies)
WORKER=main
# Faults may be injected into a write (wr; set for the one call), and the
# kernel can (prerequisites)
FAULTABLE=0
HAVE_FAIL_NTH=0
# Faults injected per attribute, as counted when the workers stopped
declare -A FAULT_COUNTED=()
# A fault was injected into the operation since op_begin
OP_FAULTED=0
declare -A CNT=()
LOGGED=0
LOG_MAX=30
WR=
RESULT=
ERR=

# The reconfig worker's targets, by key (sv, cl: the receivers' devices;
# ra, rb, ri: its own): netdevsim ID, namespace ("-": this one), netdev
# name, queues, current channel count (empty: unknown, read it again).
declare -A T_ID=() T_NS=() T_DEV=() T_MAXQ=() T_CH=()

msg()
{
	printf '# %s\n' "$*"
}

# --- KTAP ---

KTAP_N=0
KTAP_FAILED=0

# run_case NAME FUNCTION: one KTAP result for what FUNCTION returns (0
# pass, KSFT_SKIP skip with SKIP_REASON, else fail).
run_case()
{
	local name=$1 rc=0
	shift

	SKIP_REASON=
	"$@" || rc=$?
	KTAP_N=$((KTAP_N + 1))
	case $rc in
	0)
		echo "ok $KTAP_N $name"
		CASES+=("$name=pass")
		;;
	"$KSFT_SKIP")
		echo "ok $KTAP_N $name # SKIP $SKIP_REASON"
		CASES+=("$name=skip")
		;;
	*)
		echo "not ok $KTAP_N $name"
		CASES+=("$name=fail")
		KTAP_FAILED=1
		;;
	esac
}

skip()
{
	SKIP_REASON=$*
	return "$KSFT_SKIP"
}

bail_out()
{
	echo "Bail out! $*"
	teardown
	exit 1
}

# --- time ---

# nap SECONDS: sleep without a fork, reading from a FIFO nobody writes to
nap()
{
	read -r -t "$1" -u "$NAP_FD" _
	return 0
}

stopping()
{
	[ -e "$STOP" ]
}

# nap_or_stop SECONDS: nap, a second at a time; fails once the stop came
nap_or_stop()
{
	local i

	for ((i = 0; i < $1; i++)); do
		stopping && return 1
		nap 1
	done
	! stopping
}

# --- outcomes ---

count()
{
	CNT[$1]=$((${CNT[$1]:-0} + ${2:-1}))
}

# flush_counts: this worker's counts into COUNTS_DIR/WORKER.0 (python
# workers write WORKER.1, .2, ...); builtins only, cheap enough per
# operation
flush_counts()
{
	local k

	for k in "${!CNT[@]}"; do
		printf '%s %s\n' "$k" "${CNT[$k]}"
	done 2> /dev/null > "$COUNTS_DIR/$WORKER.0"
}

op_begin()
{
	OP_FAULTED=0
}

# fault_free: no fault was injected since op_begin
fault_free()
{
	[ "$OP_FAULTED" = 0 ]
}

# log_unexpected KIND MESSAGE
log_unexpected()
{
	count "unexp.$1"
	[ "$LOGGED" -lt "$LOG_MAX" ] || return 1
	LOGGED=$((LOGGED + 1))
	printf '%s\n' "${2:0:300}" >> "$COUNTS_DIR/$WORKER.0.unexpected" 2> /dev/null
	return 1
}

# record_error KIND MESSAGE: an error no operation may return: excused
# (fault.KIND) if a fault was injected since op_begin, else
# unexpected. Fails if unexpected.
record_error()
{
	if ! fault_free; then
		count "fault.$1"
		return 0
	fi
	log_unexpected "$@"
}

# outcome OP "EXPECTED..." RESULT [DETAIL]: count one operation that gave
# RESULT (OK or an errno name). A success where an error was expected is
# never excused. Fails if the result is unexpected.
outcome()
{
	local op=$1 expected=" $2 " result=$3 detail=${4:-} m rc=0

	count ops
	count "ops.$op"
	if [[ $expected == *" $result "* ]]; then
		if [ "$result" = OK ]; then
			count ok
		else
			count "exp.$result"
		fi
	else
		m="$op: $result, expected ${2} ${detail//$'\n'/ }"
		if [ "$result" = OK ]; then
			log_unexpected OK "$m" || rc=1
		else
			record_error "$result" "$m" || rc=1
		fi
	fi
	flush_counts
	return "$rc"
}

# errno_of TEXT: ERR, the errno whose message TEXT (a tool's error
# output) contains
errno_of()
{
	case $1 in
	*"No such device or address"*) ERR=ENXIO ;;
	*"No such device"*|*"Cannot find device"*) ERR=ENODEV ;;
	*"Invalid argument"*) ERR=EINVAL ;;
	*"Numerical result out of range"*) ERR=ERANGE ;;
	*"No such file or directory"*) ERR=ENOENT ;;
	*"Device or resource busy"*) ERR=EBUSY ;;
	*"Network is down"*) ERR=ENETDOWN ;;
	*"Operation not supported"*) ERR=EOPNOTSUPP ;;
	*"Cannot allocate memory"*) ERR=ENOMEM ;;
	*"No buffer space available"*) ERR=ENOBUFS ;;
	*"Resource temporarily unavailable"*) ERR=EAGAIN ;;
	*"Operation not permitted"*) ERR=EPERM ;;
	*"Input/output error"*) ERR=EIO ;;
	*"File exists"*) ERR=EEXIST ;;
	*"Bad address"*) ERR=EFAULT ;;
	*) ERR=OTHER ;;
	esac
}

# wr FILE STRING: write STRING to FILE in one write() (write_errno of the
# irq_moderation selftests), bounded by WR_TIMEOUT (default OP_TIMEOUT);
# WR is OK, the errno name, or TIMEOUT. With FAULTABLE=1, one write in
# FAULT_WRITE_ONE_IN goes through fail_nth.py, which fails one of its
# allocations (and sets OP_FAULTED if it did).
wr()
{
	local out rc=0 writer=("$WRITE_ERRNO")

	if [ "$FAULTABLE" = 1 ] && [ "$HAVE_FAIL_NTH" = 1 ] &&
	   [ $((RANDOM % FAULT_WRITE_ONE_IN)) = 0 ]; then
		writer=(python3 "$HERE/fail_nth.py")
		count faults.armed
	fi
	out=$(timeout -k 5 "${WR_TIMEOUT:-$OP_TIMEOUT}" "${writer[@]}" \
	      "$1" "$2" 2>&1) || rc=$?
	if [[ $'\n'$out$'\n' == *$'\ninjected\n'* ]]; then
		OP_FAULTED=1
		count faults.injected
	fi
	# write_errno's answer is its last line
	case $rc:${out##*$'\n'} in
	1:"open: E"*)	WR=${out##*open: } ;;
	0:E*|0:OK)	WR=${out##*$'\n'} ;;
	124:*|137:*)	WR=TIMEOUT ;;
	*)		errno_of "$out"; WR=$ERR ;;
	esac
}

# write_op OP "EXPECTED..." FILE STRING: wr, counted as one operation
write_op()
{
	op_begin
	wr "$3" "$4"
	outcome "$1" "$2" "$WR" "$3 <- '$4'"
}

# run_cmd OP "EXPECTED..." CMD...: CMD, bounded, counted as one operation
# whose result is OK, the errno its message names, or TIMEOUT; in RESULT
run_cmd()
{
	local op=$1 expected=$2 out rc=0
	shift 2

	op_begin
	out=$(timeout -k 5 "$OP_TIMEOUT" "$@" 2>&1 < /dev/null) ||
		rc=$?
	case $rc in
	0)		RESULT=OK ;;
	124|137)	RESULT=TIMEOUT ;;
	*)		errno_of "$out"; RESULT=$ERR ;;
	esac
	outcome "$op" "$expected" "$RESULT" "$* -> ${out:0:200}"
}

# run_ok OP CMD...: run_cmd that must succeed; fails unless it did
run_ok()
{
	local op=$1
	shift

	run_cmd "$op" OK "$@"
	[ "$RESULT" = OK ]
}

# --- processes ---

# descendants PID: PID's children, their children, ...
descendants()
{
	local t c kids

	for t in /proc/"$1"/task/*/children; do
		read -r -a kids 2> /dev/null < "$t" || continue
		for c in "${kids[@]}"; do
			echo "$c"
			descendants "$c"
		done
	done
}

# kill_tree PID...: SIGKILL to each PID and everything below it
kill_tree()
{
	local pid pids=()

	for pid in "$@"; do
		pids+=("$pid")
		mapfile -t -O "${#pids[@]}" pids < <(descendants "$pid")
	done
	[ "${#pids[@]}" -eq 0 ] || kill -KILL "${pids[@]}" 2> /dev/null
	return 0
}

# task_state TASKDIR: a task's name, state, wait channel and stack
task_state()
{
	msg "  ${1#/proc/} $(cat "$1"/comm 2> /dev/null)" \
	    "$(awk '{ sub(/.*\) /, ""); print $1 }' "$1"/stat 2> /dev/null)" \
	    "wchan $(cat "$1"/wchan 2> /dev/null):" \
	    "$(tr '\n' ' ' < "$1"/stack 2> /dev/null)"
}

# task_states PID: where PID and everything below it are
task_states()
{
	local pid t

	for pid in "$1" $(descendants "$1"); do
		for t in /proc/"$pid"/task/*; do
			[ -d "$t" ] && task_state "$t"
		done
	done
}

# bounded SECONDS DESC OUT CMD...: CMD in the background, its output to
# OUT; its status, or 124 if it still runs after SECONDS: then where it
# is stuck is printed and it is left running (a task stuck in the kernel
# cannot be killed, and must not hold up the run)
bounded()
{
	local limit=$1 desc=$2 out=$3 pid t0=$SECONDS
	shift 3

	"$@" > "$out" 2>&1 < /dev/null &
	pid=$!
	while kill -0 "$pid" 2> /dev/null; do
		if [ $((SECONDS - t0)) -ge "$limit" ]; then
			msg "$desc: still running after $limit s:"
			task_states "$pid"
			return 124
		fi
		nap 0.2
	done
	wait "$pid"
}

# --- namespaces and netdevsim devices ---

# ns_cmd NS: NSX, the prefix that runs a command in NS ("-": this one)
ns_cmd()
{
	NSX=()
	[ "$1" = - ] || NSX=(ip netns exec "$1")
}

# ns_ip NS: NSIP, ip's options for NS
ns_ip()
{
	NSIP=()
	[ "$1" = - ] || NSIP=(-n "$1")
}

ns_add()
{
	local name
	name=stress-$1-$$

	timeout 60 ip netns add "$name" || return 1
	timeout 60 ip -n "$name" link set lo up || return 1
	printf -v "$2" %s "$name"
}

# nsim_new ID QUEUES: a netdevsim device with one port and QUEUES queues
# (operation "add"); NSIM_DEV is its netdev, once it appeared
nsim_new()
{
	local id=$1 n m t0

	# Recorded first: the teardown deletes what may exist
	echo "$id" >> "$NSIM_IDS"
	NSIM_DEV=
	write_op add OK "$NSIM_BUS/new_device" "$id 1 $2"
	[ "$WR" = OK ] || return 1
	# The port's netdev may appear later, from a workqueue, and udev
	# may rename it once it did: wait for both. The write itself is
	# bounded on its own: it may wait that long for a CPU hotplug.
	t0=$SECONDS
	while [ $((SECONDS - t0)) -lt 30 ]; do
		for n in "$NSIM_BUS/devices/netdevsim$id/net"/*; do
			[ -e "$n" ] || continue
			command -v udevadm > /dev/null &&
				timeout 30 udevadm settle 2> /dev/null
			for m in "$NSIM_BUS/devices/netdevsim$id/net"/*; do
				NSIM_DEV=${m##*/}
			done
			return 0
		done
		nap 0.1
	done
	record_error NO_NETDEV "add: netdevsim$id has no netdev after 30 s"
	return 1
}

# nsim_free_id ID: ID, or the next one no device has
nsim_free_id()
{
	local id=$1

	while [ -e "$NSIM_BUS/devices/netdevsim$id" ]; do
		id=$((id + 1))
	done
	echo "$id"
}

# target_new KEY ID NS NAME ADDR QUEUES: device ID as target KEY: moved to
# NS (unless "-") and renamed NAME (a new device's kernel name may be
# taken there), with ADDR/24
target_new()
{
	local key=$1 id=$2 ns=$3 name=$4 addr=$5 q=$6

	T_ID[$key]=$id T_NS[$key]=- T_MAXQ[$key]=$q T_CH[$key]=$q T_DEV[$key]=
	nsim_new "$id" "$q" || return 1
	T_DEV[$key]=$NSIM_DEV
	[ "$ns" != - ] || return 0
	target_ip "$key" move link set dev @ netns "$ns" name "$name" ||
		return 1
	T_NS[$key]=$ns T_DEV[$key]=$name
	run_ok addr ip -n "$ns" addr add "$addr/24" dev "$name"
}

# target_name KEY: for a device in this namespace, its netdev's name
# again: udev may rename a new device here at any time
target_name()
{
	local n

	[ "${T_NS[$1]}" = - ] || return 0
	for n in "$NSIM_BUS/devices/netdevsim${T_ID[$1]}/net"/*; do
		[ -e "$n" ] && T_DEV[$1]=${n##*/}
	done
	return 0
}

# target_ifindex KEY: IFX
target_ifindex()
{
	local out

	ns_ip "${T_NS[$1]}"
	out=$(timeout 30 ip "${NSIP[@]}" -o link show dev "${T_DEV[$1]}") ||
		return 1
	IFX=${out%%:*}
}

# target_link KEY_A KEY_B: link_device the two (operation "link")
target_link()
{
	local fa fb ia ib

	target_ifindex "$1" || return 1
	ia=$IFX
	target_ifindex "$2" || return 1
	ib=$IFX
	# link_device takes "NETNSFD:IFINDEX" pairs, fds of the writer
	exec {fa}< "$NETNS_DIR/${T_NS[$1]}" {fb}< "$NETNS_DIR/${T_NS[$2]}"
	write_op link OK "$NSIM_BUS/link_device" "$fa:$ia $fb:$ib"
	exec {fa}<&- {fb}<&-
	[ "$WR" = OK ]
}

# target_ip KEY OP ARGS...: ip ARGS in the namespace of target KEY, "@"
# in ARGS standing for its netdev's name, counted as operation OP, and
# tried again where a fault made it fail. In this namespace udev renames
# a new device (eth0 to eniNp1) at a time of its own, also between
# target_name and ip: ENODEV then, and the next try takes the new name.
target_ip()
{
	local key=$1 op=$2 i a args expected=OK
	shift 2

	ns_ip "${T_NS[$key]}"
	[ "${T_NS[$key]}" = - ] && expected="OK ENODEV"
	for ((i = 0; i < 20; i++)); do
		target_name "$key"
		args=()
		for a; do
			[ "$a" = @ ] && a=${T_DEV[$key]}
			args+=("$a")
		done
		run_cmd "$op" "$expected" ip "${NSIP[@]}" "${args[@]}"
		[ "$RESULT" = OK ] && return 0
		nap 0.5
	done
	record_error "${op^^}" "${T_DEV[$key]}: $op failed $i times"
	return 1
}

# target_up KEY: bring it up
target_up()
{
	target_ip "$1" link_up link set dev @ up
}

# target_carrier KEY: until it has carrier (at most 30 s)
target_carrier()
{
	local i out

	ns_ip "${T_NS[$1]}"
	for ((i = 0; i < 300; i++)); do
		out=$(timeout 30 ip "${NSIP[@]}" -o link show dev "${T_DEV[$1]}")
		[[ $out == *LOWER_UP* ]] && return 0
		nap 0.1
	done
	record_error NO_CARRIER "${T_DEV[$1]}: no carrier after 30 s"
}

# target_qr KEY: its queue_reset file
target_qr()
{
	QR=$NSIM_DFS/netdevsim${T_ID[$1]}/ports/0/queue_reset
}

# --- setup ---

# make_pair KEY_A NS_A NAME_A ADDR_A KEY_B NS_B NAME_B ADDR_B QUEUES FIRST_ID:
# two linked netdevsim devices in two namespaces, up, with carrier
make_pair()
{
	local id

	id=$(nsim_free_id "${10}")
	target_new "$1" "$id" "$2" "$3" "$4" "$9" || return 1
	id=$(nsim_free_id $((id + 1)))
	target_new "$5" "$id" "$6" "$7" "$8" "$9" || return 1
	# Links brought up before they were linked can stay without
	# carrier: up only now
	target_link "$1" "$5" && target_up "$1" && target_up "$5" &&
		target_carrier "$1" && target_carrier "$5"
}

prerequisites()
{
	local f

	[[ $MINUTES =~ ^[1-9][0-9]*$ ]] ||
		{ echo "usage: $0 MINUTES (a whole number, at least 1)" >&2; exit 2; }
	[ "$(id -u)" = 0 ] || bail_out "must run as root"
	[ -n "${KSFT_DIR:-}" ] || bail_out "KSFT_DIR (the installed kselftests) not set"
	BUSY_POLLER=$KSFT_DIR/net/busy_poller
	WRITE_ERRNO=$KSFT_DIR/irq_moderation/write_errno
	for f in "$BUSY_POLLER" "$WRITE_ERRNO" "$KSFT_DIR/net/lib/py/__init__.py" \
		 "$KSFT_DIR/net/lib/specs/netdev.yaml"; do
		[ -e "$f" ] || bail_out "$f not installed (kselftests net, irq_moderation)"
	done
	for f in python3 socat ethtool ip timeout dd cmp; do
		command -v "$f" > /dev/null || bail_out "$f not installed"
	done
	grep -qs ' /sys/kernel/debug debugfs ' /proc/mounts ||
		mount -t debugfs none /sys/kernel/debug
	[ -d "$NSIM_BUS" ] || timeout 60 modprobe netdevsim ||
		bail_out "no netdevsim"
	[ -d "$MOD_DIR" ] || bail_out "no $MOD_DIR: kernel without GSIM"
	if [ -e /proc/thread-self/fail-nth ]; then
		HAVE_FAIL_NTH=1
	else
		msg "no /proc/thread-self/fail-nth: kernel without FAULT_INJECTION"
	fi
	return 0
}

# gsim_setup: every setting at its default (another test may have left
# one changed), hardirq_percent's range, and the GSIM test disks
gsim_setup()
{
	local k v d s

	for k in "${KNOBS[@]}"; do
		read -r v < "$MOD_DIR/$k"
		[ "$v" = "${KNOB_DEFAULT[$k]}" ] && continue
		msg "GSIM $k was $v before the run; set to ${KNOB_DEFAULT[$k]}"
		wr "$MOD_DIR/$k" "${KNOB_DEFAULT[$k]}"
	done
	wr "$MOD_DIR/hardirq_percent" 1
	if [ "$WR" = ERANGE ]; then
		KNOB_MAX[hardirq_percent]=0
	else
		wr "$MOD_DIR/hardirq_percent" 0
	fi
	for d in /sys/block/vd*; do
		read -r s < "$d/serial" 2> /dev/null || continue
		case $s in gsim-*) GSIM_DISKS+=("${d##*/}") ;; esac
	done
	msg "GSIM test disks: ${GSIM_DISKS[*]:-none}"
}

# faults_setup: the fault attributes as fail-nth uses them, the values
# they had kept in FAULT_SAVED. Probability 0 and the task filter keep
# every task but an armed fail-nth fault-free.
faults_setup()
{
	local a d f v

	: > "$FAULT_SAVED"
	for a in "${FAULT_ATTRS[@]}"; do
		d=/sys/kernel/debug/$a
		[ -d "$d" ] || continue
		for f in probability times verbose task-filter \
			 ignore-gfp-wait ignore-gfp-highmem min-order; do
			[ -e "$d/$f" ] || continue
			read -r v < "$d/$f"
			printf '%s %s\n' "$d/$f" "$v" >> "$FAULT_SAVED"
		done
		wr "$d/probability" 0
		wr "$d/task-filter" Y
		if [ "$a" = fail_page_alloc ]; then
			wr "$d/ignore-gfp-highmem" Y
			wr "$d/min-order" 0
		fi
		wr "$d/times" "$FAULT_TIMES"
		wr "$d/verbose" 1
		wr "$d/ignore-gfp-wait" N
	done
}

# faults_injected ATTR: faults ATTR injected so far, or until the
# workers stopped once teardown put the attributes back
faults_injected()
{
	local t=$FAULT_TIMES

	if [ -n "${FAULT_COUNTED[$1]:-}" ]; then
		echo "${FAULT_COUNTED[$1]}"
		return
	fi

	read -r t < "/sys/kernel/debug/$1/times" 2> /dev/null
	echo $((FAULT_TIMES - t))
}

# irq_states: one line per interrupt: IRQ, has a handler (0/1), disabled
# (IRQD_IRQ_DISABLED or a disable depth), depth, held back by GSIM
# (IRQS_MODERATED), GSIM switch on (_IRQ_SW_MODERATION)
irq_states()
{
	awk 'function out() {
		a = ""
		getline a < ("/sys/kernel/irq/" irq "/actions")
		close("/sys/kernel/irq/" irq "/actions")
		print irq, (a != ""), (dis || depth > 0), depth, mod, sw
	     }
	     FNR == 1 {
		if (irq != "")
			out()
		irq = FILENAME; sub(/.*\//, "", irq)
		depth = dis = mod = sw = 0
	     }
	     /^ddepth:/ { depth = $2 }
	     /^ +IRQD_IRQ_DISABLED$/ { dis = 1 }
	     /^ +IRQS_MODERATED$/ { mod = 1 }
	     /^ +_IRQ_SW_MODERATION$/ { sw = 1 }
	     END { if (irq != "") out() }' "$IRQ_DFS"/* 2> /dev/null
}

# napi_timers: the pending NAPI timers, one line each: CPU, timer, expiry
napi_timers()
{
	awk '/^cpu: / { cpu = $2 }
	     /napi_watchdog/ { t = $0; getline; print "cpu " cpu ":" t " " $0 }' \
		/proc/timer_list
}

# affinity_snapshot: every interrupt's affinity, to put back at the end
affinity_snapshot()
{
	local f v

	for f in /proc/irq/[0-9]*/smp_affinity_list; do
		read -r v < "$f" 2> /dev/null && printf '%s %s\n' "$f" "$v"
	done > "$TMP/affinity"
}

# kmemleak_scan: one scan, bounded; fails if kmemleak refused it
kmemleak_scan()
{
	local t0=$SECONDS

	WR_TIMEOUT=$KMEMLEAK_TIMEOUT wr "$KMEMLEAK" scan
	msg "kmemleak scan: $WR in $((SECONDS - t0)) s"
	[ "$WR" = OK ]
}

# kmemleak_baseline: what leaked before the run is cleared, so that the
# end reports only what leaked since (it is the business of the tests that
# ran before, and ./kdev test runs the stress last)
kmemleak_baseline()
{
	local n

	[ -w "$KMEMLEAK" ] || return 0
	kmemleak_scan || return 0
	n=$(timeout 120 grep -c '^unreferenced object' "$KMEMLEAK" 2> /dev/null)
	[ "${n:-0}" = 0 ] ||
		msg "kmemleak: ${n} leak suspects from before the run (cleared, not counted)"
	wr "$KMEMLEAK" clear
}

setup_receivers()
{
	local size

	make_pair sv "$NSSV" sv "$SV_ADDR" cl "$NSCL" cl "$CL_ADDR" \
		"$RX_QUEUES" "$NSIM_BASE" || return 1
	target_ifindex sv || return 1
	SV_IFINDEX=$IFX
	mkdir -p "$TMP/rx"
	RX_DATA=()
	for size in 64 1024 4096; do
		head -c $((size * 1024)) /dev/urandom > "$TMP/rx/data.$size" || return 1
		RX_DATA+=("$TMP/rx/data.$size")
	done
}

setup()
{
	TMP=$(mktemp -d /tmp/stress.XXXXXX) || bail_out "no tmp dir"
	STOP=$TMP/stop
	FAULT_SAVED=$TMP/fault-saved
	COUNTS_DIR=$TMP/counts
	LOGS=$TMP/logs
	NSIM_IDS=$TMP/nsim-ids
	mkdir -p "$COUNTS_DIR" "$LOGS"
	: > "$NSIM_IDS"
	mkfifo "$TMP/nap" || bail_out "no FIFO"
	exec {NAP_FD}<> "$TMP/nap"

	# Before anything changes
	ls "$NSIM_BUS/devices" > "$TMP/nsim-before" 2> /dev/null
	irq_states > "$TMP/irqs-before"
	affinity_snapshot
	[ -z "$(napi_timers)" ] ||
		msg "NAPI timers pending before the run: $(napi_timers | tr '\n' ' ')"
	faults_setup
	gsim_setup
	kmemleak_baseline

	if ! { ns_add sv NSSV && ns_add cl NSCL && ns_add ra NSRA &&
	       ns_add rb NSRB; }; then
		bail_out "cannot make network namespaces"
	fi
	setup_receivers || bail_out "cannot set up the receivers' devices" \
		"($(tr '\n' ' ' < "$COUNTS_DIR/main.0.unexpected" 2> /dev/null))"
}

# --- workers ---

# start_worker NAME FUNCTION: FUNCTION as worker NAME in the background,
# its output in its log
start_worker()
{
	(
		WORKER=$1
		CNT=()
		LOGGED=0
		"$2"
		flush_counts
	) > "$LOGS/$1.log" 2>&1 &
	WORKER_PIDS+=("$!")
}

# python_worker SCRIPT ARGS...: the python worker, one process until the
# stop; one that ends before is an error, and is started again
python_worker()
{
	local script=$1 k=0 rc log
	shift

	while ! stopping; do
		k=$((k + 1))
		log=$LOGS/$WORKER.$k.log
		op_begin
		rc=0
		timeout -k 10 $((READY_TIMEOUT + MINUTES * 60 + STOP_GRACE)) \
			python3 "$HERE/$script" --ksft-dir "$KSFT_DIR" \
			--counts "$COUNTS_DIR/$WORKER.$k" --stop "$STOP" \
			--ready "$TMP/$WORKER.ready" "$@" \
			> "$log" 2>&1 < /dev/null || rc=$?
		stopping && [ "$rc" = 0 ] && break
		record_error "exit$rc" "$script ended with status $rc: $(tail -n 3 "$log" | tr '\n' ' ')"
		flush_counts
		nap 2
	done
}

netlink_worker()
{
	python_worker stress_netlink.py --faults "$NETLINK_FAULTS" \
		--ns=-:verify --ns "$NSSV:bounded" \
		--ns "$NSCL:bounded" --ns "$NSRA:free" --ns "$NSRB:free"
}

epoll_worker()
{
	python_worker stress_epoll.py --server-ns "$NSSV" --client-ns "$NSCL" \
		--addr "$SV_ADDR" --port "$EP_PORT"
}

# poller_args: POLLER_ARGS, random epoll and NAPI settings for busy_poller:
# mostly IRQ suspension (prefer_busy_poll, irq-suspend-timeout 1 ms to 2 s
# with deferral), sometimes application work per batch, reads limited per
# batch, or a stall longer than short suspension timeouts
poller_args()
{
	POLLER_ARGS=(-m $((1 + RANDOM % 16)) -P $((RANDOM % 8 ? 1 : 0))
		     -g $((RANDOM % 4 ? 1 + RANDOM % 64 : 65 + RANDOM % 448))
		     -u $((RANDOM % 3 ? 0 : RANDOM % 200))
		     -d $((1 + RANDOM % 200)) -r $((20000 + RANDOM * 150))
		     -s $((RANDOM % 4 ? (1 + RANDOM % 2000) * 1000000 : 0)))
	[ $((RANDOM % 4)) = 0 ] && POLLER_ARGS+=(-D $((RANDOM % 20000)))
	[ $((RANDOM % 4)) = 0 ] && POLLER_ARGS+=(-R $((4096 + RANDOM * 2)))
	[ $((RANDOM % 8)) = 0 ] && POLLER_ARGS+=(-S $((100 + RANDOM % 1400)))
	return 0
}

# transfer_start I: busy_poller on port RX_PORT + I and socat sending it a
# data file, both bounded; sets RX_POLLER[I], RX_SENDER[I], RX_FILE[I],
# RX_ARGS[I]
transfer_start()
{
	local i=$1 port=$((RX_PORT + $1)) dir=$TMP/rx

	poller_args
	RX_FILE[i]=${RX_DATA[RANDOM % ${#RX_DATA[@]}]}
	RX_ARGS[i]=${POLLER_ARGS[*]}
	rm -f "$dir/out.$i"
	timeout -k 5 "$TRANSFER_TIMEOUT" ip netns exec "$NSSV" "$BUSY_POLLER" \
		-p "$port" -b "$SV_ADDR" -i "$SV_IFINDEX" -o "$dir/out.$i" \
		"${POLLER_ARGS[@]}" > /dev/null 2> "$dir/poller.$i.log" < /dev/null &
	RX_POLLER[i]=$!
	# socat tries again until busy_poller listens
	timeout -k 5 "$TRANSFER_TIMEOUT" ip netns exec "$NSCL" socat -u \
		"OPEN:${RX_FILE[i]}" "TCP:$SV_ADDR:$port,retry=300,interval=0.2" \
		> /dev/null 2> "$dir/sender.$i.log" < /dev/null &
	RX_SENDER[i]=$!
}

# transfer_check I: count the transfer: OK if both ended well and the whole
# file arrived intact; whatever arrived must be a prefix of the file
transfer_check()
{
	local i=$1 dir=$TMP/rx prc=0 src=0 got size log

	wait "${RX_POLLER[i]}" || prc=$?
	wait "${RX_SENDER[i]}" || src=$?
	got=$(stat -c %s "$dir/out.$i" 2> /dev/null || echo 0)
	size=$(stat -c %s "${RX_FILE[i]}")
	log=$(tr '\n' ' ' < "$dir/poller.$i.log")
	op_begin
	if [ "$got" -gt 0 ] && ! cmp -s -n "$got" "${RX_FILE[i]}" "$dir/out.$i"; then
		outcome transfer OK data_corrupt "$got of $size bytes arrived, not what was sent; busy_poller ${RX_ARGS[i]}"
	elif [ "$prc" = 0 ] && [ "$src" = 0 ] && [ "$got" = "$size" ]; then
		outcome transfer OK OK
	elif [[ " $prc $src " =~ \ (124|137)\  ]]; then
		# Reconfiguration stops a queue or the link for seconds at
		# most: a transfer that takes minutes is stuck
		outcome transfer OK TIMEOUT "$got of $size bytes after $TRANSFER_TIMEOUT s; busy_poller ${RX_ARGS[i]}: $log"
	elif [[ $log =~ napi-(get|set)\ [0-9]+:.*(bad\ attribute|No\ such\ file) ]]; then
		# The NAPI the connection came in on went away (channels,
		# link down) before busy_poller configured it
		outcome transfer "OK NAPI_GONE" NAPI_GONE
	else
		outcome transfer OK "poller$prc.sender$src" "$got of $size bytes; busy_poller ${RX_ARGS[i]}: $log; socat: $(tr '\n' ' ' < "$dir/sender.$i.log")"
	fi
}

# wait_or_stop SECONDS PID...: until every PID ended; fails once the stop
# came (or, as a last resort, SECONDS passed)
wait_or_stop()
{
	local limit=$1 t0=$SECONDS pid
	shift

	for pid in "$@"; do
		while kill -0 "$pid" 2> /dev/null; do
			stopping && return 1
			[ $((SECONDS - t0)) -lt "$limit" ] || return 1
			nap 0.2
		done
	done
}

receivers_worker()
{
	local i
	declare -a RX_POLLER RX_SENDER RX_FILE RX_ARGS

	while ! stopping; do
		for i in 0 1; do
			transfer_start "$i"
		done
		if ! wait_or_stop $((TRANSFER_TIMEOUT + 30)) "${RX_POLLER[@]}" \
		     "${RX_SENDER[@]}"; then
			# where what is left waits, for the log
			stopping || for i in "${RX_POLLER[@]}" "${RX_SENDER[@]}"; do
				kill -0 "$i" 2> /dev/null && task_states "$i"
			done
			kill_tree "${RX_POLLER[@]}" "${RX_SENDER[@]}"
			# Stopped: the transfers are not counted
			stopping && break
			op_begin
			record_error stuck "busy_poller or socat still there $((TRANSFER_TIMEOUT + 30)) s after the start"
			continue
		fi
		for i in 0 1; do
			transfer_check "$i"
		done
	done
}

# --- the reconfig worker ---

# target_refresh KEY: after a step that may have half-failed under fault
# injection, the device's channel count again, and the device up
target_refresh()
{
	local out k v cur=

	ns_cmd "${T_NS[$1]}"
	op_begin
	out=$(timeout -k 5 "$OP_TIMEOUT" "${NSX[@]}" ethtool -l "${T_DEV[$1]}" 2>&1)
	while read -r k v; do
		[ "$k" = Combined: ] && cur=$v	# the last one is the current
	done <<< "$out"
	if [[ $cur =~ ^[0-9]+$ ]]; then
		outcome channels_get OK OK
	else
		errno_of "$out"
		outcome channels_get OK "$ERR" "$out"
		return 1
	fi
	T_CH[$1]=$cur
	target_up "$1"
}

# ch_op KEY: ethtool -L, to a valid count or to 0 or one above the maximum
ch_op()
{
	local max=${T_MAXQ[$1]} n exp=OK

	n=$((1 + RANDOM % max))
	case $((RANDOM % 8)) in
	0) n=0; exp=EINVAL ;;
	1) n=$((max + 1)); exp=EINVAL ;;
	esac
	ns_cmd "${T_NS[$1]}"
	run_cmd channels "$exp" "${NSX[@]}" ethtool -L "${T_DEV[$1]}" combined "$n"
	if [ "$RESULT" = OK ] && [ "$exp" = OK ]; then
		T_CH[$1]=$n
	elif [ "$RESULT" != "$exp" ]; then
		T_CH[$1]=''	# a fault may have left it half done: read it again
	fi
}

# ring_op KEY: ethtool -G (netdevsim keeps the sizes, up to 4096)
ring_op()
{
	local n exp=OK

	n=$((1 + RANDOM % 4096))
	[ $((RANDOM % 6)) = 0 ] && n=4097 exp=EINVAL
	ns_cmd "${T_NS[$1]}"
	run_cmd rings "$exp" "${NSX[@]}" ethtool -G "${T_DEV[$1]}" rx "$n" tx "$n"
}

# flap_op KEY: link down, a moment, up; sometimes a queue reset while down
flap_op()
{
	ns_ip "${T_NS[$1]}"
	target_qr "$1"
	run_cmd link_down OK ip "${NSIP[@]}" link set dev "${T_DEV[$1]}" down
	if [ "$RESULT" = OK ] && [ $((RANDOM % 3)) = 0 ]; then
		FAULTABLE=1 write_op qreset_down ENETDOWN "$QR" "0 $((RANDOM % 4))"
	fi
	nap "0.$((RANDOM % 10))"
	target_up "$1" || T_CH[$1]=''
}

# qreset_op KEY: mode 0 (restart) or 1 (re-add) of a queue, one beyond
# the channel count sometimes (EINVAL)
qreset_op()
{
	local q=$((RANDOM % (T_CH[$1] + 1)))

	target_qr "$1"
	if [ "$q" -lt "${T_CH[$1]}" ]; then
		FAULTABLE=1 write_op qreset OK "$QR" "$q $((RANDOM % 2))"
	else
		FAULTABLE=1 write_op qreset_beyond EINVAL "$QR" "$q $((RANDOM % 2))"
	fi
}

# qstop_op KEY: stop a queue (mode 2), where each other mode must say
# EBUSY, a moment, and start it again (mode 3), trying again where a
# fault made that fail: a queue is never left stopped
qstop_op()
{
	local q=$((RANDOM % T_CH[$1])) i

	target_qr "$1"
	FAULTABLE=1 write_op qstop OK "$QR" "$q 2"
	[ "$WR" = OK ] || return 0
	[ $((RANDOM % 2)) = 0 ] && FAULTABLE=1 write_op qstop_busy EBUSY "$QR" "$q $((RANDOM % 3))"
	nap "$((RANDOM % 2)).$((RANDOM % 10))"
	for ((i = 0; i < 20; i++)); do
		FAULTABLE=1 write_op qstart OK "$QR" "$q 3"
		[ "$WR" = OK ] && return 0
		nap 0.5
	done
	T_CH[$1]=''
}

# qbusy_op KEY: start a queue that runs (EBUSY), or write what is no
# request (EINVAL)
qbusy_op()
{
	target_qr "$1"
	case $((RANDOM % 4)) in
	0|1)	FAULTABLE=1 write_op qstart_running EBUSY "$QR" "$((RANDOM % T_CH[$1])) 3" ;;
	2)	FAULTABLE=1 write_op qreset_badmode EINVAL "$QR" "0 $((4 + RANDOM % 100))" ;;
	3)	FAULTABLE=1 write_op qreset_garbage EINVAL "$QR" "queue" ;;
	esac
}

# reconfig_op KEY: one reconfiguration of a target at random
reconfig_op()
{
	target_name "$1"
	if ! [[ ${T_CH[$1]:-} =~ ^[1-9][0-9]*$ ]]; then
		target_refresh "$1" || return 0
	fi
	case $((RANDOM % 10)) in
	0|1)	ch_op "$1" ;;
	2)	ring_op "$1" ;;
	3|4)	flap_op "$1" ;;
	5|6)	qreset_op "$1" ;;
	7|8)	qstop_op "$1" ;;
	9)	qbusy_op "$1" ;;
	esac
}

# rc_traffic_start: busy_poller (IRQ suspension) receiving an endless
# stream on the own pair, not checked (and not under fault injection):
# it is there so that deletions and resets meet a suspended NAPI. Both
# ends run at nice 19: the stream only has to be there, and at full speed
# it would take CPU time from the workers whose operations are counted.
rc_traffic_start()
{
	timeout -k 5 900 nice -n 19 ip netns exec "$NSRA" "$BUSY_POLLER" -p "$RC_PORT" \
		-b "$RA_ADDR" -o /dev/null -P 1 -d 100 -r 500000 -s 1000000000 \
		> /dev/null 2>&1 < /dev/null &
	RC_TRAFFIC=("$!")
	timeout -k 5 900 nice -n 19 ip netns exec "$NSRB" socat -u OPEN:/dev/zero \
		"TCP:$RA_ADDR:$RC_PORT,retry=300,interval=0.2" \
		> /dev/null 2>&1 < /dev/null &
	RC_TRAFFIC+=("$!")
}

# rc_create: the own pair (linked, up, in NSRA and NSRB) and the own
# device in this namespace, with new IDs and 2 to RC_QUEUES_MAX queues
rc_create()
{
	local q=$((2 + RANDOM % (RC_QUEUES_MAX - 1)))

	make_pair ra "$NSRA" ra "$RA_ADDR" rb "$NSRB" rb "$RB_ADDR" "$q" \
		"$(rc_next_id)" || return 1
	target_new ri "$(rc_next_id)" - "" "" "$q" && target_up ri
}

# rc_destroy: delete the own devices, while the traffic still runs, then
# stop it
rc_destroy()
{
	local key i

	for key in ra rb ri; do
		[ -n "${T_ID[$key]:-}" ] || continue
		for ((i = 0; i < 20; i++)); do
			[ -e "$NSIM_BUS/devices/netdevsim${T_ID[$key]}" ] || break
			write_op del OK "$NSIM_BUS/del_device" "${T_ID[$key]}"
			[ "$WR" = OK ] && break
			nap 0.5
		done
		unset "T_ID[$key]" "T_CH[$key]"
	done
	kill_tree "${RC_TRAFFIC[@]}"
	RC_TRAFFIC=()
}

# rc_next_id: an ID no device had in this run: above the last one the
# run recorded (this worker is the only one adding devices meanwhile)
rc_next_id()
{
	local last

	last=$(tail -n 1 "$NSIM_IDS")
	nsim_free_id $((last + 1))
}

reconfig_worker()
{
	local n i keys

	RC_TRAFFIC=()
	while ! stopping; do
		if rc_create; then
			rc_traffic_start
			keys=(sv cl ra rb ri)
		else
			keys=(sv cl)
		fi
		n=$((5 + RANDOM % 20))
		for ((i = 0; i < n; i++)); do
			stopping && break
			reconfig_op "${keys[RANDOM % ${#keys[@]}]}"
		done
		rc_destroy
	done
	# The receivers' devices stay up for the end
	target_up sv
	target_up cl
}

# --- the GSIM worker ---

# knob_value KNOB: V, a valid value, often at either end of the range;
# VS, as written: decimal, hex, or with a newline
knob_value()
{
	local min=${KNOB_MIN[$1]} max=${KNOB_MAX[$1]}

	case $((RANDOM % 6)) in
	0)	V=$min ;;
	1)	V=$max ;;
	*)	V=$((min + (RANDOM << 15 | RANDOM) % (max - min + 1))) ;;
	esac
	case $((RANDOM % 4)) in
	0)	printf -v VS '0x%x' "$V" ;;
	1)	VS=$V$'\n' ;;
	*)	VS=$V ;;
	esac
}

# knob_set_op: a valid value, which must read back
knob_set_op()
{
	local k=${KNOBS[RANDOM % ${#KNOBS[@]}]} now

	knob_value "$k"
	write_op knob_set OK "$MOD_DIR/$k" "$VS"
	[ "$WR" = OK ] || return 0
	read -r now < "$MOD_DIR/$k" 2> /dev/null || return 0
	[ "$now" = "$V" ] ||
		log_unexpected knob_readback "$k: wrote $V, reads $now"
}

# knob_bad_op: out of range (ERANGE) or not a number (EINVAL); the value
# must stay what it was (the GSIM worker is the only writer)
knob_bad_op()
{
	local k=${KNOBS[RANDOM % ${#KNOBS[@]}]} s exp=ERANGE before after

	case $((RANDOM % 8)) in
	0)	s=$((KNOB_MAX[$k] + 1)) ;;
	1)	s=4294967296 ;;			# beyond unsigned int
	2)	s=$((KNOB_MIN[$k] - 1)); [ "$s" -ge 0 ] || s=-1 exp=EINVAL ;;
	3)	s=-1 exp=EINVAL ;;
	4)	s=abc exp=EINVAL ;;
	5)	s=12abc exp=EINVAL ;;
	6)	s=" 7" exp=EINVAL ;;
	7)	s=11111111111111111111111111111111111111 exp=EINVAL ;;	# too long
	esac
	read -r before < "$MOD_DIR/$k" 2> /dev/null || return 0
	write_op knob_bad "$exp" "$MOD_DIR/$k" "$s"
	read -r after < "$MOD_DIR/$k" 2> /dev/null || return 0
	[ "$after" = "$before" ] ||
		log_unexpected knob_changed "$k: '$s' refused with $WR, value $before became $after"
}

# switch_op: an interrupt's GSIM switch on (where it is eligible), off, or
# not a boolean; it must read as written
switch_op()
{
	local files=(/proc/irq/[0-9]*/soft_moderation) f v want='' now exp
	local values=(on off 1 0 y n Y N maybe 2)

	f=${files[RANDOM % ${#files[@]}]}
	v=${values[RANDOM % ${#values[@]}]}
	case $v in
	on|1|y|Y)	exp="OK EOPNOTSUPP" want=on ;;
	off|0|n|N)	exp=OK want=off ;;
	*)		exp=EINVAL ;;
	esac
	write_op switch "$exp" "$f" "$v"
	[ "$WR" = OK ] || return 0
	read -r now < "$f" 2> /dev/null || return 0
	[ "$now" = "$want" ] ||
		log_unexpected switch_readback "$f: wrote $v, reads $now"
}

# stats_op: the stats file: its header, a row per CPU, the settings as
# their files say, the mode they make, and totals that never go back
# (TOTALS: the last ones seen)
stats_op()
{
	local lines=() line k v want mode=''
	local -A shown=()

	op_begin
	if ! mapfile -t lines < "$MOD_DIR/stats"; then
		outcome stats OK EIO
		return 0
	fi
	outcome stats OK OK
	[ "${lines[0]:-}" = "$STATS_HEADER" ] ||
		log_unexpected stats_header "stats header: ${lines[0]:-}"
	[[ ${lines[1]:-} =~ ^[0-9]+\  ]] ||
		log_unexpected stats_rows "stats: no CPU row: ${lines[1]:-}"
	for line in "${lines[@]}"; do
		read -r k v _ <<< "$line"
		if [ -n "${KNOB_DEFAULT[$k]:-}" ]; then
			shown[$k]=$v
			read -r want < "$MOD_DIR/$k" 2> /dev/null || continue
			[ "$v" = "$want" ] ||
				log_unexpected stats_setting "stats: $k $v, the file says $want"
		elif [ "$k" = mode ]; then
			mode=$v
		elif [[ $k == total_* ]]; then
			[ "$v" -ge "${TOTALS[$k]:-0}" ] ||
				log_unexpected stats_total "stats: $k went from ${TOTALS[$k]} to $v"
			TOTALS[$k]=$v
		fi
	done
	want=adaptive
	[ "${shown[target_intr_rate]:-0}" = 0 ] &&
		[ "${shown[hardirq_percent]:-0}" = 0 ] && want=fixed
	[ "${shown[delay_us]:-0}" = 0 ] && want=off
	[ "$mode" = "$want" ] ||
		log_unexpected stats_mode "stats: mode $mode, $want by the settings shown"
	flush_counts
}

# disk_op: direct reads of a GSIM test disk, which interrupt when done
disk_op()
{
	local d

	[ "${#GSIM_DISKS[@]}" -gt 0 ] || return 0
	d=${GSIM_DISKS[RANDOM % ${#GSIM_DISKS[@]}]}
	run_cmd disk_read OK dd if="/dev/$d" of=/dev/null bs=64k \
		count=$((1 + RANDOM % 64)) skip=$((RANDOM % 900)) iflag=direct
}

gsim_worker()
{
	declare -A TOTALS=()

	while ! stopping; do
		case $((RANDOM % 10)) in
		0|1|2)	knob_set_op ;;
		3|4)	knob_bad_op ;;
		5|6)	switch_op ;;
		7)	stats_op ;;
		*)	disk_op ;;
		esac
	done
}

# --- the hotplug worker ---

cpu_online()
{
	local i

	for ((i = 0; i < 10; i++)); do
		WR_TIMEOUT=$HOTPLUG_TIMEOUT write_op cpu_online "OK EBUSY" "$CPU1_ONLINE" 1
		[ "$WR" = OK ] && return 0
		nap 1
	done
	return 1
}

# affinity_op: an interrupt to CPU 0, 1 or both, or a list that is none
# (EINVAL). Managed and per-CPU interrupts refuse (EPERM, EIO); one whose
# only CPU is offline, or that the vector space cannot take, too.
affinity_op()
{
	local irqs=(/proc/irq/[0-9]*) irq mask exp="OK EPERM EIO EINVAL ENOSPC EBUSY"

	irq=${irqs[RANDOM % ${#irqs[@]}]}
	case $((RANDOM % 5)) in
	0) mask=0 ;;
	1) mask=1 ;;
	2|3) mask=0-1 ;;
	4) mask=z exp="EINVAL EPERM" ;;
	esac
	write_op affinity "$exp" "$irq/smp_affinity_list" "$mask"
}

hotplug_worker()
{
	local n

	if [ ! -w "$CPU1_ONLINE" ]; then
		log_unexpected no_hotplug "$CPU1_ONLINE cannot be written"
		flush_counts
		while nap_or_stop 10; do :; done
		return
	fi
	while ! stopping; do
		WR_TIMEOUT=$HOTPLUG_TIMEOUT write_op cpu_offline "OK EBUSY" "$CPU1_ONLINE" 0
		for ((n = 1 + RANDOM % 4; n > 0; n--)); do
			affinity_op
			nap "$((RANDOM % 3)).$((RANDOM % 10))"
		done
		cpu_online
		for ((n = 1 + RANDOM % 4; n > 0; n--)); do
			affinity_op
			nap "$((RANDOM % 3)).$((RANDOM % 10))"
		done
	done
	cpu_online
}

# faults_total: faults injected so far, all attributes
faults_total()
{
	local a n=0

	for a in "${FAULT_ATTRS[@]}"; do
		n=$((n + $(faults_injected "$a")))
	done
	echo "$n"
}

# start_workers: the python workers, and the others once those have set
# up (their first requests, a listening socket), at most READY_TIMEOUT.
# Started with the rest, python took minutes to set up on a 2-CPU guest
# kept busy by the shell workers' commands, and made no request in a
# 3-minute run.
start_workers()
{
	local w t0=$SECONDS

	for w in "${PY_WORKERS[@]}"; do
		start_worker "$w" "${w}_worker"
	done
	for w in "${PY_WORKERS[@]}"; do
		while [ ! -e "$TMP/$w.ready" ] &&
		      [ $((SECONDS - t0)) -lt "$READY_TIMEOUT" ]; do
			nap 0.5
		done
	done
	msg "stress: python workers set up in $((SECONDS - t0)) s"
	for w in "${WORKERS[@]:${#PY_WORKERS[@]}}"; do
		start_worker "$w" "${w}_worker"
	done
}

# stop_workers: the stop, then up to STOP_GRACE for every worker to end;
# one that does not (or that had ended before) is an unexpected error,
# with where its tasks are
stop_workers()
{
	local i pid t0

	for i in "${!WORKER_PIDS[@]}"; do
		kill -0 "${WORKER_PIDS[i]}" 2> /dev/null ||
			log_unexpected worker_ended "worker ${WORKERS[i]} ended before the stop"
	done
	touch "$STOP"
	t0=$SECONDS
	for i in "${!WORKER_PIDS[@]}"; do
		pid=${WORKER_PIDS[i]}
		while kill -0 "$pid" 2> /dev/null && [ $((SECONDS - t0)) -lt "$STOP_GRACE" ]; do
			nap 0.5
		done
		kill -0 "$pid" 2> /dev/null || continue
		log_unexpected worker_stuck "worker ${WORKERS[i]} still running $STOP_GRACE s after the stop"
		msg "worker ${WORKERS[i]} still running $STOP_GRACE s after the stop:"
		task_states "$pid"
		kill_tree "$pid"
	done
	flush_counts
}

# --- teardown: what the run changed, put back ---

faults_restore()
{
	local f v

	[ -f "$FAULT_SAVED" ] || return 0
	while read -r f v; do
		wr "$f" "$v"
	done < "$FAULT_SAVED"
}

# gsim_restore: every setting to its default (delay_us first: that stops
# moderation), every per-interrupt switch off
gsim_restore()
{
	local k f v

	for k in "${KNOBS[@]}"; do
		wr "$MOD_DIR/$k" "${KNOB_DEFAULT[$k]}"
		[ "$WR" = OK ] || msg "GSIM $k back to ${KNOB_DEFAULT[$k]}: $WR"
	done
	for f in /proc/irq/[0-9]*/soft_moderation; do
		read -r v < "$f" 2> /dev/null && [ "$v" = off ] && continue
		wr "$f" off
	done
}

affinity_restore()
{
	local f v now

	[ -f "$TMP/affinity" ] || return 0
	while read -r f v; do
		read -r now < "$f" 2> /dev/null || continue
		[ "$now" = "$v" ] || wr "$f" "$v"
	done < "$TMP/affinity"
}

# delete_devices: every netdevsim device the run made that is still there,
# each deletion bounded; DEL_RESULTS: "ID result seconds" per deletion
delete_devices()
{
	local id t0 rc result

	: > "$DEL_RESULTS"
	while read -r id; do
		[ -e "$NSIM_BUS/devices/netdevsim$id" ] || continue
		t0=$SECONDS
		rc=0
		bounded "$DEL_TIMEOUT" "deleting netdevsim$id" "$TMP/del.out" \
			"$WRITE_ERRNO" "$NSIM_BUS/del_device" "$id" || rc=$?
		result=TIMEOUT
		[ "$rc" = 124 ] || read -r result < "$TMP/del.out"
		echo "$id ${result#open: } $((SECONDS - t0))" >> "$DEL_RESULTS"
	done < <(sort -un "$NSIM_IDS")
}

teardown()
{
	local ns pids a

	[ -n "$TMP" ] || return 0
	[ "${#WORKER_PIDS[@]}" -eq 0 ] || stop_workers
	for ns in "$NSSV" "$NSCL" "$NSRA" "$NSRB"; do
		[ -n "$ns" ] || continue
		mapfile -t pids < <(timeout 30 ip netns pids "$ns" 2> /dev/null)
		[ "${#pids[@]}" -eq 0 ] || kill_tree "${pids[@]}"
	done
	for a in "${FAULT_ATTRS[@]}"; do
		[ -e "/sys/kernel/debug/$a/times" ] &&
			FAULT_COUNTED[$a]=$(faults_injected "$a")
	done
	faults_restore
	[ -w "$CPU1_ONLINE" ] && cpu_online
	gsim_restore
	affinity_restore
	DEL_RESULTS=$TMP/del-results
	delete_devices
	for ns in "$NSSV" "$NSCL" "$NSRA" "$NSRB"; do
		[ -n "$ns" ] && timeout 60 ip netns del "$ns"
	done
	return 0
}

# on_signal: the run was cut short (its timeout): at least GSIM and CPU 1
# back as they were
on_signal()
{
	trap - TERM INT
	[ -n "$TMP" ] && touch "$STOP"
	wr "$MOD_DIR/delay_us" 0
	[ -w "$CPU1_ONLINE" ] && wr "$CPU1_ONLINE" 1
	exit 1
}

# --- the end checks ---

check_workers_ran()
{
	python3 "$HERE/stress_lib.py" ran "$COUNTS_DIR" "${WORKERS[@]}"
}

check_unexpected()
{
	python3 "$HERE/stress_lib.py" unexpected "$COUNTS_DIR"
}

# check_napi_timer: with the run's devices gone, no NAPI timer may be
# pending: none is armed by the guest's own NICs unless deferral is on
# there, and a timer left behind by a deleted NAPI would fire on freed
# memory. Three looks, a second apart. (A NAPI freed with its timer armed
# is also reported by DEBUG_OBJECTS when it happens, which the run-wide
# splat check of the guest's log counts.)
check_napi_timer()
{
	local i t

	# an unreadable list would show no timer at all
	grep -q '^cpu: ' /proc/timer_list 2> /dev/null ||
		{ msg "/proc/timer_list cannot be read"; return 1; }
	for i in 1 2 3; do
		t=$(napi_timers)
		if [ -n "$t" ]; then
			msg "NAPI timers pending after the run:"
			while read -r i; do msg "  $i"; done <<< "$t"
			return 1
		fi
		nap 1
	done
}

# irq_states_twice: the interrupts' states now, as irq_states, keeping
# only what two looks a second apart agree on (a driver may disable an
# interrupt for a moment)
irq_states_twice()
{
	local a b

	a=$(irq_states)
	nap 1
	b=$(irq_states)
	comm -12 <(sort <<< "$a") <(sort <<< "$b")
}

check_irqs()
{
	local f v irq act dis depth bad=0
	local -A before=()

	for f in /proc/irq/[0-9]*/soft_moderation; do
		read -r v < "$f" 2> /dev/null
		[ "$v" = off ] && continue
		msg "$f reads '$v' after the run"
		bad=1
	done
	if [ ! -d "$IRQ_DFS" ]; then
		[ "$bad" = 0 ] || return 1
		skip "no $IRQ_DFS (CONFIG_GENERIC_IRQ_DEBUGFS): only the switches checked"
		return
	fi
	while read -r irq _ dis _; do
		before[$irq]=$dis
	done < "$TMP/irqs-before"
	while read -r irq act dis depth _; do
		if [ "$act" = 1 ] && [ "$dis" = 1 ] && [ "${before[$irq]:-0}" = 0 ]; then
			msg "IRQ $irq ($(cat "/sys/kernel/irq/$irq/actions" 2> /dev/null))" \
			    "disabled after the run (depth $depth), not before"
			bad=1
		fi
	done < <(irq_states_twice)
	return "$bad"
}

# check_gsim_lists: the stats file has no list length: a descriptor is on
# a CPU's list exactly while it is marked IRQS_MODERATED, which
# debugfs shows. With delay_us back at 0 every CPU's delay must be 0,
# and the CPU rows' timers, deferred and held must not move any more.
check_gsim_lists()
{
	local a b irq depth mod bad=0 cpu row

	mapfile -t a < "$MOD_DIR/stats"
	nap 2
	mapfile -t b < "$MOD_DIR/stats"
	msg "/proc/irq/soft_moderation/stats after the run:"
	for row in "${b[@]}"; do
		msg "  $row"
	done
	# columns: cpu ... delay_ns(6) ... timers(9) deferred(10) ... held(12)
	while read -r cpu row; do
		msg "CPU $cpu: $row"
		bad=1
	done < <(awk 'NR == FNR { if ($1 ~ /^[0-9]+$/) was[$1] = $9 " " $10 " " $12; next }
		      $1 ~ /^[0-9]+$/ {
			if ($6 != 0) print $1, "delay " $6 " ns with delay_us 0"
			else if (($1 in was) && was[$1] != $9 " " $10 " " $12)
				print $1, "timers/deferred/held moved from " was[$1] " to " $9 " " $10 " " $12
		      }' <(printf '%s\n' "${a[@]}") <(printf '%s\n' "${b[@]}"))
	[ -d "$IRQ_DFS" ] || { msg "no $IRQ_DFS: held-back interrupts not looked for"; return "$bad"; }
	while read -r irq _ _ depth mod _; do
		[ "$mod" = 1 ] || continue
		msg "IRQ $irq still held back by GSIM (IRQS_MODERATED, depth $depth)"
		bad=1
	done < <(irq_states_twice)
	return "$bad"
}

check_devices_gone()
{
	local id result secs bad=0 d

	while read -r id result secs; do
		if [ "$result" != OK ]; then
			msg "del_device $id: $result after $secs s"
			bad=1
		fi
	done < "$DEL_RESULTS"
	while read -r id; do
		[ -e "$NSIM_BUS/devices/netdevsim$id" ] || continue
		msg "netdevsim$id still there"
		bad=1
	done < <(sort -un "$NSIM_IDS")
	for d in "$NSIM_BUS"/devices/*; do
		[ -e "$d" ] || continue
		grep -qxF "${d##*/}" "$TMP/nsim-before" &&
			msg "${d##*/} was there before the run: left alone"
	done
	msg "$(sort -u "$NSIM_IDS" | wc -l) devices made, $(wc -l < "$DEL_RESULTS") deleted at the end"
	return "$bad"
}

# check_kmemleak: two scans with a pause (an object seen unreferenced once
# may be in flight), then what kmemleak reports: each suspect's first line,
# task, and the top of its allocation backtrace
check_kmemleak()
{
	local n

	[ -e "$KMEMLEAK" ] || { skip "no $KMEMLEAK (CONFIG_DEBUG_KMEMLEAK)"; return; }
	if ! kmemleak_scan || ! { nap 5; kmemleak_scan; }; then
		msg "kmemleak: $(dmesg | grep -i 'kmemleak' | tail -n 3 | tr '\n' ' ')"
		return 1
	fi
	n=$(timeout 120 grep -c '^unreferenced object' "$KMEMLEAK")
	[ "$n" = 0 ] && return 0
	msg "kmemleak: ${n:-?} leak suspects (the first 5):"
	awk '/^unreferenced object/ { n++; bt = 0; if (n <= 5) print "# " $0; next }
	     n > 5 { next }
	     /^  comm / { print "#  " $0; next }
	     /^  backtrace/ { bt = 1; frames = 0; next }
	     /^  [a-z]/ { bt = 0; next }
	     bt && /^    / && frames < 8 { frames++; print "#  " $0 }' \
		<(timeout 120 cat "$KMEMLEAK")
	return 1
}

# worker_faults WORKER...: the faults the WORKERs injected into their
# own calls (faults.injected in their processes' counts)
worker_faults()
{
	local w f n=0

	for w in "$@"; do
		for f in "$COUNTS_DIR/$w".*; do
			case $f in *.tmp|*.unexpected) continue ;; esac
			[ -f "$f" ] || continue
			n=$((n + $(awk '$1 == "faults.injected" { n += $2 }
					END { print n + 0 }' "$f")))
		done
	done
	echo "$n"
}

# check_faults: the netlink worker's requests had faults injected, and
# the reconfig worker's queue_reset writes in a run of FAULT_WRITES_MIN_MINUTES
# or more (a 3-minute run makes about a dozen such writes, too few to be
# sure of a fault), and failslab and fail_page_alloc
# counted at least those (more if a worker was killed before it wrote
# its counts; probability 0 lets nothing else fail)
check_faults()
{
	local nl wr total rc=0

	if [ "$HAVE_FAIL_NTH" = 0 ] ||
	   [ ! -e /sys/kernel/debug/failslab/times ]; then
		skip "kernel without FAULT_INJECTION (fail-nth) or FAILSLAB"
		return
	fi
	nl=$(worker_faults netlink)
	wr=$(worker_faults reconfig)
	total=$(faults_total)
	msg "faults injected: netlink requests $nl, queue_reset writes $wr; counted by failslab and fail_page_alloc $total"
	[ "$nl" -gt 0 ] || { msg "no fault injected into a netlink request"; rc=1; }
	if [ "$wr" -eq 0 ] && [ "$MINUTES" -ge "$FAULT_WRITES_MIN_MINUTES" ]; then
		msg "no fault injected into a queue_reset write"
		rc=1
	fi
	if [ "$total" -lt $((nl + wr)) ]; then
		msg "the workers count more injected faults than the kernel"
		rc=1
	fi
	return "$rc"
}

# summary: the figures, on one line and as JSON
summary()
{
	local a faults=() json=()

	for a in "${FAULT_ATTRS[@]}"; do
		[ -e "/sys/kernel/debug/$a/times" ] &&
			faults+=(--faults "$a=$(faults_injected "$a")")
	done
	# Rate-limited: a lower bound, for the record
	faults+=(--faults "printed=$(dmesg | grep -c 'FAULT_INJECTION: forcing a failure')")
	if [ -n "${STRESS_RESULTS:-}" ]; then
		json=(--json "$STRESS_RESULTS/stress.json")
		mkdir -p "$STRESS_RESULTS/stress-logs"
		cp -r "$COUNTS_DIR" "$STRESS_RESULTS/stress-logs/"
		for a in "$LOGS"/*; do
			tail -n 200 "$a" > "$STRESS_RESULTS/stress-logs/${a##*/}"
		done
	fi
	python3 "$HERE/stress_lib.py" summary "$COUNTS_DIR" "$MINUTES" \
		"${json[@]}" "${faults[@]}" "${CASES[@]/#/--case=}"
}

run_phase()
{
	local start=$SECONDS end=$((SECONDS + MINUTES * 60))
	local next=$((SECONDS + 60))

	while [ "$SECONDS" -lt "$end" ]; do
		nap 5
		[ "$SECONDS" -ge "$next" ] || continue
		msg "stress: $(((SECONDS - start) / 60)) of $MINUTES min"
		next=$((next + 60))
	done
}

main()
{
	local t0

	echo "TAP version 13"
	prerequisites
	echo "1..8"
	trap on_signal TERM INT
	t0=$SECONDS
	setup
	msg "stress: set up in $((SECONDS - t0)) s; $MINUTES min from now;" \
	    "netdevsim IDs from $NSIM_BASE; tmp $TMP"
	start_workers
	run_phase
	t0=$SECONDS
	teardown
	msg "stress: workers stopped and changes put back in $((SECONDS - t0)) s"

	run_case workers_ran check_workers_ran
	run_case no_unexpected_errors check_unexpected
	run_case no_napi_timer check_napi_timer
	run_case no_irq_left_disabled check_irqs
	run_case gsim_lists_empty check_gsim_lists
	run_case devices_gone check_devices_gone
	run_case kmemleak_clean check_kmemleak
	run_case faults_injected check_faults
	summary
	echo "# Totals: pass:$(grep -o '=pass' <<< "${CASES[*]}" | wc -l)" \
	     "fail:$(grep -o '=fail' <<< "${CASES[*]}" | wc -l) xfail:0 xpass:0" \
	     "skip:$(grep -o '=skip' <<< "${CASES[*]}" | wc -l) error:0"
	if [ "$KTAP_FAILED" = 0 ]; then
		rm -rf "$TMP"
	else
		msg "the workers' counts and logs are in $TMP"
	fi
	exit "$KTAP_FAILED"
}

main
