#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# libepoll-busy-poll.so under an epoll program that never asks for busy
# polling (epoll_probe): every epoll instance it creates must have the
# parameters of the environment, or the recommended ones, and a program
# whose settings or kernel rule them out must run as it would without the
# library, told why once.
#
# usage: epoll_params_preload.sh (env: USER_BUILD, the build directory of
# user/ with the test helpers; KSFT_DIR, an installed kselftest tree)

# Functions called through ktap_test_result look unreachable:
# shellcheck disable=SC2317

# shellcheck source=/dev/null
source "$KSFT_DIR"/kselftest/ktap_helpers.sh

LIB=$USER_BUILD/libepoll-busy-poll.so
PROBE=$USER_BUILD/epoll_probe
# epoll_probe linked with a library that makes an instance in its
# constructor, before the preloaded library's constructor ran
PROBE_EARLY=$USER_BUILD/epoll_probe_early
NO_IOCTL=$USER_BUILD/no_epoll_ioctl
# What a new epoll instance has without the library, and with its defaults
KERNEL="usecs=0 budget=0 prefer=0"
RECOMMENDED="usecs=0 budget=64 prefer=1"
SETTINGS=(EPOLL_BUSY_POLL_USECS EPOLL_BUSY_POLL_BUDGET EPOLL_PREFER_BUSY_POLL)

tmpdir=$(mktemp -d) || exit "$KSFT_FAIL"
trap 'rm -rf "$tmpdir"' EXIT

# probe [VAR=VALUE...] [--] COMMAND...: runs COMMAND with the library
# preloaded and the library's settings only from the arguments; sets OUT,
# ERR and RC.
probe()
{
	local env=(-u "${SETTINGS[0]}" -u "${SETTINGS[1]}" -u "${SETTINGS[2]}")

	while [[ "${1:-}" == *=* ]]; do
		env+=("$1")
		shift
	done
	[ "${1:-}" = -- ] && shift
	OUT=$(env "${env[@]}" LD_PRELOAD="$LIB" "$@" 2> "$tmpdir/err")
	RC=$?
	ERR=$(cat "$tmpdir/err")
}

# expect N PARAMS: the program worked and printed N instances, each with
# PARAMS
expect()
{
	local n=$1 params=$2 line count=0

	if [ "$RC" -ne 0 ]; then
		ktap_print_msg "the program failed (exit $RC): $OUT"
		ktap_print_msg "its stderr: ${ERR:-nothing}"
		return 1
	fi
	while read -r line; do
		[ -n "$line" ] || continue
		if [ "${line#* }" != "$params" ]; then
			ktap_print_msg "got \"$line\", expected $params"
			return 1
		fi
		count=$((count + 1))
	done <<< "$OUT"
	if [ "$count" != "$n" ]; then
		ktap_print_msg "$count epoll instances reported, expected $n: $OUT"
		return 1
	fi
}

# said_once TEXT: the library said one line, and it contains TEXT
said_once()
{
	if [ "$(printf '%s' "$ERR" | grep -c .)" -ne 1 ] || [[ "$ERR" != *"$1"* ]]; then
		ktap_print_msg "expected one message with \"$1\" on stderr, got: ${ERR:-nothing}"
		return 1
	fi
}

said_nothing()
{
	[ -z "$ERR" ] || { ktap_print_msg "unexpected message: $ERR"; return 1; }
}

epoll_params_preload()
{
	OUT=$("$PROBE" 2> "$tmpdir/err")
	RC=$?
	ERR=$(cat "$tmpdir/err")
	expect 2 "$KERNEL" || return 1

	probe "$PROBE" && expect 2 "$RECOMMENDED" && said_nothing || return 1
	probe EPOLL_BUSY_POLL_USECS=50 EPOLL_BUSY_POLL_BUDGET=16 \
	      EPOLL_PREFER_BUSY_POLL=0 "$PROBE" &&
		expect 2 "usecs=50 budget=16 prefer=0" && said_nothing || return 1
	probe EPOLL_BUSY_POLL_USECS=2147483647 EPOLL_BUSY_POLL_BUDGET=1 "$PROBE" &&
		expect 2 "usecs=2147483647 budget=1 prefer=1" && said_nothing || return 1
	probe EPOLL_BUSY_POLL_USECS=9 "$PROBE_EARLY" &&
		expect 3 "usecs=9 budget=64 prefer=1" && said_nothing
}

