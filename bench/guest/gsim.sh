#!/bin/bash
# Runs inside the guest: the GSIM benchmark. fio 4k random reads on a
# two-queue virtio-blk disk backed by QEMU's null-co driver (no storage
# behind it, so the interrupt rate is as high as the guest can take), at
# each iodepth in BENCH_DEPTHS, under each moderation mode. A verified
# write run on a file-backed disk checks that no mode loses or corrupts I/O.
#
# usage: gsim.sh KERNEL_TREE OUT_DIR
#
# OUT_DIR/MODE/DEPTH/REP gets fio's JSON output, the disk's completed I/Os
# and /proc snapshots at both ends of a window inside the fio run.
set -euo pipefail

tree=$1
out=$2
# shellcheck source=bench/guest/lib.sh
. "$(dirname "$0")/lib.sh"
# gsim_disk, disk_irqs, disk_ios and MOD_DIR from the selftests
# shellcheck source=/dev/null
. "$tree/tools/testing/selftests/irq_moderation/lib.sh"

BENCH_DEPTHS=${BENCH_DEPTHS:-1 8 128}
ADAPTIVE_DELAY_US=200
# Fixed mode at adaptive mode's largest delay: the most moderation can do
# to the rate, so it tells whether the adaptive target is reachable
FIXED_DELAY_US=$ADAPTIVE_DELAY_US
ADAPTIVE_HARDIRQ_PERCENT=70
MODES=(off fixed adaptive delay0)

# The adaptive target: this share of the highest off-mode interrupt rate,
# measured first.
TARGET_PERCENT=50

# set_mode MODE IRQ...: moderation settings and per-IRQ switches.
set_mode()
{
	local mode=$1 irq sw=on
	shift

	case "$mode" in
	off)
		sw=off
		set_knobs 0 0 0
		;;
	fixed)
		set_knobs "$FIXED_DELAY_US" 0 0
		;;
	adaptive)
		set_knobs "$ADAPTIVE_DELAY_US" "$target" "$ADAPTIVE_HARDIRQ_PERCENT"
		;;
	delay0)
		# Enabled, but the delay stays 0: an adaptive target no load
		# reaches (after a restart at delay_us = 1 us).
		set_knobs 1 50000000 0
		;;
	esac
	for irq in "$@"; do
		echo "$sw" > "/proc/irq/$irq/soft_moderation"
	done
}

# set_knobs DELAY_US TARGET_INTR_RATE HARDIRQ_PERCENT
set_knobs()
{
	# delay_us last: the restart at delay_us comes with the final values.
	echo "$2" > "$MOD_DIR/target_intr_rate"
	echo "$3" > "$MOD_DIR/hardirq_percent"
	echo "$1" > "$MOD_DIR/delay_us"
}

# point DIR DEPTH: one fio run of BENCH_WARMUP + BENCH_SECS + 1 seconds;
# the window is the BENCH_SECS in the middle.
point()
{
	local dir=$1 depth=$2 fio_pid

	mkdir -p "$dir"
	fio --name=gsim --filename="/dev/$null_disk" --direct=1 \
		--ioengine=libaio --rw=randread --bs=4k --iodepth="$depth" \
		--numjobs=2 --cpus_allowed=0-1 --cpus_allowed_policy=split \
		--group_reporting --time_based \
		--ramp_time="$BENCH_WARMUP" --runtime=$((BENCH_SECS + 1)) \
		--output-format=json --output="$dir/fio.json" &
	fio_pid=$!
	sleep "$BENCH_WARMUP"
	sleep 0.5
	disk_ios "$null_disk" > "$dir/start-ios"
	snapshot "$dir" start
	cat "$MOD_DIR/stats" > "$dir/start-gsim-stats"
	sleep "$BENCH_SECS"
	disk_ios "$null_disk" > "$dir/end-ios"
	snapshot "$dir" end
	cat "$MOD_DIR/stats" > "$dir/end-gsim-stats"
	wait "$fio_pid"
}

# verify MODE: random writes with crc32c verification on the file disk.
verify()
{
	fio --name=verify --filename="/dev/$file_disk" --direct=1 \
		--ioengine=libaio --rw=randwrite --bs=4k --iodepth=32 --size=32M \
		--verify=crc32c --verify_fatal=1 --verify_state_save=0 \
		--output-format=json --output="$out/verify-$1.json"
}

null_disk=$(gsim_disk gsim-null) ||
	{ echo "no disk with serial gsim-null: is bench/qemu-opts in use?" >&2; exit 1; }
file_disk=$(gsim_disk gsim-file) ||
	{ echo "no disk with serial gsim-file" >&2; exit 1; }
mapfile -t null_irqs < <(disk_irqs "$null_disk")
mapfile -t file_irqs < <(disk_irqs "$file_disk")
irqs=("${null_irqs[@]}" "${file_irqs[@]}")
log "null-co disk $null_disk (IRQs ${null_irqs[*]}), file disk $file_disk (IRQs ${file_irqs[*]})"
mkdir -p "$out"
trap 'set_mode off "${irqs[@]}"' EXIT

# The adaptive target is set below the highest off-mode rate over the
# iodepths (which depth that is depends on how the device coalesces).
set_mode off "${irqs[@]}"
point "$out/warmup" 1
peak=0
for depth in $BENCH_DEPTHS; do
	point "$out/calibrate/$depth" "$depth"
	rate=$(($(irq_delta "$out/calibrate/$depth" "${null_irqs[@]}") / BENCH_SECS))
	log "off at iodepth $depth: $rate interrupts/s"
	[ "$rate" -le "$peak" ] || peak=$rate
done
target=$((peak * TARGET_PERCENT / 100))
log "target_intr_rate for adaptive: $target/s ($TARGET_PERCENT% of $peak)"

printf '{"disk_irqs": %s, "target_intr_rate": %d, "target_percent": %d, "fixed_delay_us": %d, "adaptive_delay_us": %d, "hardirq_percent": %d, "secs": %s, "reps": %d, "modes": "%s", "depths": "%s"}\n' \
	"$(json_list "${null_irqs[@]}")" "$target" "$TARGET_PERCENT" \
	"$FIXED_DELAY_US" "$ADAPTIVE_DELAY_US" "$ADAPTIVE_HARDIRQ_PERCENT" \
	"$BENCH_SECS" "$BENCH_REPS" "${MODES[*]}" "$BENCH_DEPTHS" > "$out/meta.json"

for mode in "${MODES[@]}"; do
	log "verified writes, $mode"
	set_mode "$mode" "${irqs[@]}"
	verify "$mode"
done

for rep in $(seq "$BENCH_REPS"); do
	for depth in $BENCH_DEPTHS; do
		log "rep $rep/$BENCH_REPS: iodepth $depth"
		for mode in "${MODES[@]}"; do
			set_mode "$mode" "${irqs[@]}"
			point "$out/$mode/$depth/$rep" "$depth"
		done
	done
done
log "done"
