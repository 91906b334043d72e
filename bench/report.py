#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Tables and charts from a benchmark run (see bench/guest/run.sh).

usage: report.py RAW_DIR RESULTS_DIR [--readme README.md]

RAW_DIR holds what the guest recorded: per point, the client's or fio's
JSON output and /proc snapshots at both ends of the measured window.
Every figure here is worked out from those; each table cell is the median
of the runs with [min-max] after it. RESULTS_DIR gets suspend.md, gsim.md,
summary.md, README.md (all three), suspend.png, gsim.png and data.json.
With --readme, the part of README.md between the bench markers is replaced
by the new README.md, with links made relative to README.md.
"""
import argparse
import json
import os
import statistics
import sys

USER_HZ = 100
CPU_FIELDS = 8		# user nice system idle iowait irq softirq steal


# ---------------------------------------------------------------- /proc

def read_stat(path):
    """/proc/stat as {"cpu": [...], "cpu0": [...], ...} of jiffies."""
    cpus = {}
    with open(path, encoding="ascii") as f:
        for line in f:
            words = line.split()
            if words and words[0].startswith("cpu"):
                cpus[words[0]] = [int(v) for v in words[1:1 + CPU_FIELDS]]
    return cpus


def stat_delta(point, cpu):
    start = read_stat(f"{point}/start-stat")[cpu]
    end = read_stat(f"{point}/end-stat")[cpu]
    return [e - s for s, e in zip(start, end)]


def busy_fraction(delta):
    total = sum(delta)
    idle = delta[3] + delta[4]
    return (total - idle) / total if total else 0.0


def read_interrupts(path):
    """/proc/interrupts as {"37": total over CPUs, ...}."""
    counts = {}
    with open(path, encoding="ascii") as f:
        for line in f:
            words = line.split()
            if not words or not words[0].endswith(":"):
                continue
            total = 0
            for w in words[1:]:
                if not w.isdigit():
                    break
                total += int(w)
            counts[words[0][:-1]] = total
    return counts


def interrupts_delta(point, irqs):
    start = read_interrupts(f"{point}/start-interrupts")
    end = read_interrupts(f"{point}/end-interrupts")
    return sum(end[str(i)] - start[str(i)] for i in irqs)


def softirq_delta(point, name, cpu):
    def read(path):
        with open(path, encoding="ascii") as f:
            lines = f.read().splitlines()
        col = lines[0].split().index(f"CPU{cpu}") + 1
        for line in lines[1:]:
            words = line.split()
            if words[0] == f"{name}:":
                return int(words[col])
        raise ValueError(f"no {name} in {path}")
    return read(f"{point}/end-softirqs") - read(f"{point}/start-softirqs")


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


# ---------------------------------------------------------------- stats

def spread(values):
    """median, min, max of the runs of one point."""
    return {"median": statistics.median(values), "min": min(values),
            "max": max(values), "runs": values}


def cell(s, fmt):
    if s["min"] == s["max"]:
        return fmt.format(s["median"])
    return (fmt.format(s["median"]) + " [" + fmt.format(s["min"]) + "–" +
            fmt.format(s["max"]) + "]")


def ratio(a, b):
    return a / b if b else float("nan")


def med_ratio(a, b, metric):
    """The ratio of two points' medians of one metric."""
    return ratio(a[metric]["median"], b[metric]["median"])


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join("---:" if i else "---" for i in range(len(header))) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def aggregate(points, metrics):
    """{key: {metric: spread}} from {key: [per-run dicts]}."""
    return {key: {m: spread([run[m] for run in runs]) for m in metrics}
            for key, runs in points.items()}


# ---------------------------------------------------------------- IRQ suspension

RR_METRICS = ["qps", "avg_us", "p95_us", "p99_us", "cpu_pct", "ipq", "spq"]


def rr_point(point, meta):
    client = load_json(f"{point}/client.json")
    cpu = meta["server_cpu"]
    answered = max(client["answered"], 1)
    return {
        "qps": client["qps"],
        "avg_us": client["avg_us"],
        "p95_us": client["p95_us"],
        "p99_us": client["p99_us"],
        "cpu_pct": 100 * busy_fraction(stat_delta(point, f"cpu{cpu}")),
        "ipq": interrupts_delta(point, meta["server_irqs"]) / answered,
        "spq": softirq_delta(point, "NET_RX", cpu) / answered,
        "dropped": client["dropped"],
    }