bad_values()
{
	local bad

	for bad in EPOLL_BUSY_POLL_USECS={abc,-1,2147483648,99999999999999999999,,1x,' 5'} \
		   EPOLL_BUSY_POLL_BUDGET={0,65536,12abc,+3} \
		   EPOLL_PREFER_BUSY_POLL={2,yes,0x1}; do
		probe "$bad" "$PROBE"
		if ! { expect 2 "$KERNEL" && said_once "${bad%%=*}=\"${bad#*=}\""; }; then
			ktap_print_msg "with $bad"
			return 1
		fi
	done
}

# A kernel without the ioctl (ENOTTY before 6.9), one without busy
# polling (EOPNOTSUPP), one that refuses the values (EINVAL), and an epoll
# instance that refuses them (EPERM: a budget above 64 without
# CAP_NET_ADMIN). One message, however many instances; errno as the C
# library leaves it.
ioctl_fails()
{
	local err what args n

	for err in ENOTTY EOPNOTSUPP EINVAL; do
		case $err in
		ENOTTY) what="has no EPIOCSPARAMS" ;;
		EOPNOTSUPP) what="cannot busy poll from epoll" ;;
		EINVAL) what="refused EPIOCSPARAMS" ;;
		esac
		for args in "" "threads 4"; do
			n=2
			[ -n "$args" ] && n=4
			# shellcheck disable=SC2086 # args are words
			probe -- "$NO_IOCTL" "$err" "$PROBE" $args
			if ! { expect "$n" "$KERNEL" && said_once "$what"; }; then
				ktap_print_msg "with EPIOCSPARAMS failing with $err (${args:-2 instances})"
				return 1
			fi
		done
	done
	# The program's own file on descriptor 2 is not the library's stderr
	probe -- "$NO_IOCTL" ENOTTY "$PROBE" stderr-to "$tmpdir/data"
	expect 2 "$KERNEL" && said_nothing || return 1
	if [ -s "$tmpdir/data" ]; then
		ktap_print_msg "the library wrote into the program's file: $(cat "$tmpdir/data")"
		return 1
	fi
	probe EPOLL_BUSY_POLL_BUDGET=128 setpriv --inh-caps=-net_admin \
		--bounding-set=-net_admin "$PROBE" threads 4 &&
		expect 4 "$KERNEL" && said_once "needs CAP_NET_ADMIN" || return 1
	probe EPOLL_BUSY_POLL_BUDGET=128 "$PROBE" threads 4 &&
		expect 4 "usecs=0 budget=128 prefer=1" && said_nothing
}

fork_exec_threads()
{
	local env=(EPOLL_BUSY_POLL_USECS=7 EPOLL_BUSY_POLL_BUDGET=32)
	local want="usecs=7 budget=32 prefer=1"

	probe "${env[@]}" "$PROBE" fork && expect 3 "$want" && said_nothing &&
		probe "${env[@]}" "$PROBE" exec && expect 2 "$want" && said_nothing &&
		probe "${env[@]}" "$PROBE" threads 16 && expect 16 "$want" &&
		said_nothing
}

ktap_print_header
# ./kdev test builds them: one missing is a build failure
for f in "$LIB" "$PROBE" "$PROBE_EARLY" "$NO_IOCTL"; do
	[ -f "$f" ] || ktap_exit_fail_msg "$f not built"
done
command -v setpriv > /dev/null || { ktap_skip_all "setpriv not installed"; exit "$KSFT_SKIP"; }
[ "$(id -u)" -eq 0 ] || { ktap_skip_all "needs root (CAP_NET_ADMIN)"; exit "$KSFT_SKIP"; }
ktap_set_plan 4
ktap_test_result epoll_params_preload epoll_params_preload
ktap_test_result bad_values bad_values
ktap_test_result ioctl_fails ioctl_fails
ktap_test_result fork_exec_threads fork_exec_threads
ktap_finished
