#!/bin/bash
# Runs inside the guest: the GSIM flood benchmark. QEMU's ivshmem-doorbell
# device (bench/qemu-opts), whose MSI-X vectors the host's ivshmem_flood
# rings at the rate the guest asks for, taken through vfio-pci in no-IOMMU
# mode by flood_guest (both from the irq_moderation selftests, built by
# bench_tools). All vectors target FLOOD_CPU; this script and flood_guest
# run on the other CPU.
#
# First the calibration: the rate one vCPU takes with moderation off at a
# few offered rates (under TCG a few thousand per second), the peak among
# them, and fixed mode at the largest delay at that peak; the adaptive
# target lies halfway between the two. Then, interleaved, for each offered
# rate of a ladder from FLOOD_LOW up to the peak and each mode (off, fixed
# at two delays, adaptive towards the target), BENCH_REPS runs of: the
# flood's counters over BENCH_SECS while a CPU-bound program (flood_guest
# spin) runs on FLOOD_CPU, then pings that time doorbell to event on a
# vector of their own. Last, a load drop: the flood at the peak, then at
# half the target, measured in the second after the drop and in the
# seconds after that, with moderation off and adaptive side by side.
#
# usage: flood.sh KERNEL_TREE TOOLS_DIR OUT_DIR
#
# OUT_DIR/meta.json: the settings and the calibration;
# OUT_DIR/MODE/RATE/REP/{window,ping}.json: one point;
# OUT_DIR/alone/REP/window.json: the CPU-bound program without the flood;
# OUT_DIR/drop/MODE/REP/{first,later}.json: the load drop;
# OUT_DIR/calibrate/*/window.json: the calibration's windows.
# A window.json holds the counters at both ends of its window (see
# COUNTER_KEYS) and the program's output: bench/report.py works out the
# rates from them.
set -euo pipefail

tree=$1
tools=$2
out=$3
# shellcheck source=bench/guest/lib.sh
. "$(dirname "$0")/lib.sh"
# MOD_DIR from the selftests
# shellcheck source=/dev/null
. "$tree/tools/testing/selftests/irq_moderation/lib.sh"

# The device, and where its interrupts and the load go
FLOOD_VENDOR=0x1af4
FLOOD_DEVICE=0x1110
FLOOD_VECTORS=4
FLOOD_CPU=1
OTHER_CPU=0
# The host rings vector 0 only: one source, so that a window costs what
# the kernel's break-even assumes (the held arrival and the timer)
FLOOD_MASK=1
# Offered rates of the calibration (as the selftest's), the lowest rung of
# the ladder, and its number of rungs (geometric up to the peak offered);
# BENCH_FLOOD_RATES, if set, is the ladder instead
CALIBRATE_RATES=(2000 5000 10000 20000)
FLOOD_LOW=1000
BENCH_FLOOD_RUNGS=${BENCH_FLOOD_RUNGS:-5}
BENCH_FLOOD_RATES=${BENCH_FLOOD_RATES:-}
# The modes; adaptive mode's largest delay is the longest fixed one
MODES=(off fixed100 fixed500 adaptive)
MAX_DELAY_US=500
# Pings on a vector of their own, sparse as in the selftest's light-load
# case: each one's arrival opens a window of its own, so they time what
# the flood and its moderation cost another source on the CPU
PING_VECTOR=3
PING_COUNT=300
PING_GAP_US=2000
# flood_guest's event thread looks for events every POLL_US while the
# counters run: an event thread that sleeps is woken by an IPI from every
# handler run that finds it asleep, which under emulation is most of the
# handler's time, and more of them the fewer runs there are (see
# flood_guest.c). Pings need it to wait instead.
POLL_US=1000
# The load drop: how long the flood runs at the peak before it, and the
# window after the first second
DROP_HIGH_SECS=2
DROP_LATER_SECS=2

# What counters reads, in its order: the flood's handler runs (all its
# vectors, /proc/interrupts), GSIM's totals, FLOOD_CPU's hard interrupt
# and total time (/proc/stat, ticks) and delay (stats, ns), the host's
# doorbells and clock (ns), the guest's clock (us).
COUNTER_KEYS=(runs handled held windows window_ns timers replayed empty
	deferred irq_ticks cpu_ticks delay_ns rung host_ns guest_us)
declare -A CTR
for i in "${!COUNTER_KEYS[@]}"; do
	CTR[${COUNTER_KEYS[$i]}]=$i
done

