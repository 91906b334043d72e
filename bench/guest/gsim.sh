#!/bin/bash
# Runs inside the guest: the GSIM benchmark. fio 4k random reads on a
# two-queue virtio-blk disk backed by QEMU's null-co driver (no storage
# behind it, so the interrupt rate is as high as the guest can take), at
# each iodepth in BENCH_DEPTHS, under each moderation mode. A verified
# write run on a file-backed disk checks that no mode loses or corrupts I/O.
# Then hardirq_percent's protection of a CPU-bound program (cpu_spin) that
# shares CPU 0 with one fio job and its queue's interrupts.
#
# usage: gsim.sh KERNEL_TREE TOOLS_DIR OUT_DIR
#
# OUT_DIR/MODE/DEPTH/REP gets fio's JSON output, the disk's completed I/Os
# and /proc snapshots at both ends of a window inside the fio run;
# OUT_DIR/protect/CASE/REP the same and cpu_spin's output.
set -euo pipefail

tree=$1
tools=$2
out=$3
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
# SPEC's largest delay_us: the most any mode can hold back
MAX_DELAY_US=500
MODES=(off fixed adaptive above reach delay0)

# The adaptive target: this share of the highest off-mode interrupt rate,
# measured first.
TARGET_PERCENT=50
# "above": adaptive with a target this many times the highest off-mode
# rate, which no load here reaches: it must hold nothing back.
ABOVE_FACTOR=2
# The protection case: fio's iodepth, and hardirq_percent as this share of
# CPU 0's hardirq time measured with moderation off.
PROTECT_DEPTH=128
PROTECT_PERCENT=50

# set_mode MODE IRQ...: moderation settings and per-IRQ switches.
set_mode()
{
	local mode=$1 sw=on
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
	above)
		set_knobs "$ADAPTIVE_DELAY_US" "$above_target" 0
		;;
	reach)
		# Adaptive towards a target the flood can be held to
		set_knobs "$MAX_DELAY_US" "$reach_target" 0
		;;
	fixedmax)
		set_knobs "$MAX_DELAY_US" 0 0
		;;
	hardirq)
		set_knobs "$MAX_DELAY_US" 0 "$protect_percent"
		;;
	delay0)
		# Enabled, but the delay stays 0: an adaptive target no load
		# reaches (after a restart at delay_us = 1 us).
		set_knobs 1 50000000 0
		;;
	esac
	switch_irqs "$sw" "$@"
}

