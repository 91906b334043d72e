# shellcheck shell=bash
# Shared by the benchmark's guest scripts: settings from the host, logging
# and /proc snapshots. The numbers are worked out on the host (bench/report.py)
# from the snapshots, so the guest only records.

BENCH_REPS=${BENCH_REPS:-3}		# runs of every point
BENCH_TOP=${BENCH_TOP:-/tmp}		# where host_ask writes (run.sh sets it)
BENCH_SECS=${BENCH_SECS:-5}		# measured seconds per point
BENCH_WARMUP=${BENCH_WARMUP:-1}		# seconds before the measurement

log()
{
	printf '[%(%T)T] %s\n' -1 "$*" >&2
}

# snapshot DIR PREFIX: copy what the report needs from /proc to
# DIR/PREFIX-{stat,interrupts,softirqs}.
snapshot()
{
	local f

	for f in stat interrupts softirqs; do
		cat "/proc/$f" > "$1/$2-$f"
	done
}

# irq_delta DIR IRQ...: interrupts between DIR's start and end snapshots,
# summed over CPUs and IRQs.
irq_delta()
{
	local dir=$1
	shift

	awk -v irqs="$*" '
		BEGIN { n = split(irqs, l, " "); for (i = 1; i <= n; i++) want[l[i] ":"] = 1 }
		FNR == 1 { sign = FILENAME ~ /end-/ ? 1 : -1 }
		$1 in want { for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) sum += sign * $i }
		END { print sum + 0 }' "$dir/start-interrupts" "$dir/end-interrupts"
}

# json_list ITEM...: a JSON array of numbers.
json_list()
{
	local IFS=,

	printf '[%s]' "$*"
}

# virtio_irqs VIRTIO_DEV: the interrupts of a virtio device's queues (not
# its config interrupt), from /proc/interrupts.
virtio_irqs()
{
	awk -v dev="$1" '$NF ~ "^" dev "-" && $NF !~ /-config$/ {
		sub(":", "", $1); print $1 }' /proc/interrupts
}

# set_knobs DELAY_US TARGET_INTR_RATE HARDIRQ_PERCENT: GSIM's settings, in
# $MOD_DIR (the irq_moderation selftests' lib.sh, which the caller sources).
set_knobs()
{
	# delay_us last: the restart at delay_us comes with the final values.
	echo "$2" > "$MOD_DIR/target_intr_rate"
	echo "$3" > "$MOD_DIR/hardirq_percent"
	echo "$1" > "$MOD_DIR/delay_us"
}

# switch_irqs on|off IRQ...: the per-interrupt moderation switches.
switch_irqs()
{
	local sw=$1 irq
	shift

	for irq in "$@"; do
		echo "$sw" > "/proc/irq/$irq/soft_moderation"
	done
}

# pin_irqs CPU IRQ...: route interrupts to one CPU.
pin_irqs()
{
	local cpu=$1 irq
	shift

	for irq in "$@"; do
		echo "$cpu" > "/proc/irq/$irq/smp_affinity_list"
	done
}

# host_ask ACTION ARG: ask the host (bench_host_watch in
# tooling/lib/bench.sh) to do something to the guest's QEMU, and wait for
# its answer. "pin spread" lets QEMU's threads run on any host CPU; "pin
# split" puts the thread of vCPU 1 alone on one host CPU and every other
# thread (vCPU 0, the main loop that moves the packets, the workers) on the
# others; "sample PATH" writes the CPU time of QEMU's threads so far to
# PATH under BENCH_TOP. Fails if the host cannot (a one-CPU host) or does
# not answer within 10 s.
host_seq=0
host_ask()
{
	local id answer got

	host_seq=$((host_seq + 1))
	id=$$.$host_seq		# unique across the scripts of one run
	answer=$BENCH_TOP/host-done-$id
	echo "$id $1 $2" > "$BENCH_TOP/host-request.new"
	mv "$BENCH_TOP/host-request.new" "$BENCH_TOP/host-request"
	# The answer is a new file, never rewritten: a 9p read of a file the
	# host rewrites at the same time has hung the guest's reader.
	for _ in $(seq 200); do
		if [ -e "$answer" ]; then
			read -r got < "$answer"
			[ "$got" = ok ] && return 0
			break
		fi
		sleep 0.05
	done
	log "the host did not do \"$1 $2\""
	return 1
}
