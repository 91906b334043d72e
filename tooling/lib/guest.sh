# shellcheck shell=bash
# Booting a built kernel under QEMU (TCG) with virtme-ng. The guest sees the
# host root filesystem read-only; only the directories given with --rwdir
# are writable. virtme-ng mounts tmpfs over some host paths (/var/cache,
# /var/log, ...), so the cache is mounted into the guest explicitly, and a
# run's results directory is writable at $KDEV_GUEST_RESULTS.

KDEV_GUEST_RESULTS=/run/kdev-results

KDEV_GUEST_CPUS=${KDEV_GUEST_CPUS:-2}
KDEV_GUEST_MEM=${KDEV_GUEST_MEM:-2G}
KDEV_GUEST_TIMEOUT=${KDEV_GUEST_TIMEOUT:-2400}

# Extra QEMU options (devices for the load tests) come one per line from
# tests/qemu-opts (bench/qemu-opts for the benchmark), so that they live next to the tests that need them.
# @SCRATCH@ there stands for a directory in the cache; a disk image named
# @SCRATCH@/NAME.img is created (sparse, $KDEV_SCRATCH_IMG_SIZE) if missing.
KDEV_QEMU_OPTS_FILE=${KDEV_QEMU_OPTS_FILE:-$KDEV_ROOT/tests/qemu-opts}
KDEV_SCRATCH=$KDEV_CACHE/scratch
KDEV_SCRATCH_IMG_SIZE=64M

guest_qemu_opts()
{
	local opts img

	[ -f "$KDEV_QEMU_OPTS_FILE" ] || return 0
	opts=$(grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$KDEV_QEMU_OPTS_FILE" |
		tr '\n' ' ')
	while read -r img; do
		img=$KDEV_SCRATCH/${img#@SCRATCH@/}
		[ -f "$img" ] && continue
		mkdir -p "$KDEV_SCRATCH"
		truncate -s "$KDEV_SCRATCH_IMG_SIZE" "$img"
	done < <(grep -o '@SCRATCH@/[A-Za-z0-9_.-]*\.img' <<< "$opts" | sort -u)
	printf '%s\n' "${opts//@SCRATCH@/$KDEV_SCRATCH}"
}

# guest_vng OUT ARGS...: virtme-ng on the kernel in build directory OUT.
guest_vng()
{
	local out=$1 qopts
	shift

	qopts=$(guest_qemu_opts)
	# vng runs virtme-run and friends from PATH
	PATH="$KDEV_VENV/bin:$PATH" "$KDEV_VENV/bin/vng" --run "$out" \
		--disable-microvm --disable-kvm \
		--cpus "$KDEV_GUEST_CPUS" --memory "$KDEV_GUEST_MEM" \
		--rodir="$KDEV_CACHE" \
		${qopts:+--qemu-opts="$qopts"} "$@"
}

# guest_exec OUT RESULTS LOG CMD...: run CMD in the guest, non-interactively,
# with host directory RESULTS writable as $KDEV_GUEST_RESULTS; the whole
# console (kernel log included) goes to LOG. Returns the exit status of the
# guest run (124 on timeout).
guest_exec()
{
	local out=$1 results=$2 console=$3 rc=0
	shift 3

	# timeout(1) needs a program, not a shell function: re-enter kdev.
	timeout -k 30 "$KDEV_GUEST_TIMEOUT" \
		"$KDEV_ROOT/kdev" __vng "$out" --verbose \
		--rwdir="$KDEV_GUEST_RESULTS=$results" \
		--exec "$(printf '%q ' "$@")" < /dev/null > "$console" 2>&1 || rc=$?
	return "$rc"
}