# point DIR DEPTH [CPUS [WINDOW_CMD...]]: one fio run of BENCH_WARMUP +
# BENCH_SECS + 1 seconds, one job on each CPU of CPUS (default both); the
# window is the BENCH_SECS in the middle. WINDOW_CMD runs for the window
# (it must take BENCH_SECS), its output in DIR/window.json.
point()
{
	local dir=$1 depth=$2 cpus=${3:-0-1} fio_pid
	shift $(($# < 3 ? $# : 3))

	mkdir -p "$dir"
	fio --name=gsim --filename="/dev/$null_disk" --direct=1 \
		--ioengine=libaio --rw=randread --bs=4k --iodepth="$depth" \
		--numjobs="$(cpu_count "$cpus")" --cpus_allowed="$cpus" \
		--cpus_allowed_policy=split --group_reporting --time_based \
		--ramp_time="$BENCH_WARMUP" --runtime=$((BENCH_SECS + 1)) \
		--output-format=json --output="$dir/fio.json" &
	fio_pid=$!
	sleep "$BENCH_WARMUP"
	sleep 0.5
	window_start "$dir"
	if [ $# -gt 0 ]; then
		"$@" > "$dir/window.json"
	else
		sleep "$BENCH_SECS"
	fi
	window_end "$dir"
	wait "$fio_pid"
}

# cpu_count LIST: the number of CPUs in a list such as 0-1 or 0.
cpu_count()
{
	if [[ "$1" = *-* ]]; then
		echo $((${1#*-} - ${1%-*} + 1))
	else
		echo 1
	fi
}

# window_start DIR, window_end DIR: the snapshots at both ends of a window.
window_start()
{
	disk_ios "$null_disk" > "$1/start-ios"
	snapshot "$1" start
	cat "$MOD_DIR/stats" > "$1/start-gsim-stats"
}

window_end()
{
	disk_ios "$null_disk" > "$1/end-ios"
	snapshot "$1" end
	cat "$MOD_DIR/stats" > "$1/end-gsim-stats"
}

# counted DIR: the disk's interrupts the CPUs took in DIR's window, as the
# adaptive controller counts them: its vectors' handler runs, arrivals
# while held back and GSIM's timers.
counted()
{
	local gsim

	gsim=$(awk '$1 == "total_held" || $1 == "total_timers" {
		v[$1] += FILENAME ~ /end-/ ? $2 : -$2 }
		END { print v["total_held"] + v["total_timers"] }' \
		"$1/start-gsim-stats" "$1/end-gsim-stats")
	echo $(($(irq_delta "$1" "${null_irqs[@]}") + gsim))
}

# hardirq_share DIR CPU: CPU's hardirq time in DIR's window, in percent.
hardirq_share()
{
	awk -v cpu="cpu$2" '$1 == cpu {
		t = 0; for (i = 2; i <= 9; i++) t += $i
		if (FILENAME ~ /end-/) { t1 = t; i1 = $7 } else { t0 = t; i0 = $7 } }
		END { printf "%d\n", (t1 > t0 ? 100 * (i1 - i0) / (t1 - t0) + 0.5 : 0) }' \
		"$1/start-stat" "$1/end-stat"
}

# spin_alone DIR: cpu_spin on CPU 0 with no I/O, for the window's length.
spin_alone()
{
	mkdir -p "$1"
	window_start "$1"
	taskset -c 0 "$tools/cpu_spin" "$BENCH_SECS" > "$1/window.json"
	window_end "$1"
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
# iodepths (which depth that is depends on how the device coalesces). That
# depth is the flood: the reach target lies halfway between its rate off
# and its counted rate at the largest fixed delay.
set_mode off "${irqs[@]}"
point "$out/warmup" 1
peak=0
flood=${BENCH_DEPTHS%% *}
for depth in $BENCH_DEPTHS; do
	point "$out/calibrate/$depth" "$depth"
	rate=$(($(irq_delta "$out/calibrate/$depth" "${null_irqs[@]}") / BENCH_SECS))
	log "off at iodepth $depth: $rate interrupts/s"
	[ "$rate" -le "$peak" ] || { peak=$rate; flood=$depth; }
done
target=$((peak * TARGET_PERCENT / 100))
above_target=$((peak * ABOVE_FACTOR))
set_mode fixedmax "${irqs[@]}"
point "$out/calibrate/fixedmax-$flood" "$flood"
floor=$(($(counted "$out/calibrate/fixedmax-$flood") / BENCH_SECS))
# Halfway; when the largest delay does not get below off (its timers cost
# more than it saves), no target is reachable and the report says so
reach_target=$(((peak + floor) / 2))
log "target_intr_rate: adaptive $target/s ($TARGET_PERCENT% of $peak), above $above_target/s, reach $reach_target/s (iodepth $flood: off $peak/s, delay_us $MAX_DELAY_US $floor/s counted)"

# The protection case's hardirq_percent: a share of CPU 0's hardirq time
# with one fio job there and moderation off.
set_mode off "${irqs[@]}"
point "$out/calibrate/protect" "$PROTECT_DEPTH" 0
share=$(hardirq_share "$out/calibrate/protect" 0)
protect_percent=$((share * PROTECT_PERCENT / 100))
[ "$protect_percent" -ge 1 ] || protect_percent=1
log "CPU 0 hardirq time with one job at iodepth $PROTECT_DEPTH: $share%; hardirq_percent $protect_percent"

printf '{"disk_irqs": %s, "target_intr_rate": %d, "target_percent": %d, "above_target": %d, "reach_target": %d, "flood_depth": %d, "flood_off_rate": %d, "flood_floor_rate": %d, "max_delay_us": %d, "fixed_delay_us": %d, "adaptive_delay_us": %d, "hardirq_percent": %d, "protect_depth": %d, "protect_share": %d, "protect_percent": %d, "secs": %s, "reps": %d, "modes": "%s", "depths": "%s"}\n' \
	"$(json_list "${null_irqs[@]}")" "$target" "$TARGET_PERCENT" \
	"$above_target" "$reach_target" "$flood" "$peak" "$floor" \
	"$MAX_DELAY_US" "$FIXED_DELAY_US" "$ADAPTIVE_DELAY_US" \
	"$ADAPTIVE_HARDIRQ_PERCENT" "$PROTECT_DEPTH" "$share" \
	"$protect_percent" "$BENCH_SECS" "$BENCH_REPS" "${MODES[*]}" \
	"$BENCH_DEPTHS" > "$out/meta.json"

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
	# cpu_spin on CPU 0: alone, then with one fio job and its interrupts
	# there, moderation off and hardirq_percent only
	log "rep $rep/$BENCH_REPS: cpu_spin alone, with I/O off and hardirq"
	set_mode off "${irqs[@]}"
	spin_alone "$out/protect/alone/$rep"
	for mode in off hardirq; do
		set_mode "$mode" "${irqs[@]}"
		point "$out/protect/$mode/$rep" "$PROTECT_DEPTH" 0 \
			taskset -c 0 "$tools/cpu_spin" "$BENCH_SECS"
	done
done
log "done"
