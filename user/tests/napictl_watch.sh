#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Seeing whether IRQ suspension holds, and sizing irq-suspend-timeout:
# batch_server, which sleeps WORK_MS after each epoll_wait() that returned
# events, runs under libepoll-busy-poll.so with its batch report on
# (EPOLL_BUSY_POLL_STATS), on the server NIC of virtio_pair.sh, while a
# client sends a little data every PACE_MS. Twice: with an
# irq-suspend-timeout below WORK_MS, which the timer ends inside every
# batch, and with one far above it. Meanwhile "napictl watch --stats"
# looks at the NAPI.
#
#   batch_report_gap   the report's p99 gap between calls is WORK_MS, to
#                      within the spread measured in this guest
#   watch_not_held     the short timeout: watch says the interrupts were
#                      not held off, and that the gap is near or above
#                      the timeout
#   watch_held         the long timeout: watch says they were held off,
#                      and does not warn about the gap
#
# usage: napictl_watch.sh (env: USER_BUILD, the build directory of user/;
# KSFT_DIR, an installed kselftest tree with net/; VIRTIO_NET_NICS)

# Functions called through ktap_test_result look unreachable:
# shellcheck disable=SC2317

# shellcheck source=/dev/null
source "$KSFT_DIR"/kselftest/ktap_helpers.sh
HERE=$(dirname "$(readlink -f "$0")")
# shellcheck source=user/tests/virtio_pair.sh
source "$HERE"/virtio_pair.sh

LIB=$USER_BUILD/libepoll-busy-poll.so
SERVER=$USER_BUILD/batch_server
NAPICTL=(env NAPICTL_YNL_DIR="$KSFT_DIR"/net/lib/ynl
	 NAPICTL_SPEC="$KSFT_DIR"/net/lib/specs/netdev.yaml
	 "$HERE"/../tools/napictl)
PORT=5201
# The application's time per batch, and the client's pace
WORK_MS=50
PACE_MS=5
# The server NAPI's deferral, and the two timeouts (ns)
DEFER_HARD_IRQS=2
GRO_FLUSH_TIMEOUT=2000000
SHORT_TIMEOUT=20000000
LONG_TIMEOUT=1000000000
# Seconds: the whole run, the watch within it after WARMUP
RUN_S=14
WARMUP_S=3
WATCH_S=6
# The p99 gap may exceed WORK_MS by the sleep's overshoot on this guest
GAP_MAX_US=$((WORK_MS * 1000 * 13 / 10))

cleanup()
{
	pair_cleanup
	[ -n "$tmpdir" ] && rm -rf "$tmpdir"
}

setup()
{
	if [ ! -x "$SERVER" ] || [ ! -f "$LIB" ]; then
		ktap_exit_fail_msg "$SERVER or $LIB not built"
	fi
	bp_tmpdir || return 1
	pair_setup || return 1
	pair_napi_set "\"defer-hard-irqs\": $DEFER_HARD_IRQS, \"gro-flush-timeout\": $GRO_FLUSH_TIMEOUT"
}

# client: PACE_MS apart, 64 bytes, for RUN_S seconds
client()
{
	ip netns exec "$NSCL" python3 -c '
import socket, sys, time
addr, port, pace, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) / 1000, float(sys.argv[4])
for _ in range(100):
    try:
        s = socket.create_connection((addr, port), timeout=5)
        break
    except OSError:
        time.sleep(0.1)
else:
    sys.exit("no connection")
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
end = time.monotonic() + secs
while time.monotonic() < end:
    s.sendall(b"x" * 64)
    time.sleep(pace)
' "$SV_ADDR" "$PORT" "$PACE_MS" "$((RUN_S - 2))"
}

# run NAME TIMEOUT_NS: batch_server and the client, napictl watch in the
# middle; sets WATCH (its output) and REPORT (the final batch report)
run()
{
	local name=$1 pid client_pid rc=0

	pair_napi_set "\"irq-suspend-timeout\": $2" || return 1
	ip netns exec "$NSSV" env LD_PRELOAD="$LIB" \
		EPOLL_BUSY_POLL_STATS="$tmpdir/$name" \
		"$SERVER" "$SV_ADDR" "$PORT" "$WORK_MS" "$RUN_S" \
		> "$tmpdir/$name.out" 2>&1 &
	pid=$!
	client > "$tmpdir/$name.client" 2>&1 &
	client_pid=$!
	sleep "$WARMUP_S"
	WATCH=$(ip netns exec "$NSSV" "${NAPICTL[@]}" watch "$SV_DEV" "$WATCH_S" \
		--stats "$tmpdir/$name.$pid" 2>&1) || rc=1
	wait "$client_pid" || { ktap_print_msg "$name: client: $(cat "$tmpdir/$name.client")"; rc=1; }
	wait "$pid" || rc=1
	REPORT=$(cat "$tmpdir/$name.$pid" 2>/dev/null)
	ktap_print_msg "$name ($2 ns): server: $(cat "$tmpdir/$name.out")"
	while read -r line; do ktap_print_msg "  $line"; done <<< "$WATCH"
	ktap_print_msg "$name: report: $(tr '\n' ' ' <<< "$REPORT")"
	return "$rc"
}

# report_value KEY: from REPORT
report_value()
{
	sed -n "s/^$1: //p" <<< "$REPORT"
}

# gap_ok NAME: REPORT's p99 gap is WORK_MS (it cannot be less)
gap_ok()
{
	local p99

	p99=$(report_value gap_p99_us)
	if [ -z "$p99" ] || [ "$(report_value with_events)" -eq 0 ] ||
	   [ "$p99" -lt $((WORK_MS * 1000 * 31 / 32)) ] ||
	   [ "$p99" -gt "$GAP_MAX_US" ]; then
		ktap_print_msg "$1: p99 gap ${p99:-none} us, not ${WORK_MS} ms (max $GAP_MAX_US us)"
		return 1
	fi
}

batch_report_gap()
{
	[ "$short_ok" = 1 ] && [ "$long_ok" = 1 ]
}

watch_not_held()
{
	grep -q 'interrupts NOT held off' <<< "$short_watch" &&
		grep -q 'is near or above irq-suspend-timeout' <<< "$short_watch"
}

watch_held()
{
	grep -q 'interrupts held off (IRQ suspension)' <<< "$long_watch" &&
		! grep -q 'near or above' <<< "$long_watch"
}

short_ok=1
long_ok=1
ktap_print_header
trap cleanup EXIT
setup || ktap_exit_fail_msg "set-up failed"
ktap_set_plan 3
run short "$SHORT_TIMEOUT" || short_ok=0
short_watch=$WATCH
gap_ok short || short_ok=0
run long "$LONG_TIMEOUT" || long_ok=0
long_watch=$WATCH
gap_ok long || long_ok=0

ktap_test_result batch_report_gap batch_report_gap
ktap_test_result watch_not_held watch_not_held
ktap_test_result watch_held watch_held
ktap_finished
