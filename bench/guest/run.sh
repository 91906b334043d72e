#!/bin/bash
# Runs inside the guest: every part of the benchmark in BENCH_PARTS, each
# into its own directory under OUT_DIR, with its log.
#
# usage: run.sh KERNEL_TREE TOOLS_DIR OUT_DIR
set -euo pipefail

tree=$1
tools=$2
out=$3
here=$(dirname "$0")
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

uname -r > "$out/uname.txt"
nproc > "$out/nproc.txt"
rc=0
for part in ${BENCH_PARTS:-rr gsim}; do
	case "$part" in
	rr)	"$here/rr.sh" "$tree" "$tools" "$out/rr" ;;
	gsim)	"$here/gsim.sh" "$tree" "$out/gsim" ;;
	*)	echo "unknown part $part" >&2; false ;;
	esac 2>&1 | tee "$out/$part.log" || rc=1
done
exit "$rc"
