# shellcheck shell=bash
# Booting a built kernel under QEMU (TCG) with virtme-ng. The guest sees the
# host root filesystem read-only; only the directories given with --rwdir
# are writable.

KDEV_GUEST_CPUS=${KDEV_GUEST_CPUS:-2}
KDEV_GUEST_MEM=${KDEV_GUEST_MEM:-2G}
KDEV_GUEST_TIMEOUT=${KDEV_GUEST_TIMEOUT:-2400}

# Extra QEMU options (devices for the load tests) come one per line from
# tests/qemu-opts, so that they live next to the tests that need them.
KDEV_QEMU_OPTS_FILE=$KDEV_ROOT/tests/qemu-opts

guest_qemu_opts()
{
	[ -f "$KDEV_QEMU_OPTS_FILE" ] || return 0
	grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$KDEV_QEMU_OPTS_FILE" |
		tr '\n' ' '
}

# guest_vng OUT ARGS...: virtme-ng on the kernel in build directory OUT.
guest_vng()
{
	local out=$1 qopts
	shift

	qopts=$(guest_qemu_opts)
	"$KDEV_VENV/bin/vng" --run "$out" \
		--disable-microvm --disable-kvm \
		--cpus "$KDEV_GUEST_CPUS" --memory "$KDEV_GUEST_MEM" \
		${qopts:+--qemu-opts="$qopts"} "$@"
}

# guest_exec OUT RWDIR LOG CMD...: run CMD in the guest, non-interactively,
# with RWDIR writable; the whole console (kernel log included) goes to LOG.
# Returns the exit status of the guest run (124 on timeout).
guest_exec()
{
	local out=$1 rwdir=$2 console=$3 rc=0
	shift 3

	# timeout(1) needs a program, not a shell function: re-enter kdev.
	timeout -k 30 "$KDEV_GUEST_TIMEOUT" \
		"$KDEV_ROOT/kdev" __vng "$out" --verbose --rwdir="$rwdir" \
		--exec "$(printf '%q ' "$@")" < /dev/null > "$console" 2>&1 || rc=$?
	return "$rc"
}