# flood_find: the PCI address of the flood device
flood_find()
{
	local d

	for d in /sys/bus/pci/devices/*; do
		if [ "$(cat "$d/vendor"):$(cat "$d/device")" = "$FLOOD_VENDOR:$FLOOD_DEVICE" ]; then
			basename "$d"
			return 0
		fi
	done
	return 1
}

# flood_bind BDF: hand the device to vfio-pci in no-IOMMU mode, which is
# what flood_guest opens (no driver binds it at boot)
flood_bind()
{
	local dev=/sys/bus/pci/devices/$1

	echo 1 > /sys/module/vfio/parameters/enable_unsafe_noiommu_mode
	echo vfio-pci > "$dev/driver_override"
	[ -e "$dev/driver" ] || echo "$1" > /sys/bus/pci/drivers_probe
	[ "$(basename "$(readlink -f "$dev/driver")")" = vfio-pci ]
}

# flood_start BDF: flood_guest on OTHER_CPU as a coprocess; sets
# flood_irqs from its "ready IRQ..." and points them at FLOOD_CPU
flood_start()
{
	local ready

	coproc FLOOD { exec taskset -c "$OTHER_CPU" "$tools/flood_guest" "$1" "$FLOOD_VECTORS"; }
	read -r -t 30 ready <&"${FLOOD[0]}" || { log "flood_guest did not start"; return 1; }
	read -r -a flood_irqs <<< "${ready#ready}"
	if [ "${ready%% *}" != ready ] || [ "${#flood_irqs[@]}" -ne "$FLOOD_VECTORS" ]; then
		log "flood_guest: '$ready'"
		return 1
	fi
	pin_irqs "$FLOOD_CPU" "${flood_irqs[@]}"
}

# ask COMMAND...: one command to flood_guest (its protocol is in the
# header of flood_guest.c); its answer in REPLY
ask()
{
	echo "$*" >&"${FLOOD[1]}"
	if ! read -r -t 120 REPLY <&"${FLOOD[0]}"; then
		log "flood_guest: no answer to '$*'"
		return 1
	fi
	case $REPLY in
	error*)	log "flood_guest: '$*': $REPLY"; return 1 ;;
	esac
}

# flood RATE: the host rings FLOOD_MASK's vectors at RATE per second (0
# stops) until the next flood command
flood()
{
	ask flood "$1" "$FLOOD_MASK" 0
}

# cleanup: on exit, the host stops, moderation is off, flood_guest quits;
# the switches first, as the vectors' IRQs go away with flood_guest
cleanup()
{
	[ -z "${FLOOD_PID:-}" ] || flood 0 || true
	set_knobs 0 0 0
	[ "${#flood_irqs[@]}" = 0 ] || switch_irqs off "${flood_irqs[@]}" || true
	if [ -n "${FLOOD_PID:-}" ]; then
		# FLOOD is unset once flood_guest exited: under set -u its
		# expansion would fail the trap, and the run with it
		[ -z "${FLOOD[1]:-}" ] ||
			{ echo quit >&"${FLOOD[1]}"; } 2> /dev/null || true
		wait "$FLOOD_PID" 2> /dev/null || true
	fi
}

# set_mode MODE: GSIM's settings and the flood vectors' switches for a
# mode: off; fixedD, fixed mode at delay_us D; adaptive, towards the
# target with delays up to MAX_DELAY_US and no hardirq_percent
set_mode()
{
	case "$1" in
	off)
		set_knobs 0 0 0
		switch_irqs off "${flood_irqs[@]}"
		return
		;;
	fixed*)
		set_knobs "${1#fixed}" 0 0
		;;
	adaptive)
		set_knobs "$MAX_DELAY_US" "$target" 0
		;;
	esac
	switch_irqs on "${flood_irqs[@]}"
}

# counters: the values of COUNTER_KEYS now, on one line. The files are
# read by one awk, and the guest's clock taken last: each process started
# takes a good part of a second under emulation, and two readings must
# span the same time for all counters.
counters()
{
	local c

	c=$(awk -v irqs=" ${flood_irqs[*]} " -v cpu="$FLOOD_CPU" -v stats="$MOD_DIR/stats" '
		FILENAME == "/proc/interrupts" {
			n = $1; sub(":", "", n)
			if (index(irqs, " " n " "))
				for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) runs += $i
			next
		}
		FILENAME == "/proc/stat" {
			if ($1 == "cpu" cpu) {
				for (i = 2; i <= 9; i++) ticks += $i
				irq = $7
			}
			next
		}
		FNR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
		$1 == cpu && ("delay_ns" in col) { delay = $col["delay_ns"] }
		{ v[$1] = $2 }
		END {
			# %.0f: print would write a total in ns as 9.4e+10
			printf "%.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f\n",
			       runs, v["total_handled"], v["total_held"],
			       v["total_windows"], v["total_window_ns"],
			       v["total_timers"], v["total_replayed"],
			       v["total_empty"], v["total_deferred"], irq, ticks, delay
		}' /proc/interrupts /proc/stat "$MOD_DIR/stats") || return
	ask rung || return
	# "rung N NS"
	echo "$c ${REPLY#rung } ${EPOCHREALTIME/./}"
}

# counters_json VALUE...: the values of COUNTER_KEYS as a JSON object
counters_json()
{
	local v=("$@") i sep=''

	printf '{'
	for i in "${!COUNTER_KEYS[@]}"; do
		printf '%s"%s": %s' "$sep" "${COUNTER_KEYS[$i]}" "${v[$i]}"
		sep=', '
	done
	printf '}'
}

# measure FILE SECONDS [spin]: the counters at both ends of SECONDS, with
# "spin" flood_guest's CPU-bound program on FLOOD_CPU over them, into FILE
# as JSON. Sets RUNS (handler runs per second) and COUNTED, the interrupts
# per second the CPUs took for the flood: its handler runs, less those
# that GSIM's timer ran (not an interrupt of their own), plus the arrivals
# while held back and the timer expiries (what the adaptive controller
# counts, and the selftest's measure).
measure()
{
	local file=$1 secs=$2 prog=null a=() b=() el loops permille

	mkdir -p "$(dirname "$file")"
	read -r -a a < <(counters) || true
	if [ "${3:-}" = spin ]; then
		# "spin LOOPS_PER_SECOND PERMILLE"
		read -r _ loops permille < <(taskset -c "$FLOOD_CPU" \
			"$tools/flood_guest" spin "$secs") || true
		prog="{\"loops_s\": ${loops:-null}, \"permille\": ${permille:-null}}"
	else
		sleep "$secs"
	fi
	read -r -a b < <(counters) || true
	if [ "${#a[@]}" -ne "${#COUNTER_KEYS[@]}" ] || [ "${#b[@]}" -ne "${#COUNTER_KEYS[@]}" ]; then
		log "cannot read the counters: '${a[*]}' '${b[*]}'"
		return 1
	fi
	printf '{"secs": %s, "spin": %s, "start": %s, "end": %s}\n' "$secs" "$prog" \
		"$(counters_json "${a[@]}")" "$(counters_json "${b[@]}")" > "$file"
	el=$((b[CTR[guest_us]] - a[CTR[guest_us]]))
	RUNS=$(((b[CTR[runs]] - a[CTR[runs]]) * 1000000 / el))
	COUNTED=$(((b[CTR[runs]] - a[CTR[runs]] - b[CTR[handled]] + a[CTR[handled]] +
		    b[CTR[held]] - a[CTR[held]] + b[CTR[windows]] - a[CTR[windows]]) *
		   1000000 / el))
}

# ping_latency FILE: PING_COUNT pings on PING_VECTOR, the event thread
# waiting for events; p50, p99, max (us) and lost into FILE as JSON
ping_latency()
{
	local p50 p99 max lost

	ask poll 0
	ask ping "$PING_VECTOR" "$PING_COUNT" "$PING_GAP_US"
	# "ping P50 P99 MAX LOST"
	read -r _ p50 p99 max lost <<< "$REPLY"
	printf '{"p50_us": %d, "p99_us": %d, "max_us": %d, "lost": %d}\n' \
		"$p50" "$p99" "$max" "$lost" > "$1"
	ask poll "$POLL_US"
}

# point DIR MODE RATE: one run of the ladder
point()
{
	set_mode "$2"
	flood "$3"
	sleep "$BENCH_WARMUP"
	measure "$1/window.json" "$BENCH_SECS" spin
	ping_latency "$1/ping.json"
}

# load_drop DIR MODE: the flood at the peak offered rate under MODE, then
# at drop_rate; DIR/first.json is the second after the drop, DIR/later.json
# the DROP_LATER_SECS after that
load_drop()
{
	set_mode "$2"
	flood "$peak_offered"
	sleep "$DROP_HIGH_SECS"
	flood "$drop_rate"
	measure "$1/first.json" 1
	measure "$1/later.json" "$DROP_LATER_SECS"
}

# calibrate: the peak (peak_offered, peak_taken) with moderation off, and
# floor, fixed mode's count at the largest delay there
calibrate()
{
	local rate

	set_mode off
	peak_taken=0
	for rate in "${CALIBRATE_RATES[@]}"; do
		flood "$rate"
		sleep "$BENCH_WARMUP"
		measure "$out/calibrate/off-$rate/window.json" "$BENCH_SECS" spin
		log "off, offered $rate/s: taken $RUNS/s"
		if [ "$RUNS" -gt "$peak_taken" ]; then
			peak_taken=$RUNS
			peak_offered=$rate
		fi
	done
	[ "$peak_taken" -gt 0 ] || { log "no flood interrupt taken"; return 1; }
	set_mode "fixed$MAX_DELAY_US"
	flood "$peak_offered"
	sleep "$BENCH_WARMUP"
	measure "$out/calibrate/fixed$MAX_DELAY_US/window.json" "$BENCH_SECS" spin
	floor=$COUNTED
}

# ladder: the offered rates, from FLOOD_LOW up to peak_offered in
# BENCH_FLOOD_RUNGS geometric steps (rounded to 100/s), or BENCH_FLOOD_RATES
ladder()
{
	if [ -n "$BENCH_FLOOD_RATES" ]; then
		echo "$BENCH_FLOOD_RATES"
		return
	fi
	awk -v lo="$FLOOD_LOW" -v hi="$peak_offered" -v n="$BENCH_FLOOD_RUNGS" 'BEGIN {
		for (i = 0; i < n; i++) {
			r = n > 1 ? lo * (hi / lo) ^ (i / (n - 1)) : hi
			r = int(r / 100 + 0.5) * 100
			if (r != last) printf "%s%d", (i ? " " : ""), r
			last = r
		}
		print ""
	}'
}

if ! bdf=$(flood_find); then
	echo "no ivshmem-doorbell device: is bench/qemu-opts in use, and was ivshmem_flood built?" >&2
	exit 1
fi
[ "$(nproc)" -ge 2 ] || { echo "the flood needs two CPUs" >&2; exit 1; }
taskset -pc "$OTHER_CPU" $$ > /dev/null
flood_bind "$bdf" || { echo "cannot bind $bdf to vfio-pci in no-IOMMU mode" >&2; exit 1; }
flood_irqs=()
trap cleanup EXIT
flood_start "$bdf"
log "flood device $bdf on vfio-pci, IRQs ${flood_irqs[*]} on CPU $FLOOD_CPU"
mkdir -p "$out"
ask poll "$POLL_US"

# The adaptive target: halfway between off's rate at the peak and fixed
# mode's at the largest delay there. Where that delay does not get below
# off (its timers cost more than it merges), no target is reachable: the
# target then lies above off's rate, and the report says so.
calibrate
target=$(((peak_taken + floor) / 2))
reachable=$((floor < peak_taken ? 1 : 0))
drop_rate=$((target / 2))
# A drop even where the target lies far above what the host delivers
[ "$drop_rate" -lt "$peak_offered" ] || drop_rate=$((peak_offered / 2))
rates=$(ladder)
log "peak: $peak_taken/s taken at $peak_offered/s offered; fixed $MAX_DELAY_US us there: $floor/s counted; target $target/s (reachable: $reachable); rates $rates"

printf '{"flood_irqs": %s, "flood_cpu": %d, "flood_mask": "%s", "ping_vector": %d, "ping_count": %d, "ping_gap_us": %d, "poll_us": %d, "calibrate_rates": "%s", "peak_offered": %d, "peak_taken": %d, "floor_rate": %d, "max_delay_us": %d, "target": %d, "reachable": %d, "drop_rate": %d, "drop_high_secs": %d, "drop_later_secs": %d, "secs": %s, "reps": %d, "modes": "%s", "rates": "%s"}\n' \
	"$(json_list "${flood_irqs[@]}")" "$FLOOD_CPU" "$FLOOD_MASK" \
	"$PING_VECTOR" "$PING_COUNT" "$PING_GAP_US" "$POLL_US" \
	"${CALIBRATE_RATES[*]}" "$peak_offered" "$peak_taken" "$floor" \
	"$MAX_DELAY_US" "$target" "$reachable" "$drop_rate" "$DROP_HIGH_SECS" \
	"$DROP_LATER_SECS" "$BENCH_SECS" "$BENCH_REPS" "${MODES[*]}" "$rates" \
	> "$out/meta.json"

for rep in $(seq "$BENCH_REPS"); do
	log "rep $rep/$BENCH_REPS: the CPU-bound program alone"
	set_mode off
	flood 0
	measure "$out/alone/$rep/window.json" "$BENCH_SECS" spin
	for rate in $rates; do
		log "rep $rep/$BENCH_REPS: offered $rate/s"
		for mode in "${MODES[@]}"; do
			point "$out/$mode/$rate/$rep" "$mode" "$rate"
		done
	done
	log "rep $rep/$BENCH_REPS: load drop from $peak_offered/s to $drop_rate/s"
	for mode in off adaptive; do
		load_drop "$out/drop/$mode/$rep" "$mode"
	done
	flood 0
done
log "done"
