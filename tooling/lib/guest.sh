# shellcheck shell=bash
# Booting a built kernel under QEMU (KVM if it works, else TCG) with
# virtme-ng. The guest sees the host root filesystem read-only; only the
# directories given with --rwdir are writable. virtme-ng mounts tmpfs over
# some host paths (/var/cache, /var/log, ...), so the cache is mounted into
# the guest explicitly, and a run's results directory is writable at
# $KDEV_GUEST_RESULTS.

KDEV_GUEST_RESULTS=/run/kdev-results

KDEV_GUEST_CPUS=${KDEV_GUEST_CPUS:-2}
KDEV_GUEST_MEM=${KDEV_GUEST_MEM:-2G}
# The whole test run's guest took 2842 s on one day, about 3900 s on
# another, and in one run of 2026-11-29 reached 4500 s in its last test,
# the stress run (QEMU TCG slower that day, and busy_poll_test.sh waiting
# 6.5 minutes for a TCP backlog): room for that, with the package test
# still inside CI's 90 minutes.
KDEV_GUEST_TIMEOUT=${KDEV_GUEST_TIMEOUT:-4800}

# Extra QEMU options (devices for the load tests) come one per line from
# tests/qemu-opts (bench/qemu-opts for the benchmark), so that they live next to the tests that need them.
# @SCRATCH@ there stands for a directory in the cache; a disk image named
# @SCRATCH@/NAME.img is created (sparse, $KDEV_SCRATCH_IMG_SIZE) if missing.
# QEMU locks the images: a second guest at the same time (say, a KCSAN
# run beside a long stress run) needs a KDEV_SCRATCH of its own.
KDEV_QEMU_OPTS_FILE=${KDEV_QEMU_OPTS_FILE:-$KDEV_ROOT/tests/qemu-opts}
KDEV_SCRATCH=${KDEV_SCRATCH:-$KDEV_CACHE/scratch}
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

# Guest NICs with several queues need a tap backend (QEMU's hub and user
# networking have one queue). A "-netdev tap,...,ifname=NAME,queues=N"
# option names a tap that guest_vng creates, multiqueue, in a network
# namespace of its own where all such taps share one bridge: the guest's
# NICs reach each other and nothing else, and the host's network is left
# alone.
KDEV_TAP_BRIDGE=kdevbr0

# guest_taps QEMU_OPTS: the tap interface names the options ask for
guest_taps()
{
	grep -o -- '-netdev tap,[^ ]*' <<< "$1" |
		sed -n 's/.*[,]ifname=\([^,]*\).*/\1/p' | sort -u
}

# guest_tap_network TAP...: the bridge and the taps, in the current
# network namespace
guest_tap_network()
{
	local tap

	ip link add "$KDEV_TAP_BRIDGE" type bridge || return 1
	for tap in "$@"; do
		ip tuntap add dev "$tap" mode tap multi_queue || return 1
		ip link set dev "$tap" master "$KDEV_TAP_BRIDGE" up || return 1
	done
	ip link set dev "$KDEV_TAP_BRIDGE" up
}

# guest_test_macs: the MAC addresses tests/qemu-opts gives the guest's
# NICs; the NICs the tests may take over (run-tests.sh names them in
# VIRTIO_NET_NICS)
guest_test_macs()
{
	guest_qemu_opts | grep -o 'mac=[0-9a-f:]*' | cut -d= -f2 | tr '\n' ' '
}

# The guest runs under KVM where that works, else under TCG. /dev/kvm can
# be there and still not boot a guest (nested virtualization without
# support for it), and QEMU falls back to TCG silently, so the first guest
# run with a usable /dev/kvm boots the kernel once and asks it whether it
# runs on KVM ("Hypervisor detected: KVM", CONFIG_KVM_GUEST). The answer,
# either way, is kept per QEMU version and host kernel in
# $KDEV_CACHE/state/accel-* (delete those to probe again; the probe's
# output is next to them). KDEV_ACCEL=kvm|tcg decides instead.
KDEV_ACCEL_PROBE_TIMEOUT=120