def collect_points(raw, modes, columns, point, meta):
    """{(mode, column): [per-run figures]} from RAW/MODE/COLUMN/REP."""
    points = {}
    for mode in modes:
        for col in columns:
            base = f"{raw}/{mode}/{col}"
            reps = sorted(os.listdir(base), key=int) if os.path.isdir(base) else []
            if reps:
                points[(mode, col)] = [point(f"{base}/{r}", meta) for r in reps]
    return points


def rr_collect(raw):
    meta = load_json(f"{raw}/meta.json")
    modes = meta["modes"].split()
    loads = [entry.split(":")[0] for entry in meta["loads"].split()]
    return meta, modes, loads, collect_points(raw, modes, loads, rr_point, meta)


def load_label(load, meta):
    if load == "max":
        return "MAX"
    return f"{load}% ({int(meta['saturation_qps']) * int(load) // 100}/s)"


def rr_table(meta, modes, loads, agg):
    parts = []
    for load in loads:
        rows = []
        for mode in modes:
            a = agg.get((mode, load))
            if not a:
                continue
            rows.append([mode, load_label(load, meta), cell(a["qps"], "{:.0f}"),
                         cell(a["avg_us"], "{:.0f}"), cell(a["p95_us"], "{:.0f}"),
                         cell(a["p99_us"], "{:.0f}"), cell(a["cpu_pct"], "{:.0f}"),
                         cell(a["ipq"], "{:.2f}"), cell(a["spq"], "{:.2f}")])
        parts.append(md_table(["testcase", "load", "qps", "avglat", "95%lat",
                               "99%lat", "cpu", "ipq", "spq"], rows))
    return "\n".join(parts)


def rr_summary(modes, loads, agg):
    lines = []
    xs = [m[len("suspend"):] for m in modes if m.startswith("suspend") and m != "suspend0"]
    fixed = [l for l in loads if l != "max"]
    for x in xs:
        for load in fixed:
            s, f, d = (agg.get((m, load)) for m in (f"suspend{x}", "fullbusy", f"defer{x}"))
            if not (s and f and d):
                continue
            lines.append(
                f"- load {load}%: suspend{x}/fullbusy CPU "
                f"{med_ratio(s, f, 'cpu_pct'):.2f}, "
                f"suspend{x}/defer{x} p99 "
                f"{med_ratio(s, d, 'p99_us'):.2f}, "
                f"suspend{x}/defer{x} CPU "
                f"{med_ratio(s, d, 'cpu_pct'):.2f}")
    b, s0 = agg.get(("base", "max")), agg.get(("suspend0", "max"))
    if b and s0:
        lines.append(f"- MAX: suspend0/base qps "
                     f"{med_ratio(s0, b, 'qps'):.2f}")
    for x in xs:
        s = agg.get((f"suspend{x}", "max"))
        if b and s:
            lines.append(f"- MAX: suspend{x}/base qps "
                         f"{med_ratio(s, b, 'qps'):.2f}")
    return "\n".join(lines) + "\n"


def rr_chart(path, meta, modes, loads, agg, plt):
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    x = list(range(len(loads)))
    for mode in modes:
        for ax, metric in zip(axes, ("p99_us", "cpu_pct", "ipq")):
            ys = [agg[(mode, l)][metric]["median"] if (mode, l) in agg else float("nan")
                  for l in loads]
            style = "-" if mode.startswith("suspend") else "--"
            ax.plot(x, ys, style, marker="o", label=mode)
    titles = ("p99 latency (us, log)", "server CPU (%)", "device interrupts per request")
    for ax, title in zip(axes, titles):
        ax.set_xticks(x)
        ax.set_xticklabels([load_label(l, meta).split(" ")[0] for l in loads])
        ax.set_xlabel(f"load (% of base closed-loop rate, {meta['saturation_qps']}/s)")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[0].set_yscale("log")
    axes[2].legend(fontsize=8)
    fig.suptitle("IRQ suspension: rr_server on virtio-net, medians of "
                 f"{meta['reps']} runs")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


# ---------------------------------------------------------------- GSIM

GSIM_METRICS = ["iops", "p50_us", "p99_us", "intr_s", "timer_s", "cpu_pct",
                "irq_us_per_intr", "delay_us"]


