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
export BENCH_TOP=$out	# the host reads requests here (host_ask)

# watchdog: while the parts run, if none of their logs grows for
# STALL_SECS, record every task's state and kernel stack in
# OUT/stall-N.txt, once per stall: a hung benchmark leaves evidence.
STALL_SECS=60
watchdog()
{
	local size last=-1 quiet=0 n=0 task

	set +e			# tasks come and go while it reads /proc
	while sleep 5; do
		size=$(cat "$out"/*.log 2>/dev/null | wc -c)
		if [ "$size" != "$last" ]; then
			last=$size
			quiet=0
			continue
		fi
		quiet=$((quiet + 5))
		[ "$quiet" = "$STALL_SECS" ] || continue
		n=$((n + 1))
		for task in /proc/[0-9]*/task/[0-9]*; do
			printf '== %s %s %s\n' "${task##*/}" "$(cat "$task/comm")" \
				"$(grep '^State' "$task/status")"
			cat "$task/stack"
		done > "$out/stall-$n.txt" 2>&1
	done
}

uname -r > "$out/uname.txt"
nproc > "$out/nproc.txt"
watchdog &
watchdog_pid=$!
trap 'kill "$watchdog_pid" 2>/dev/null || true' EXIT
rc=0
for part in ${BENCH_PARTS:-rr mc gsim flood}; do
	case "$part" in
	rr)	"$here/rr.sh" "$tree" "$tools" "$out/rr" ;;
	mc)	"$here/rr.sh" "$tree" "$tools" "$out/mc" memcached ;;
	gsim)	"$here/gsim.sh" "$tree" "$tools" "$out/gsim" ;;
	flood)	"$here/flood.sh" "$tree" "$tools" "$out/flood" ;;
	*)	echo "unknown part $part" >&2; false ;;
	esac 2>&1 | tee "$out/$part.log" || rc=1
done
exit "$rc"