# guest_accel OUT: "kvm" or "tcg", for the kernel in build directory OUT
guest_accel()
{
	local out=$1 state

	if [ -n "${KDEV_ACCEL:-}" ]; then
		echo "$KDEV_ACCEL"
		return
	fi
	if [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then
		echo tcg
		return
	fi
	state=$KDEV_CACHE/state/accel-$(qemu-system-x86_64 --version |
		sed -n '1s/.*version \([0-9.]*\).*/\1/p')-$(uname -r)
	if [ ! -f "$state" ]; then
		log "probing KVM: one boot with it, at most $KDEV_ACCEL_PROBE_TIMEOUT s"
		mkdir -p "$KDEV_CACHE/state"
		PATH="$KDEV_VENV/bin:$PATH" timeout -k 10 "$KDEV_ACCEL_PROBE_TIMEOUT" \
			"$KDEV_VENV/bin/vng" --run "$out" --disable-microvm --cpus 1 \
			--memory 512M --exec 'dmesg | grep -q "Hypervisor detected: KVM" && echo kdev-accel-kvm' \
			< /dev/null > "$state.log" 2>&1 || true
		if grep -q '^kdev-accel-kvm' "$state.log"; then
			echo kvm > "$state"
		else
			echo tcg > "$state"
		fi
		log "KVM probe: the guest runs under $(tr '[:lower:]' '[:upper:]' < "$state") (see $state.log)"
	fi
	cat "$state"
}

# The GSIM flood (../shared/GSIM-FLOOD.md): an ivshmem-doorbell device on
# a socket chardev with the id gsim-flood. Its server is a host process,
# ivshmem_flood from the kselftests of the kernel that boots (or
# KDEV_FLOOD_PROG: the benchmark's kernel has no kselftests, and
# bench_tools builds its own), which hands QEMU the shared memory and an
# eventfd per MSI-X vector and rings the vectors at the rate the guest asks
# for. QEMU reads the server's set-up when it creates the device, so the
# server listens before QEMU starts; it ends when QEMU closes the socket.
# Without the program (kselftests not built), the device is left out of
# the guest.
KDEV_FLOOD_CHARDEV=gsim-flood
KDEV_FLOOD_START_TIMEOUT=10

# guest_flood_prog OUT: the flood's server for the kernel in build
# directory OUT
guest_flood_prog()
{
	printf '%s\n' "${KDEV_FLOOD_PROG:-$1/kselftest_install/irq_moderation/ivshmem_flood}"
}

# guest_flood_socket QEMU_OPTS: the socket path of the flood's chardev
guest_flood_socket()
{
	{ grep -o -- "-chardev socket,id=$KDEV_FLOOD_CHARDEV,path=[^ ,]*" <<< "$1" || true; } |
		sed 's/.*,path=//'
}

# guest_flood_vectors QEMU_OPTS: the MSI-X vectors of the flood's device
guest_flood_vectors()
{
	grep -o -- "-device ivshmem-doorbell,[^ ]*" <<< "$1" |
		grep -e "chardev=$KDEV_FLOOD_CHARDEV\(,\|\$\)" |
		grep -o 'vectors=[0-9]*' | cut -d= -f2
}

# guest_flood_drop QEMU_OPTS: the options without the flood's two
guest_flood_drop()
{
	sed -e "s/-chardev socket,id=$KDEV_FLOOD_CHARDEV,[^ ]* *//" \
	    -e "s/-device ivshmem-doorbell,[^ ]*chardev=${KDEV_FLOOD_CHARDEV}[^ ]* *//" <<< "$1"
}

# guest_flood_start OUT SOCKET VECTORS: start the flooder for OUT's kernel
# (guest_flood_prog) on SOCKET, in the background, its output in
# SOCKET.log, and wait until it listens; sets GUEST_FLOOD_PID
guest_flood_start()
{
	local prog sock=$2 i

	prog=$(guest_flood_prog "$1")
	mkdir -p "$(dirname "$sock")"
	rm -f "$sock"
	"$prog" "$sock" "$3" > "$sock.log" 2>&1 &
	GUEST_FLOOD_PID=$!
	for ((i = 0; i < KDEV_FLOOD_START_TIMEOUT * 10; i++)); do
		grep -q '^listening' "$sock.log" 2>/dev/null && return 0
		kill -0 "$GUEST_FLOOD_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill "$GUEST_FLOOD_PID" 2>/dev/null
	return 1
}

# guest_vng OUT ARGS...: virtme-ng on the kernel in build directory OUT.
guest_vng()
{
	local out=$1 qopts taps accel=() sock rc=0
	shift

	qopts=$(guest_qemu_opts)
	mapfile -t taps < <(guest_taps "$qopts")
	if [ "${#taps[@]}" -gt 0 ] && [ -z "${KDEV_IN_TAP_NETNS:-}" ]; then
		# Root may make a network namespace; anyone else needs a user
		# namespace to be root in it.
		local own=(--net)
		[ "$(id -u)" = 0 ] || own=(--user --map-root-user --net)
		exec unshare "${own[@]}" -- env KDEV_IN_TAP_NETNS=1 \
			"$KDEV_ROOT/kdev" __vng "$out" "$@"
	fi
	if [ "${#taps[@]}" -gt 0 ]; then
		guest_tap_network "${taps[@]}" ||
			die "cannot create the guest's taps ${taps[*]}"
	fi
	sock=$(guest_flood_socket "$qopts")
	if [ -n "$sock" ] && [ ! -x "$(guest_flood_prog "$out")" ]; then
		warn "no $(guest_flood_prog "$out"): the guest has no GSIM flood device"
		qopts=$(guest_flood_drop "$qopts")
	elif [ -n "$sock" ]; then
		guest_flood_start "$out" "$sock" "$(guest_flood_vectors "$qopts")" ||
			die "the GSIM flood's server did not start (see $sock.log)"
	fi
	[ "$(guest_accel "$out")" = kvm ] || accel=(--disable-kvm)
	# vng runs virtme-run and friends from PATH
	PATH="$KDEV_VENV/bin:$PATH" "$KDEV_VENV/bin/vng" --run "$out" \
		--disable-microvm "${accel[@]}" \
		--cpus "$KDEV_GUEST_CPUS" --memory "$KDEV_GUEST_MEM" \
		--rodir="$KDEV_CACHE" \
		${qopts:+--qemu-opts="$qopts"} "$@" || rc=$?
	# QEMU closed the socket; the server ends by itself, or now
	if [ -n "$sock" ] && [ -n "${GUEST_FLOOD_PID:-}" ]; then
		kill "$GUEST_FLOOD_PID" 2>/dev/null
		wait "$GUEST_FLOOD_PID" || true
	fi
	return "$rc"
}

# guest_exec OUT RESULTS LOG CMD...: run CMD in the guest, non-interactively,
# with host directory RESULTS writable as $KDEV_GUEST_RESULTS; the whole
# console (kernel log included) goes to LOG. Returns the exit status of the
# guest run (124 on timeout). The kernel log buffer holds a whole run: with
# the default 128 KiB, a KCSAN kernel's reports pushed the KUnit results of
# the boot out of the dmesg the run saves. CMD goes to the guest in a file
# of RESULTS: virtme-ng passes --exec on the kernel command line, whose
# 2048 bytes a long list of tests and paths overflowed (the init= after it
# was cut, and the guest panicked). tsc=reliable: under TCG the clocksource
# watchdog takes a descheduled vCPU for a slow TSC read ("excessive
# read-back delay of 531530ns", 850 s into a run) and marks the TSC
# unstable; the guest then reads the HPET for every clock read, an exit
# each, and turns off IRQ time accounting, which hardirq_percent and its
# tests need. QEMU derives the
# guest's TSC from the host's clock: it is monotonic and the same on every
# vCPU.
guest_exec()
{
	local out=$1 results=$2 console=$3 rc=0
	shift 3

	printf '%q ' "$@" > "$results/guest-command.sh"
	# timeout(1) needs a program, not a shell function: re-enter kdev.
	timeout -k 30 "$KDEV_GUEST_TIMEOUT" \
		"$KDEV_ROOT/kdev" __vng "$out" --verbose \
		--append log_buf_len=16M --append tsc=reliable \
		--rwdir="$KDEV_GUEST_RESULTS=$results" \
		--exec "bash $KDEV_GUEST_RESULTS/guest-command.sh" \
		< /dev/null > "$console" 2>&1 || rc=$?
	return "$rc"
}