def read_mod_stats(path):
    """The per-CPU rows of /proc/irq/soft_moderation/stats, as dicts."""
    with open(path, encoding="ascii") as f:
        header = f.readline().split()
        return [dict(zip(header, map(int, row))) for row in map(str.split, f)
                if len(row) == len(header) and row[0].isdigit()]


def read_mod_totals(path):
    """The total_* lines of /proc/irq/soft_moderation/stats, as a dict."""
    with open(path, encoding="ascii") as f:
        return {w[0][len("total_"):]: int(w[1]) for w in map(str.split, f)
                if len(w) == 2 and w[0].startswith("total_")}


def gsim_point(point, meta):
    stat = stat_delta(point, "cpu")
    ncpu = len([c for c in read_stat(f"{point}/start-stat") if c != "cpu"])
    secs = sum(stat) / ncpu / USER_HZ
    with open(f"{point}/start-ios", encoding="ascii") as f:
        ios = -int(f.read())
    with open(f"{point}/end-ios", encoding="ascii") as f:
        ios += int(f.read())
    vector = interrupts_delta(point, meta["disk_irqs"])
    start = read_mod_totals(f"{point}/start-gsim-stats")
    end = read_mod_totals(f"{point}/end-gsim-stats")
    # What the CPUs took: handler runs, arrivals while held back, timers
    held = end["held"] - start["held"]
    timers = end["timers"] - start["timers"]
    intr = vector + held + timers
    mod = read_mod_stats(f"{point}/end-gsim-stats")
    clat = load_json(f"{point}/fio.json")["jobs"][0]["read"]["clat_ns"]["percentile"]
    return {
        "iops": ios / secs,
        "p50_us": clat["50.000000"] / 1e3,
        "p99_us": clat["99.000000"] / 1e3,
        "intr_s": intr / secs,
        "timer_s": timers / secs,
        "cpu_pct": 100 * busy_fraction(stat),
        # hardirq time of all CPUs (all interrupts) per disk interrupt
        "irq_us_per_intr": stat[5] * 1e6 / USER_HZ / vector if vector else 0.0,
        # the CPUs' moderation delays at the end of the window
        "delay_us": statistics.mean(c["delay_ns"] for c in mod) / 1e3,
    }


def gsim_collect(raw):
    meta = load_json(f"{raw}/meta.json")
    modes, depths = meta["modes"].split(), meta["depths"].split()
    points = collect_points(raw, modes, depths, gsim_point, meta)
    verified = {}
    for mode in modes:
        path = f"{raw}/verify-{mode}.json"
        if os.path.exists(path):
            job = load_json(path)["jobs"][0]
            verified[mode] = (job["error"] == 0, job["write"]["total_ios"])
    return meta, modes, depths, points, verified


GSIM_MODE_TEXT = {
    "off": "off",
    "fixed": "fixed, delay_us {fixed_delay_us}",
    "adaptive": "adaptive, delay_us {adaptive_delay_us}, target {target_intr_rate}/s, "
                "hardirq {hardirq_percent}%",
    "delay0": "enabled, delay 0",
}


def gsim_table(meta, modes, depths, agg, verified):
    rows = []
    for depth in depths:
        for mode in modes:
            a = agg.get((mode, depth))
            if not a:
                continue
            rows.append([GSIM_MODE_TEXT[mode].format(**meta), depth,
                         cell(a["iops"], "{:.0f}"), cell(a["p50_us"], "{:.0f}"),
                         cell(a["p99_us"], "{:.0f}"), cell(a["intr_s"], "{:.0f}"),
                         cell(a["timer_s"], "{:.0f}"),
                         cell(a["cpu_pct"], "{:.0f}"),
                         cell(a["irq_us_per_intr"], "{:.2f}"),
                         # not updated while moderation is off
                         "–" if mode == "off" else cell(a["delay_us"], "{:.0f}")])
    out = md_table(["mode", "iodepth", "IOPS", "p50 clat (us)", "p99 clat (us)",
                    "interrupts/s", "of which timers/s", "CPU %",
                    "hardirq us/intr", "delay (us)"], rows)
    if verified:
        out += "\nVerified random writes (crc32c, file-backed disk, iodepth 32): " + \
            ", ".join(f"{m} {'ok' if ok else 'FAILED'} ({n} I/Os)"
                      for m, (ok, n) in verified.items()) + ".\n"
    return out


