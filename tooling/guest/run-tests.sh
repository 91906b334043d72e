#!/bin/bash
# Runs inside the guest: the selected kselftests through the kernel's own
# run_kselftest.sh, the tests of user/, the stress run
# (KDEV_STRESS_MINUTES, if not 0), then a copy of the kernel log (KUnit
# reports there). Each test's output also goes, line by line with the
# guest's uptime, to a .times file beside its KTAP file.
#
# usage: run-tests.sh RESULTS_DIR KSELFTEST_INSTALL_DIR collection:test...
#
# Test failures are not this script's failures: it always runs everything
# and leaves the verdict to the host's report.
set -uo pipefail

results=$1
ksft=$2
shift 2
kdev_root=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)

# Tools the host installed for the guest (see host_guest_tools) come first.
export PATH=${KDEV_GUEST_PATH:+$KDEV_GUEST_PATH:}/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mkdir -p "$results"
uname -r > "$results/uname.txt"

# The NICs this run owns (KDEV_TEST_MACS: their MACs in tests/qemu-opts),
# by name, for the tests that move NICs into namespaces or reconfigure
# them: they take only NICs they are given.
nics=()
for mac in ${KDEV_TEST_MACS:-}; do
	for dev in /sys/class/net/*; do
		[ "$(cat "$dev/address" 2>/dev/null)" = "$mac" ] && nics+=("${dev##*/}")
	done
done
export VIRTIO_NET_NICS="${nics[*]}"
echo "kdev-guest: NICs for the tests: ${VIRTIO_NET_NICS:-none}"

# The kselftest timeouts (45 s unless a collection's settings file says
# otherwise) are set for real hardware; under TCG with a debug kernel the
# same work takes many times as long, so no test gets less than this.
min_timeout=${KDEV_KSFT_MIN_TIMEOUT:-300}

# ksft_timeout COLLECTION: the timeout run_kselftest.sh would use.
ksft_timeout()
{
	local t

	t=$(sed -n 's/^timeout=\([0-9]*\)$/\1/p' "$ksft/$1/settings" 2>/dev/null)
	echo "${t:-45}"
}

# follow FILE TIMES PID: until PID has ended, each line FILE gets, into
# TIMES after the guest's uptime in seconds (as in the kernel log), so
# that a run shows where each test spends its time
follow()
{
	local line up

	tail -n +1 -F --pid="$3" "$1" 2> /dev/null |
		while IFS= read -r line; do
			read -r up _ < /proc/uptime
			printf '%6d %s\n' "${up%.*}" "$line"
		done > "$2"
}

# One run_kselftest.sh per test, each into a KTAP file of its own. The
# runner writes a test's own output through a buffered filter to
# /dev/stdout, which does not reliably reach a redirected stdout here, so
# it is asked for a per-test log (-p: /tmp/<test>) and that is appended.
n=0
echo "kdev-guest: running $# kselftests"
for t in "$@"; do
	n=$((n + 1))
	out=$results/kselftest-$(printf %02d "$n").ktap
	echo "kdev-guest: $t"
	timeout_opt=()
	[ "$(ksft_timeout "${t%%:*}")" -ge "$min_timeout" ] ||
		timeout_opt=(-o "$min_timeout")
	rm -f "/tmp/${t##*:}"
	# PYTHONUNBUFFERED: python tests print as they go, for follow
	(cd "$ksft" && PYTHONUNBUFFERED=1 ./run_kselftest.sh -p \
		"${timeout_opt[@]}" -t "$t") > "$out" 2>&1 &
	pid=$!
	follow "/tmp/${t##*:}" "${out%.ktap}.times" "$pid"
	wait "$pid"
	cat "/tmp/${t##*:}" >> "$out" 2>/dev/null
done
echo "kdev-guest: kselftests done"

# run_wrapped OUT COLLECTION NAME SECONDS CMD...: CMD, given SECONDS, in
# the runner's format: its own KTAP as "# " lines in OUT, then its result
# as "selftests: COLLECTION: NAME" from its exit status (4: skipped).
run_wrapped()
{
	local out=$1 coll=$2 name=$3 limit=$4 rc=0 pid
	shift 4

	timeout -k 30 "$limit" "$@" < /dev/null > "$out.log" 2>&1 &
	pid=$!
	follow "$out.log" "${out%.ktap}.times" "$pid"
	wait "$pid" || rc=$?
	sed 's/^/# /' "$out.log" > "$out"
	rm -f "$out.log"
	case $rc in
	0) echo "ok 1 selftests: $coll: $name" ;;
	4) echo "ok 1 selftests: $coll: $name # SKIP" ;;
	124) echo "not ok 1 selftests: $coll: $name # TIMEOUT $limit seconds" ;;
	*) echo "not ok 1 selftests: $coll: $name # exit=$rc" ;;
	esac >> "$out"
}

# The tests of user/ (KDEV_USER_TESTS: file names in KDEV_USER_DIR, the
# programs built in KDEV_USER_BUILD), each with the timeout of
# KDEV_USER_DIR/settings if it gives a longer one.
user_timeout=$(sed -n 's/^timeout=\([0-9]*\)$/\1/p' "${KDEV_USER_DIR:-.}/settings" 2>/dev/null)
[ "${user_timeout:-0}" -gt "$min_timeout" ] || user_timeout=$min_timeout
n=0
for t in ${KDEV_USER_TESTS:-}; do
	n=$((n + 1))
	echo "kdev-guest: user:$t"
	run_wrapped "$results/kselftest-user-$(printf %02d "$n").ktap" user "$t" \
		"$user_timeout" env USER_BUILD="$KDEV_USER_BUILD" KSFT_DIR="$ksft" \
		"$KDEV_USER_DIR/$t"
done

# The stress run (tests/stress/stress.sh) for KDEV_STRESS_MINUTES, as
# "kdev:stress_short"; its teardown and end checks get 10 minutes more.
# Last, as it offlines a CPU, moderates interrupts and injects faults.
stress_minutes=${KDEV_STRESS_MINUTES:-0}
if [[ $stress_minutes =~ ^[0-9]+$ ]] && [ "$stress_minutes" -gt 0 ]; then
	echo "kdev-guest: kdev:stress_short ($stress_minutes min)"
	run_wrapped "$results/kselftest-stress.ktap" kdev stress_short \
		$((stress_minutes * 60 + 600)) env KSFT_DIR="$ksft" \
		STRESS_RESULTS="$results" "$kdev_root/tests/stress/stress.sh" \
		"$stress_minutes"
fi
dmesg > "$results/dmesg.txt"
echo "kdev-guest: done"
