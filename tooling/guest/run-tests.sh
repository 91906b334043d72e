#!/bin/bash
# Runs inside the guest: the selected kselftests through the kernel's own
# run_kselftest.sh, then a copy of the kernel log (KUnit reports there).
#
# usage: run-tests.sh RESULTS_DIR KSELFTEST_INSTALL_DIR collection:test...
#
# Test failures are not this script's failures: it always runs everything
# and leaves the verdict to the host's report.
set -uo pipefail

results=$1
ksft=$2
shift 2

# Tools the host installed for the guest (see host_guest_tools) come first.
export PATH=${KDEV_GUEST_PATH:+$KDEV_GUEST_PATH:}/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mkdir -p "$results"
uname -r > "$results/uname.txt"

# One run_kselftest.sh per test: the runner prints a test's own output
# through a buffered filter, so in a combined run it would come out after
# later tests' results. Each test's KTAP goes to a file of its own.
n=0
echo "kdev-guest: running $# kselftests"
for t in "$@"; do
	n=$((n + 1))
	echo "kdev-guest: $t"
	(cd "$ksft" && ./run_kselftest.sh -t "$t") \
		> "$results/kselftest-$(printf %02d "$n").ktap" 2>&1
done
echo "kdev-guest: kselftests done"
dmesg > "$results/dmesg.txt"
echo "kdev-guest: done"