def gsim_summary(meta, depths, agg):
    target = meta["target_intr_rate"]
    lines = []
    for depth in depths:
        a, o = agg.get(("adaptive", depth)), agg.get(("off", depth))
        f = agg.get(("fixed", depth))
        if not (a and o and f):
            continue
        rate, floor = a["intr_s"]["median"], f["intr_s"]["median"]
        # Fixed mode at adaptive's largest delay: the lowest rate in reach
        if floor <= target:
            reach = (f"target {target}/s reachable (fixed at "
                     f"{meta['fixed_delay_us']} us: {floor:.0f}/s); adaptive "
                     f"{rate:.0f}/s = {rate / target:.2f} of the target")
        else:
            reach = (f"target {target}/s not reachable (fixed at "
                     f"{meta['fixed_delay_us']} us takes {floor:.0f}/s, off "
                     f"{o['intr_s']['median']:.0f}/s); adaptive {rate:.0f}/s "
                     f"= {med_ratio(a, o, 'intr_s'):.2f} of off")
        lines.append(
            f"- iodepth {depth}: {reach}, delay "
            f"{a['delay_us']['median']:.0f} us; IOPS "
            f"{med_ratio(a, o, 'iops'):.2f}, p50 "
            f"{med_ratio(a, o, 'p50_us'):.2f}, p99 "
            f"{med_ratio(a, o, 'p99_us'):.2f} of off")
    # One completion per interrupt only at the shallowest queue: there the
    # hardirq time per interrupt is the handler's plus the hook's.
    for depth in depths[:1]:
        z, o = agg.get(("delay0", depth)), agg.get(("off", depth))
        if z and o:
            lines.append(
                f"- hook cost, iodepth {depth}: enabled at delay 0 vs off, hardirq "
                f"us per interrupt {z['irq_us_per_intr']['median']:.2f} vs "
                f"{o['irq_us_per_intr']['median']:.2f} "
                f"({z['irq_us_per_intr']['median'] - o['irq_us_per_intr']['median']:+.2f}), "
                f"IOPS {med_ratio(z, o, 'iops'):.2f}")
    return "\n".join(lines) + "\n"


