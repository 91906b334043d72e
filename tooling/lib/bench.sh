# shellcheck shell=bash
# The benchmark (kdev bench): the seeds' comparison tables for IRQ
# suspension and GSIM, measured side by side in one guest boot on the
# non-debug "bench" kernel. The benchmark itself lives in bench/: the load
# tools, the guest scripts, the QEMU devices and the report. Not a test:
# nothing here passes or fails on the figures.

KDEV_BENCH=$KDEV_ROOT/bench
KDEV_BENCH_RESULTS=$KDEV_BENCH/results
KDEV_BENCH_APT_PACKAGES=(python3-matplotlib)	# only the benchmark needs them

# bench_params QUICK: the guest's settings (see bench/guest/*.sh), as
# NAME=VALUE words for env(1); BENCH_PARTS from the environment narrows the
# parts that run (rr, mc, gsim, flood). The full run takes about 57 minutes
# of guest time on 2 cores, the quick one about 16.
bench_params()
{
	[ -z "${BENCH_PARTS:-}" ] || printf 'BENCH_PARTS=%s\n' "$BENCH_PARTS"
	if [ "$1" = 1 ]; then
		printf '%s\n' BENCH_REPS=2 BENCH_SECS=2 BENCH_WARMUP=0.5 \
			BENCH_LOADS=50 "BENCH_XS=50 200" "BENCH_DEPTHS=1 128" \
			BENCH_FLOOD_RUNGS=4
	else
		printf '%s\n' BENCH_REPS=3 BENCH_SECS=5 BENCH_WARMUP=1 \
			"BENCH_LOADS=25 50 75" "BENCH_XS=50 200" "BENCH_DEPTHS=1 8 128" \
			BENCH_FLOOD_RUNGS=5
	fi
}

# The GSIM flood's programs, from the irq_moderation selftests of the tree
# the benchmark boots: flood_guest runs in the guest, ivshmem_flood on the
# host (guest_vng starts it, from KDEV_FLOOD_PROG). The bench kernel is
# built without kselftests, so bench_tools builds the two itself, with the
# selftest's flags and the host's UAPI headers (vfio no-IOMMU is old).
KDEV_BENCH_FLOOD_SRC=tools/testing/selftests/irq_moderation

# bench_tools OUT TREE: build the load tools and libepoll-timeout.so into
# OUT/bench-tools, the GSIM flood's programs from TREE there too, and
# user/'s preload library into OUT/user; the guest runs them from there
# (it shares the host's root).
bench_tools()
{
	local out=$1/bench-tools src=$2/$KDEV_BENCH_FLOOD_SRC t

	mkdir -p "$out"
	for t in rr_server rr_client cpu_spin; do
		gcc -O2 -Wall -Wextra -Werror -o "$out/$t" "$KDEV_BENCH/tools/$t.c" -lm ||
			die "cannot build bench/tools/$t.c"
	done
	gcc -O2 -Wall -Wextra -Werror -shared -fPIC -o "$out/libepoll-timeout.so" \
		"$KDEV_BENCH/tools/epoll_timeout.c" -ldl ||
		die "cannot build bench/tools/epoll_timeout.c"
	# Not -Werror: the sources are the series', built as its Makefile does
	gcc -O2 -Wall -o "$out/flood_guest" "$src/flood_guest.c" -lpthread ||
		die "cannot build $src/flood_guest.c"
	gcc -O2 -Wall -o "$out/ivshmem_flood" "$src/ivshmem_flood.c" ||
		die "cannot build $src/ivshmem_flood.c"
	make -B -s -C "$KDEV_ROOT/user" O="$1/user" >&2 || die "cannot build user/"
	printf '%s\n' "$out"
}

# bench_pin PID spread|split: set the host CPUs of QEMU process PID's
# threads. split puts the thread of vCPU 1 (the benchmark's server CPU)
# alone on the last host CPU and every other thread (vCPU 0, the main loop
# that moves the packets, the workers) on the rest; spread lets all of them
# run anywhere.
bench_pin()
{
	local pid=$1 how=$2 last=$(($(nproc) - 1)) task comm cpus

	[ "$last" -ge 1 ] || return 1
	for task in /proc/"$pid"/task/*; do
		comm=$(cat "$task/comm" 2>/dev/null) || continue
		cpus=0-$last
		if [ "$how" = split ]; then
			cpus=0-$((last - 1))
			[[ "$comm" = "CPU 1/"* ]] && cpus=$last
		fi
		# a thread of QEMU's pools may exit at any time
		taskset -pc "$cpus" "${task##*/}" > /dev/null 2>&1 ||
			[ ! -d "$task" ] || return 1
		printf '%s %s: %s\n' "${task##*/}" "$comm" "$cpus"
	done
}

# bench_qemu ANCESTOR: the QEMU process started under process ANCESTOR.
bench_qemu()
{
	local pid p

	for pid in $(pgrep '^qemu-system'); do
		p=$pid
		while [ "$p" -gt 1 ]; do
			[ "$p" = "$1" ] && { echo "$pid"; return 0; }
			p=$(awk '/^PPid:/ { print $2 }' "/proc/$p/status" 2>/dev/null) || break
		done
	done
	return 1
}

