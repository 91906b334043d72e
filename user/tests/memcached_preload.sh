#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# memcached, which never sets EPIOCSPARAMS, under libepoll-busy-poll.so:
# its epoll instances must suspend the IRQ of the NAPI its connections
# arrive on. Two virtio-net NICs on one network (VIRTIO_NET_NICS, as for
# the kselftests in drivers/net): the first in a server namespace with one
# queue pair, so that every connection is that queue's NAPI, whose
# napi-set values are those IRQ suspension needs (IRQ deferral and a long
# irq-suspend-timeout); the second in a client namespace, from which
# mc_load.py sends pipelined set and get requests over several
# connections and checks every reply.
#
# The evidence is the one busy_poll_test.sh uses for its timers: while the
# NAPI is suspended its timer is armed with irq-suspend-timeout, otherwise
# with gro-flush-timeout at most. Deferral is switched off on every other
# NAPI and config slot of both NICs, so the server queue's NAPI is the
# only one with a timer. Every arming of a NAPI timer during the load is
# counted with the timer:hrtimer_start trace event: without the library
# the deferral timer must be armed and never one for more than
# SUSPEND_SEEN_NS; with it, memcached must have the library mapped and
# the NAPI must be armed with irq-suspend-timeout. memcached suspends
# after each epoll_wait() that returns events and resumes at the next
# that finds none. Counting arms, not sampling pending timers, cannot
# miss a 2 ms deferral timer on a slow guest.
#
# usage: memcached_preload.sh (env: USER_BUILD, the build directory of
# user/; KSFT_DIR, an installed kselftest tree with net/; VIRTIO_NET_NICS)

# Functions called through ktap_test_result look unreachable:
# shellcheck disable=SC2317

# shellcheck source=/dev/null
source "$KSFT_DIR"/kselftest/ktap_helpers.sh
# shellcheck source=user/tests/virtio_pair.sh
source "$(dirname "$(readlink -f "$0")")"/virtio_pair.sh

LIB=$USER_BUILD/libepoll-busy-poll.so
LOAD=$(dirname "$(readlink -f "$0")")/mc_load.py
PORT=11211
# The server NAPI's values: deferral short against the suspend timeout
DEFER_HARD_IRQS=10
GRO_FLUSH_TIMEOUT=2000000
IRQ_SUSPEND_TIMEOUT=5000000000
# A timer with more than this left is the suspend timeout's
SUSPEND_SEEN_NS=1000000000
# The load: seconds, connections, set/get pairs in flight per connection
LOAD_SECONDS=10
LOAD_CONNS=4
LOAD_DEPTH=8

setup()
{
	command -v memcached > /dev/null || skip_all "memcached not installed"
	# ./kdev test builds it: missing is a build failure
	[ -f "$LIB" ] || ktap_exit_fail_msg "$LIB not built"
	[ -r /proc/timer_list ] || skip_all "/proc/timer_list not available"
	trace_save
	[ "$HAVE_TRACE" = 1 ] ||
		skip_all "no timer:hrtimer_start trace event to count NAPI timers with"
	bp_tmpdir || return 1
	pair_setup || return 1
	pair_napi_set "\"defer-hard-irqs\": $DEFER_HARD_IRQS, \"gro-flush-timeout\": $GRO_FLUSH_TIMEOUT, \"irq-suspend-timeout\": $IRQ_SUSPEND_TIMEOUT"
}

# serve NAME [LD_PRELOAD value]: memcached with one worker thread (one
# epoll instance for the connections) in the server namespace, and the
# load from the client namespace, during which NAPI timer arms are
# traced. Sets SEEN (arms for more than SUSPEND_SEEN_NS), DEFERRED (arms
# for at most GRO_FLUSH_TIMEOUT), OPS and MAPPED (1 if memcached had the
# library mapped).
serve()
{
	local name=$1 preload=${2:-} pid load rc=0

	ip netns exec "$NSSV" env ${preload:+LD_PRELOAD="$preload"} memcached \
		-u root -t 1 -U 0 -l "$SV_ADDR" -p "$PORT" \
		> "$tmpdir/$name.log" 2>&1 &
	pid=$!
	if ! slowwait 30 ip netns exec "$NSCL" bash -c "exec 3<>/dev/tcp/$SV_ADDR/$PORT" \
	     2>/dev/null; then
		ktap_print_msg "$name: memcached did not listen within 30 s"
		kill "$pid"
		return 1
	fi
	trace_timers_start
	ip netns exec "$NSCL" timeout 300 python3 "$LOAD" "$SV_ADDR" "$PORT" \
		"$LOAD_SECONDS" "$LOAD_CONNS" "$LOAD_DEPTH" > "$tmpdir/$name.load" 2>&1 &
	load=$!
	MAPPED=0
	grep -qF "${LIB##*/}" /proc/"$pid"/maps 2>/dev/null && MAPPED=1
	wait "$load" || rc=1
	DEFERRED=$(trace_timers_stop 1 "$GRO_FLUSH_TIMEOUT")
	SEEN=$(trace_timers_stop "$SUSPEND_SEEN_NS")
	OPS=$(awk '/^ops/ { print $2 }' "$tmpdir/$name.load")
	kill "$pid"
	wait "$pid"
	ktap_print_msg "$name: $(cat "$tmpdir/$name.load"); NAPI timer" \
		"armed $SEEN times for more than $SUSPEND_SEEN_NS ns, $DEFERRED" \
		"times for at most $GRO_FLUSH_TIMEOUT ns; library mapped: $MAPPED"
	[ -s "$tmpdir/$name.log" ] && ktap_print_msg "$name: memcached said: $(head -c 300 "$tmpdir/$name.log")"
	if [ "$rc" != 0 ] || [ -z "$OPS" ] || [ "$OPS" -eq 0 ]; then
		ktap_print_msg "$name: the load failed or got no reply"
		return 1
	fi
}

memcached_without_library()
{
	napi_timers_idle || return 1
	serve plain || return 1
	[ "$DEFERRED" -gt 0 ] ||
		{ ktap_print_msg "the server NAPI's deferral timer was never armed"; return 1; }
	[ "$SEEN" -eq 0 ] ||
		{ ktap_print_msg "a timer above $SUSPEND_SEEN_NS ns without the library"; return 1; }
}

memcached_preload()
{
	napi_timers_idle || return 1
	serve preload "$LIB" || return 1
	[ "$MAPPED" = 1 ] || { ktap_print_msg "memcached did not load $LIB"; return 1; }
	[ "$SEEN" -gt 0 ] ||
		{ ktap_print_msg "the NAPI was never armed with irq-suspend-timeout"; return 1; }
}

ktap_print_header
cleanup()
{
	trace_restore
	pair_cleanup
}

trap cleanup EXIT
setup || ktap_exit_fail_msg "set-up failed"
ktap_set_plan 2
ktap_test_result memcached_without_library memcached_without_library
ktap_test_result memcached_preload memcached_preload
ktap_finished