def gsim_chart(path, meta, modes, depths, agg, plt):
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    width = 0.8 / len(modes)
    for i, mode in enumerate(modes):
        xs = [d + (i - (len(modes) - 1) / 2) * width for d in range(len(depths))]
        for ax, metric in zip(axes, ("intr_s", "iops", "p99_us")):
            spreads = [agg[(mode, d)][metric] if (mode, d) in agg else None for d in depths]
            med = [s["median"] if s else float("nan") for s in spreads]
            err = [[s["median"] - s["min"] if s else 0 for s in spreads],
                   [s["max"] - s["median"] if s else 0 for s in spreads]]
            ax.bar(xs, med, width, yerr=err, capsize=2, label=mode)
    axes[0].axhline(meta["target_intr_rate"], color="black", linestyle=":",
                    label="adaptive target")
    for ax, title in zip(axes, ("interrupts/s", "IOPS", "p99 completion latency (us)")):
        ax.set_xticks(range(len(depths)))
        ax.set_xticklabels(depths)
        ax.set_xlabel("iodepth (per job, 2 jobs)")
        ax.set_title(title)
        ax.grid(alpha=0.3, axis="y")
    axes[0].legend(fontsize=8)
    fig.suptitle("GSIM: fio randread 4k on null-co virtio-blk, medians of "
                 f"{meta['reps']} runs (bars: min-max)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


# ---------------------------------------------------------------- output

README_BEGIN = "<!-- bench:begin -->"
README_END = "<!-- bench:end -->"


def splice_readme(readme, text):
    with open(readme, encoding="utf-8") as f:
        old = f.read()
    if README_BEGIN not in old or README_END not in old:
        sys.exit(f"{readme} has no {README_BEGIN} ... {README_END} section")
    head, rest = old.split(README_BEGIN, 1)
    tail = rest.split(README_END, 1)[1]
    with open(readme, "w", encoding="utf-8") as f:
        f.write(head + README_BEGIN + "\n" + text + README_END + tail)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("raw")
    ap.add_argument("results")
    ap.add_argument("--readme")
    ap.add_argument("--title", default="")
    args = ap.parse_args()

    import matplotlib  # pylint: disable=import-outside-toplevel
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel

    os.makedirs(args.results, exist_ok=True)
    data, readme = {}, [args.title] if args.title else []
    if os.path.exists(f"{args.raw}/rr/meta.json"):
        meta, modes, loads, points = rr_collect(f"{args.raw}/rr")
        agg = aggregate(points, RR_METRICS)
        table, summary = rr_table(meta, modes, loads, agg), rr_summary(modes, loads, agg)
        with open(f"{args.results}/suspend.md", "w", encoding="utf-8") as f:
            f.write(table)
        rr_chart(f"{args.results}/suspend.png", meta, modes, loads, agg, plt)
        data["suspend"] = {"meta": meta, "points": {f"{m} {l}": v for (m, l), v in agg.items()}}
        readme += ["### IRQ suspension", "",
                   f"rr_server/rr_client over virtio-net, {meta['conns']} connections, "
                   f"{meta['secs']} s per run, {meta['reps']} runs; base sustains "
                   f"{meta['saturation_qps']} requests/s closed-loop. Latencies in us; "
                   "cpu: server CPU busy %; ipq: server device interrupts per request; "
                   "spq: NET_RX softirqs per request on the server CPU.", "",
                   "Modes, as in the cover letter: deferX = defer-hard-irqs 100, "
                   "gro-flush-timeout X us; napibusy = defer200 plus EPIOCSPARAMS "
                   "(busy_poll_usecs 64, budget 64, prefer 1); fullbusy = "
                   "defer-hard-irqs 100, gro-flush-timeout 5 ms, epoll_wait() with a "
                   "1 ms timeout all busy-polled (busy_poll_usecs 1000), so the server "
                   "never sleeps; suspend0 = irq-suspend-timeout 20 ms with "
                   "EPIOCSPARAMS (busy_poll_usecs 0, budget 64, prefer 1); suspendX = "
                   "deferX plus the same.", "",
                   table, "Ratios (medians):", "", summary,
                   "![IRQ suspension](suspend.png)", ""]
    if os.path.exists(f"{args.raw}/gsim/meta.json"):
        meta, modes, depths, points, verified = gsim_collect(f"{args.raw}/gsim")
        agg = aggregate(points, GSIM_METRICS)
        table, summary = gsim_table(meta, modes, depths, agg, verified), \
            gsim_summary(meta, depths, agg)
        with open(f"{args.results}/gsim.md", "w", encoding="utf-8") as f:
            f.write(table)
        gsim_chart(f"{args.results}/gsim.png", meta, modes, depths, agg, plt)
        data["gsim"] = {"meta": meta, "points": {f"{m} {d}": v for (m, d), v in agg.items()},
                        "verified": verified}
        readme += ["### GSIM", "",
                   "fio randread 4k, 2 jobs (one per CPU) on a two-queue null-co "
                   f"virtio-blk disk, {meta['secs']} s per run, {meta['reps']} runs. "
                   f"Adaptive target: {meta['target_percent']}% of the highest off-mode "
                   "rate over the iodepths. interrupts/s: what the CPUs took for the "
                   "disk, its vector's count plus arrivals while held back plus "
                   "GSIM's timers; a target is reachable at an iodepth where fixed "
                   "mode at adaptive's largest delay gets below it. "
                   "hardirq us/intr: hardirq time of all CPUs "
                   "per disk interrupt (an interrupt completes more I/Os at deeper "
                   "queues, so compare it within one iodepth). delay: the mean over the "
                   "CPUs of delay_ns in soft_moderation/stats at the end of the "
                   "window (adaptive changes it by up to 1/8 or 1/16 per 5 ms epoch).", "",
                   table, "Ratios (medians):", "", summary,
                   "![GSIM](gsim.png)", ""]
    if not data:
        sys.exit(f"nothing to report in {args.raw}")
    with open(f"{args.results}/data.json", "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, default=list)
    text = "\n".join(readme)
    with open(f"{args.results}/README.md", "w", encoding="utf-8") as f:
        f.write(text)
    print(text)
    if args.readme:
        rel = os.path.relpath(args.results, os.path.dirname(os.path.abspath(args.readme)))
        for name in ("suspend.png", "gsim.png"):
            text = text.replace(f"]({name})", f"]({rel}/{name})")
        splice_readme(args.readme, text)


if __name__ == "__main__":
    main()