# bench_sample PID: the CPU time of QEMU process PID's threads, in clock
# ticks: a line "uptime SECONDS", then "TID utime stime COMM" per thread.
bench_sample()
{
	local task stat f

	printf 'uptime %s\n' "$(cut -d' ' -f1 /proc/uptime)"
	for task in /proc/"$1"/task/*; do
		stat=$(cat "$task/stat" 2>/dev/null) || continue
		# the fields after "(comm)": state is field 3, utime 14, stime 15
		read -r -a f <<< "${stat##*) }"
		printf '%s %s %s %s\n' "${task##*/}" "${f[11]}" "${f[12]}" \
			"$(cat "$task/comm")"
	done
}

# bench_host_watch RAW: until killed or kdev is gone, do what the guest
# asks in RAW/host-request (host_ask in bench/guest/lib.sh) to the
# benchmark's QEMU, and answer "ok" or "failed" in a new file
# RAW/host-done-ID; each pinning is logged in RAW/pin-HOW.log. It polls
# with builtins, not to take the host CPU it measures.
bench_host_watch()
{
	local raw=$1 req last='' seq action arg pid rc

	while sleep 0.05 && kill -0 "$$" 2>/dev/null; do
		[ -e "$raw/host-request" ] || continue
		read -r req < "$raw/host-request" || continue
		[ "$req" != "$last" ] || continue
		last=$req
		read -r seq action arg <<< "$req"
		[[ "$seq" =~ ^[0-9]+\.[0-9]+$ ]] || continue
		rc=1
		if pid=$(bench_qemu "$$"); then
			case "$action:$arg" in
			pin:spread|pin:split)
				bench_pin "$pid" "$arg" > "$raw/pin-$arg.log" 2>&1 &&
					rc=0 ;;
			sample:*..*)
				;;
			sample:?*)
				bench_sample "$pid" > "$raw/$arg" && rc=0 ;;
			esac
		fi
		if [ "$rc" = 0 ]; then
			echo ok > "$raw/.host-done"
		else
			echo failed > "$raw/.host-done"
		fi
		mv "$raw/.host-done" "$raw/host-done-$seq"
	done
}

# cmd_bench [--quick]: build, run, report. The results go to
# bench/results/DATE_KERNEL[-quick]; a full run also updates README.md.
cmd_bench()
{
	local quick=0 kind=full out tools raw results params rc=0 start=$SECONDS
	local kver name readme=() suffix='' accel host_watch

	case "${1:-}" in
	--quick)	quick=1; kind=quick; suffix=-quick ;;
	"")		readme=(--readme "$KDEV_ROOT/README.md") ;;
	*)		die "usage: kdev bench [--quick]" ;;
	esac

	host_deps
	apt_ensure "${KDEV_BENCH_APT_PACKAGES[@]}"
	series_build_tree
	log "base: $BASE_PACKAGE $(base_version), $(series_patches | wc -l) patches"
	out=$(build_kernel "$KDEV_BUILD_TREE" bench)
	tools=$(bench_tools "$out" "$KDEV_BUILD_TREE")
	raw=$out/bench-run
	rm -rf "$raw"
	mkdir -p "$raw"
	mapfile -t params < <(bench_params "$quick")
	accel=$(guest_accel "$out" | tr '[:lower:]' '[:upper:]')
	log "booting the guest (QEMU $accel) for the benchmark ($kind): ${params[*]}"
	bench_host_watch "$raw" &
	host_watch=$!
	KDEV_QEMU_OPTS_FILE=$KDEV_BENCH/qemu-opts KDEV_GUEST_TIMEOUT=3600 \
		KDEV_FLOOD_PROG=$tools/ivshmem_flood \
		guest_exec "$out" "$raw" "$raw/console.log" env "${params[@]}" \
		BENCH_MEMCACHED="$KDEV_GUEST_PROGRAMS/usr/bin/memcached" \
		BENCH_PRELOAD_LIB="$out/user/libepoll-busy-poll.so" \
		"$KDEV_BENCH/guest/run.sh" "$KDEV_BUILD_TREE" "$tools" \
		"$KDEV_GUEST_RESULTS" || rc=$?
	kill "$host_watch" 2>/dev/null || true
	wait "$host_watch" 2>/dev/null || true
	if [ "$rc" != 0 ]; then
		tail -n 30 "$raw/console.log" >&2
		die "the benchmark failed in the guest (status $rc; logs in $raw)"
	fi
	log "guest run took $((SECONDS - start)) s in all"

	kver=$(cat "$raw/uname.txt")
	name=$(date +%Y-%m-%d)_$kver$suffix
	results=$KDEV_BENCH_RESULTS/$name
	rm -rf "$results"
	mkdir -p "$results"
	cp "$out/.config" "$results/config"
	printf '%s\n' "kernel: $kver" "base: $BASE_PACKAGE $(base_version)" \
		"patches: $(series_patches | wc -l)" "settings: ${params[*]}" \
		"host: $(nproc) CPUs, $(uname -m), QEMU $accel" > "$results/run.txt"
	/usr/bin/python3 "$KDEV_BENCH/report.py" "$raw" "$results" \
		--title "Measured $(date +%Y-%m-%d) on $kver ($(series_patches | wc -l) patches), QEMU $accel with $KDEV_GUEST_CPUS vCPUs on a $(nproc)-core host; results in bench/results/$name." \
		"${readme[@]}"
	log "results in $results ($((SECONDS - start)) s in all)"
}
