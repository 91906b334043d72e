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

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mkdir -p "$results"
uname -r > "$results/uname.txt"

args=()
for t in "$@"; do
	args+=(-t "$t")
done

echo "kdev-guest: running $# kselftests"
(cd "$ksft" && ./run_kselftest.sh "${args[@]}") > "$results/kselftest.ktap" 2>&1
echo "kdev-guest: kselftests done (exit $?)"
dmesg > "$results/dmesg.txt"
echo "kdev-guest: done"
