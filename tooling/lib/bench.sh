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
# NAME=VALUE words for env(1). The full run takes about 20 minutes of guest
# time on 2 cores, the quick one about 5.
bench_params()
{
	if [ "$1" = 1 ]; then
		printf '%s\n' BENCH_REPS=2 BENCH_SECS=2 BENCH_WARMUP=0.5 \
			BENCH_LOADS=50 "BENCH_XS=50 200" "BENCH_DEPTHS=1 128"
	else
		printf '%s\n' BENCH_REPS=3 BENCH_SECS=5 BENCH_WARMUP=1 \
			"BENCH_LOADS=25 50 75" "BENCH_XS=50 200" "BENCH_DEPTHS=1 8 128"
	fi
}

# bench_tools OUT: build rr_server and rr_client into OUT/bench-tools; the
# guest runs them from there (it shares the host's root).
bench_tools()
{
	local out=$1/bench-tools t

	mkdir -p "$out"
	for t in rr_server rr_client; do
		gcc -O2 -Wall -Wextra -Werror -o "$out/$t" "$KDEV_BENCH/tools/$t.c" -lm ||
			die "cannot build bench/tools/$t.c"
	done
	printf '%s\n' "$out"
}

# cmd_bench [--quick]: build, run, report. The results go to
# bench/results/DATE_KERNEL[-quick]; a full run also updates README.md.
cmd_bench()
{
	local quick=0 kind=full out tools raw results params rc=0 start=$SECONDS
	local kver name readme=() suffix= accel

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
	tools=$(bench_tools "$out")
	raw=$out/bench-run
	rm -rf "$raw"
	mkdir -p "$raw"
	mapfile -t params < <(bench_params "$quick")
	accel=$(guest_accel "$out" | tr '[:lower:]' '[:upper:]')
	log "booting the guest (QEMU $accel) for the benchmark ($kind): ${params[*]}"
	KDEV_QEMU_OPTS_FILE=$KDEV_BENCH/qemu-opts KDEV_GUEST_TIMEOUT=3600 \
		guest_exec "$out" "$raw" "$raw/console.log" env "${params[@]}" \
		"$KDEV_BENCH/guest/run.sh" "$KDEV_BUILD_TREE" "$tools" \
		"$KDEV_GUEST_RESULTS" || rc=$?
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
