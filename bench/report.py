#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Tables and charts from a benchmark run (see bench/guest/run.sh).

usage: report.py RAW_DIR RESULTS_DIR [--readme README.md]

RAW_DIR holds what the guest recorded: per point, the client's or fio's
JSON output and /proc snapshots at both ends of the measured window.
Every figure here is worked out from those; each table cell is the median
of the runs with [min-max] after it. RESULTS_DIR gets suspend.md,
memcached.md, memcached-pinning.md, gsim.md, flood.md, README.md (all of
them), suspend.png, memcached.png, gsim.png, flood.png and data.json.
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


def irq_names(path):
    """{"37": "virtio3-input.0", ...}: the last word of each /proc/interrupts line."""
    with open(path, encoding="ascii") as f:
        return {w[0][:-1]: w[-1] for w in map(str.split, f)
                if w and w[0].endswith(":")}


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
    """median, min, max of the runs of one point (runs without the figure,
    NaN, left out)."""
    have = [v for v in values if v == v] or [float("nan")]
    return {"median": statistics.median(have), "min": min(have),
            "max": max(have), "runs": values}


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

RR_METRICS = ["qps", "avg_us", "p95_us", "p99_us", "cpu_pct", "ipq",
              "ipq_rx", "ipq_tx", "spq"]


def rr_point(point, meta):
    client = load_json(f"{point}/client.json")
    cpu = meta["server_cpu"]
    answered = max(client["answered"], 1)
    names = irq_names(f"{point}/start-interrupts")
    # The RX queue's vector is the one IRQ suspension governs; virtio-net
    # completes transmits with a NAPI and a vector of their own.
    rx = [i for i in meta["server_irqs"] if "-input." in names[str(i)]]
    tx = [i for i in meta["server_irqs"] if "-output." in names[str(i)]]
    return {
        "qps": client["qps"],
        "avg_us": client["avg_us"],
        "p95_us": client["p95_us"],
        "p99_us": client["p99_us"],
        "cpu_pct": 100 * busy_fraction(stat_delta(point, f"cpu{cpu}")),
        "ipq": interrupts_delta(point, meta["server_irqs"]) / answered,
        "ipq_rx": interrupts_delta(point, rx) / answered,
        "ipq_tx": interrupts_delta(point, tx) / answered,
        "spq": softirq_delta(point, "NET_RX", cpu) / answered,
        "lost": client["dropped"] + client.get("unanswered", 0),
        "checked": client.get("checked", 0),
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
                         cell(a["ipq"], "{:.2f}"), cell(a["ipq_rx"], "{:.3f}"),
                         cell(a["spq"], "{:.2f}")])
        parts.append(md_table(["testcase", "load", "qps", "avglat", "95%lat",
                               "99%lat", "cpu", "ipq", "rx ipq", "spq"], rows))
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
        s, d = agg.get((f"suspend{x}", "max")), agg.get((f"defer{x}", "max"))
        if b and s:
            lines.append(f"- MAX: suspend{x}/base qps "
                         f"{med_ratio(s, b, 'qps'):.2f}")
        if s and d:
            lines.append(f"- MAX: suspend{x}/defer{x} RX-vector interrupts per "
                         f"request {med_ratio(s, d, 'ipq_rx'):.3f} "
                         f"({s['ipq_rx']['median']:.3f} vs "
                         f"{d['ipq_rx']['median']:.3f}), all vectors "
                         f"{med_ratio(s, d, 'ipq'):.2f}")
    return "\n".join(lines) + "\n"


def rr_chart(path, meta, modes, loads, agg, plt, what):
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    x = list(range(len(loads)))
    for mode in modes:
        for ax, metric in zip(axes, ("p99_us", "cpu_pct", "ipq_rx")):
            ys = [agg[(mode, l)][metric]["median"] if (mode, l) in agg else float("nan")
                  for l in loads]
            style = "-" if mode.startswith("suspend") else "--"
            ax.plot(x, ys, style, marker="o", label=mode)
    titles = ("p99 latency (us, log)", "server CPU (%)",
              "RX-vector interrupts per request")
    for ax, title in zip(axes, titles):
        ax.set_xticks(x)
        ax.set_xticklabels([load_label(l, meta).split(" ")[0] for l in loads])
        ax.set_xlabel(f"load (% of base closed-loop rate, {meta['saturation_qps']}/s)")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[0].set_yscale("log")
    axes[2].legend(fontsize=8)
    fig.suptitle(f"IRQ suspension: {what} on virtio-net, medians of "
                 f"{meta['reps']} runs")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


MODES_TEXT = ("Modes, as in the cover letter: deferX = defer-hard-irqs 100, "
              "gro-flush-timeout X us; napibusy = defer200 plus EPIOCSPARAMS "
              "(busy_poll_usecs 64, budget 64, prefer 1); fullbusy = "
              "defer-hard-irqs 100, gro-flush-timeout 5 ms, epoll_wait() with a "
              "1 ms timeout all busy-polled (busy_poll_usecs 1000), so the server "
              "never sleeps; suspend0 = irq-suspend-timeout 20 ms with "
              "EPIOCSPARAMS (busy_poll_usecs 0, budget 64, prefer 1); suspendX = "
              "deferX plus the same.")

COLUMNS_TEXT = ("Latencies in us; cpu: server CPU busy %; ipq: server device "
                "interrupts per request, all its vectors; rx ipq: those of the "
                "RX queue's vector, the one IRQ suspension holds off (virtio-net "
                "completes transmits with a NAPI and a vector of their own); spq: "
                "NET_RX softirqs per request on the server CPU.")

SUSPEND_PARTS = [
    {"dir": "rr", "name": "suspend", "title": "IRQ suspension: rr_server",
     "what": "rr_server",
     "intro": "rr_server/rr_client over virtio-net, {conns} connections, {secs} s "
              "per run, {reps} runs; base sustains {saturation_qps} requests/s "
              "closed-loop."},
    {"dir": "mc", "name": "memcached", "title": "IRQ suspension: memcached",
     "what": "memcached under libepoll-busy-poll.so",
     "intro": "memcached (Debian's, one worker thread on the server CPU) under "
              "`libepoll-busy-poll.so`, which sets EPIOCSPARAMS on its epoll "
              "instances (base and deferX run it without the library, "
              "fullbusy adds `bench/tools/epoll_timeout.c` for the 1 ms "
              "timeout); rr_client -m: gets and 10% sets of 1000 keys, every "
              "reply checked byte for byte ({checked} replies in all). "
              "{conns} connections, {secs} s per run, {reps} runs; base "
              "sustains {saturation_qps} requests/s closed-loop with one "
              "request outstanding per connection, which the loads are "
              "fractions of; MAX keeps {depth} requests outstanding on each "
              "connection."},
]


CLK_TCK = 100


def read_host_sample(path):
    """A host sample (bench_sample in tooling/lib/bench.sh): uptime and
    {thread class: ticks}, where the classes are "main" (the main loop, the
    process's first thread), "vcpu0", "vcpu1" and "other"."""
    uptime, threads = 0.0, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            words = line.split(maxsplit=3)
            if words[0] == "uptime":
                uptime = float(words[1])
            elif len(words) == 4:
                threads.append((int(words[0]), int(words[1]) + int(words[2]),
                                words[3].strip()))
    ticks = {"main": 0, "vcpu0": 0, "vcpu1": 0, "other": 0}
    first = min(t[0] for t in threads)
    for tid, t, comm in threads:
        if tid == first:
            ticks["main"] += t
        elif comm.startswith("CPU ") and "/" in comm:
            ticks["vcpu" + comm[4:comm.index("/")]] = t
        else:
            ticks["other"] += t
    return uptime, ticks


def host_cpu(point):
    """% of one host CPU each QEMU thread class used around a point (NaN
    where the host did not sample)."""
    if not (os.path.exists(f"{point}/host-start") and os.path.exists(f"{point}/host-end")):
        return {m: NAN for m in HOST_METRICS}
    t0, a = read_host_sample(f"{point}/host-start")
    t1, b = read_host_sample(f"{point}/host-end")
    return {f"host_{k}_pct": 100 * (b[k] - a[k]) / CLK_TCK / (t1 - t0)
            for k in a} if t1 > t0 else {}


NAN = float("nan")


HOST_METRICS = ["host_main_pct", "host_vcpu0_pct", "host_vcpu1_pct"]


def pinning_point(point, meta):
    return {**rr_point(point, meta), **host_cpu(point)}


def pinning_table(raw, meta, results):
    """The pinning study: the same points, QEMU's threads spread or split."""
    base = f"{raw}/pinning"
    if not os.path.isdir(base):
        return None, "", ""
    modes = meta["modes"].split()
    loads = [entry.split(":")[0] for entry in meta["loads"].split()]
    agg = {}
    for pin in ("spread", "split"):
        points = collect_points(f"{base}/{pin}", modes, loads, pinning_point, meta)
        for (mode, load), runs in aggregate(points, RR_METRICS + HOST_METRICS).items():
            agg[(pin, mode, load)] = runs
    rows, lines = [], []
    for load in loads:
        for mode in modes:
            a, b = agg.get(("spread", mode, load)), agg.get(("split", mode, load))
            if not (a and b):
                continue
            for pin, x in (("spread", a), ("split", b)):
                rows.append([mode, load_label(load, meta), pin,
                             cell(x["qps"], "{:.0f}"), cell(x["p99_us"], "{:.0f}"),
                             cell(x["cpu_pct"], "{:.0f}"), cell(x["ipq_rx"], "{:.3f}")] +
                            [cell(x[m], "{:.0f}") for m in HOST_METRICS])
            lines.append(f"- {mode} {load_label(load, meta)}: split/spread qps "
                         f"{med_ratio(b, a, 'qps'):.2f}, p99 "
                         f"{med_ratio(b, a, 'p99_us'):.2f}, server CPU "
                         f"{med_ratio(b, a, 'cpu_pct'):.2f}")
    table = md_table(["testcase", "load", "host threads", "qps", "99%lat", "cpu",
                      "rx ipq", "main loop %", "vCPU 0 %", "vCPU 1 %"], rows)
    with open(f"{results}/memcached-pinning.md", "w", encoding="utf-8") as f:
        f.write(table)
    return {f"{p} {m} {l}": v for (p, m, l), v in agg.items()}, table, \
        "\n".join(lines) + "\n"


def suspend_section(raw, results, part, plt):
    """The table, chart and README text of one IRQ suspension part."""
    meta, modes, loads, points = rr_collect(raw)
    agg = aggregate(points, RR_METRICS)
    table, summary = rr_table(meta, modes, loads, agg), rr_summary(modes, loads, agg)
    name = part["name"]
    with open(f"{results}/{name}.md", "w", encoding="utf-8") as f:
        f.write(table)
    rr_chart(f"{results}/{name}.png", meta, modes, loads, agg, plt, part["what"])
    checked = sum(run["checked"] for runs in points.values() for run in runs)
    lost = [f"{m} {load_label(l, meta)}: {sum(run['lost'] for run in runs)}"
            for (m, l), runs in points.items() if any(run["lost"] for run in runs)]
    data = {"meta": meta, "points": {f"{m} {l}": v for (m, l), v in agg.items()}}
    pinned = {"split": " The server vCPU's host thread has a host CPU of its own "
                        "(QEMU's other threads share the others; see the pinning "
                        "study).",
              "spread": " QEMU's threads are not pinned on the host."}
    text = ["### " + part["title"], "",
            part["intro"].format(**{"depth": 1, **meta, "checked": checked}) +
            pinned.get(meta.get("host_threads"), "") + " " + COLUMNS_TEXT, "",
            MODES_TEXT, "",
            table, "Requests dropped (the connection full) or unanswered at the "
            "end of a run: " + ("; ".join(lost) if lost else "none") + ".", "",
            "Ratios (medians):", "", summary,
            f"![{part['title']}]({name}.png)", ""]
    pins, pin_table, pin_summary = pinning_table(raw, meta, results)
    if pins:
        data["pinning"] = pins
        text += ["Pinning study: the same points in one more pass, alternating "
                 "between QEMU's threads free on the host's CPUs (spread) and "
                 "the server vCPU's thread alone on one host CPU, the client "
                 "vCPU and QEMU's I/O threads on the others (split, as in the "
                 "table above). main loop, vCPU 0, vCPU 1: the host CPU time "
                 "of those QEMU threads over the run (warm-up and drain "
                 "included), in % of one host CPU; the main loop moves every "
                 "packet between the two ports.", "",
                 pin_table, "Ratios (medians):", "", pin_summary]
    return data, text


# ---------------------------------------------------------------- GSIM

GSIM_METRICS = ["iops", "p50_us", "p99_us", "intr_s", "timer_s", "held_s",
                "cpu_pct", "irq_us_per_intr", "delay_us"]


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
        "held_s": held / secs,
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
    "above": "adaptive, delay_us {adaptive_delay_us}, target {above_target}/s",
    "reach": "adaptive, delay_us {max_delay_us}, target {reach_target}/s",
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
                         cell(a["timer_s"], "{:.0f}"), cell(a["held_s"], "{:.0f}"),
                         cell(a["cpu_pct"], "{:.0f}"),
                         cell(a["irq_us_per_intr"], "{:.2f}"),
                         # not updated while moderation is off
                         "–" if mode == "off" else cell(a["delay_us"], "{:.0f}")])
    out = md_table(["mode", "iodepth", "IOPS", "p50 clat (us)", "p99 clat (us)",
                    "interrupts/s", "of which timers/s", "held back/s", "CPU %",
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
    # A target above every load: adaptive must hold nothing back
    for depth in depths[:1]:
        a, o = agg.get(("above", depth)), agg.get(("off", depth))
        if a and o:
            lines.append(
                f"- target above the load (iodepth {depth}, {meta['above_target']}/s, "
                f"off takes {o['intr_s']['median']:.0f}/s): held back "
                f"{a['held_s']['median']:.0f}/s, timers {a['timer_s']['median']:.0f}/s, "
                f"delay {a['delay_us']['median']:.0f} us; vs off interrupts/s "
                f"{med_ratio(a, o, 'intr_s'):.2f}, IOPS {med_ratio(a, o, 'iops'):.2f}, "
                f"p50 {med_ratio(a, o, 'p50_us'):.2f}")
    flood = str(meta["flood_depth"])
    a, o = agg.get(("reach", flood)), agg.get(("off", flood))
    if a and o:
        rate, target = a["intr_s"]["median"], meta["reach_target"]
        off_rate, floor = meta["flood_off_rate"], meta["flood_floor_rate"]
        if floor < off_rate:
            what = (f"target halfway {target}/s): adaptive {rate:.0f}/s = "
                    f"{rate / target:.2f} of the target")
        else:
            what = (f"so no target below off is reachable; the third adaptive row's "
                    f"target {target}/s): adaptive {rate:.0f}/s = "
                    f"{med_ratio(a, o, 'intr_s'):.2f} of off, timers "
                    f"{a['timer_s']['median']:.0f}/s")
        lines.append(
            f"- the flood (iodepth {flood}: off {off_rate}/s, fixed at "
            f"{meta['max_delay_us']} us {floor}/s counting held-back arrivals "
            f"and timers, {what}; delay {a['delay_us']['median']:.0f} us, IOPS "
            f"{med_ratio(a, o, 'iops'):.2f} of off")
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


PROTECT_CASES = ("alone", "off", "hardirq")


def protect_point(point, meta):
    """cpu_spin's throughput and CPU 0's hardirq share in one window."""
    stat = stat_delta(point, "cpu0")
    secs = sum(stat) / USER_HZ
    start = read_mod_totals(f"{point}/start-gsim-stats")
    end = read_mod_totals(f"{point}/end-gsim-stats")
    timers = end["timers"] - start["timers"]
    held = end["held"] - start["held"]
    vector = interrupts_delta(point, meta["disk_irqs"])
    out = {"units_s": load_json(f"{point}/window.json")["units_per_s"],
           "hardirq_pct": 100 * stat[5] / sum(stat) if sum(stat) else 0.0,
           # as in the GSIM table: handler runs, held-back arrivals, timers
           "intr_s": (vector + held + timers) / secs,
           "timer_s": timers / secs,
           "iops": 0.0}
    if os.path.exists(f"{point}/fio.json"):
        with open(f"{point}/start-ios", encoding="ascii") as f:
            ios = -int(f.read())
        with open(f"{point}/end-ios", encoding="ascii") as f:
            ios += int(f.read())
        out["iops"] = ios / secs
    return out


def protect_section(raw, meta):
    """hardirq_percent protecting cpu_spin: table rows and ratios."""
    base = f"{raw}/protect"
    if not os.path.isdir(base):
        return None, ""
    points = {}
    for case in PROTECT_CASES:
        reps = sorted(os.listdir(f"{base}/{case}"), key=int) \
            if os.path.isdir(f"{base}/{case}") else []
        if reps:
            points[case] = [protect_point(f"{base}/{case}/{r}", meta) for r in reps]
    agg = aggregate(points, ["units_s", "hardirq_pct", "intr_s", "timer_s", "iops"])
    text = {"alone": "cpu_spin alone", "off": "with fio, moderation off",
            "hardirq": f"with fio, hardirq_percent {meta['protect_percent']} "
                       f"(delay_us {meta['max_delay_us']})"}
    rows = [[text[c], cell(a["units_s"], "{:.0f}"), cell(a["hardirq_pct"], "{:.1f}"),
             cell(a["intr_s"], "{:.0f}"), cell(a["timer_s"], "{:.0f}"),
             cell(a["iops"], "{:.0f}")]
            for c, a in agg.items()]
    out = md_table(["CPU 0", "cpu_spin units/s", "CPU 0 hardirq %",
                    "disk interrupts/s", "of which timers/s", "IOPS"], rows)
    if all(c in agg for c in PROTECT_CASES):
        al, off, h = (agg[c] for c in PROTECT_CASES)
        out += (f"\n- cpu_spin with I/O: {med_ratio(off, al, 'units_s'):.2f} of alone "
                f"with moderation off, {med_ratio(h, al, 'units_s'):.2f} with "
                f"hardirq_percent ({med_ratio(h, off, 'units_s'):.2f}x); CPU 0 hardirq "
                f"{off['hardirq_pct']['median']:.1f}% -> {h['hardirq_pct']['median']:.1f}% "
                f"(target {meta['protect_percent']}%); IOPS "
                f"{med_ratio(h, off, 'iops'):.2f} of off\n")
    return {c: a for c, a in agg.items()}, out


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


# ---------------------------------------------------------------- GSIM flood

FLOOD_METRICS = ["rung_s", "intr_s", "runs_s", "timer_s", "replay_s", "held_s",
                 "empty_s", "hardirq_pct", "spin_s", "delay_us", "window_us",
                 "p50_us", "p99_us", "ping_lost"]
FLOOD_WINDOW_METRICS = FLOOD_METRICS[:-3]

# What a window cost in interrupts (the held arrival that masks the
# source, the timer's), so the arrivals per window at which fixed mode
# breaks even: before the series' section 3, and after it
WINDOW_COST_BEFORE = 3
WINDOW_COST_AFTER = 2
# adaptive within this share of a reachable target
TARGET_TOLERANCE = 0.10


def flood_window(path):
    """The rates of one window of the flood (measure in flood.sh), per
    second of the guest's clock."""
    w = load_json(path)
    d = {k: w["end"][k] - w["start"][k] for k in w["start"]}
    secs = d["guest_us"] / 1e6
    spin = w.get("spin") or {}
    return {
        "rung_s": d["rung"] / secs,
        # What the CPUs took: handler runs, less those GSIM's timer ran
        # (no interrupt of their own), plus arrivals while held back and
        # the timer expiries
        "intr_s": (d["runs"] - d["handled"] + d["held"] + d["windows"]) / secs,
        "runs_s": d["runs"] / secs,
        "timer_s": d["windows"] / secs,
        # handler runs not raised by the device: replays at the release
        # and runs by the timer
        "replay_s": (d["replayed"] + d["handled"]) / secs,
        "held_s": d["held"] / secs,
        "empty_s": d["empty"] / secs,
        "hardirq_pct": 100 * d["irq_ticks"] / d["cpu_ticks"] if d["cpu_ticks"] else NAN,
        "spin_s": spin.get("loops_s") or NAN,
        "delay_us": w["end"]["delay_ns"] / 1e3,
        "delay_start_us": w["start"]["delay_ns"] / 1e3,
        # delay plus the timer's latency
        "window_us": d["window_ns"] / d["windows"] / 1e3 if d["windows"] else NAN,
    }


def flood_point(point, meta):
    out = flood_window(f"{point}/window.json")
    ping = load_json(f"{point}/ping.json")
    out.update(p50_us=ping["p50_us"], p99_us=ping["p99_us"], ping_lost=ping["lost"])
    return out


def flood_runs(base, name):
    """[window rates] of BASE/REP/NAME over the reps there."""
    reps = sorted(os.listdir(base), key=int) if os.path.isdir(base) else []
    return [flood_window(f"{base}/{r}/{name}") for r in reps
            if os.path.exists(f"{base}/{r}/{name}")]


def flood_collect(raw):
    meta = load_json(f"{raw}/meta.json")
    modes, rates = meta["modes"].split(), meta["rates"].split()
    points = collect_points(raw, modes, rates, flood_point, meta)
    alone = flood_runs(f"{raw}/alone", "window.json")
    drop = {}
    for mode in ("off", "adaptive"):
        for name in ("first", "later"):
            runs = flood_runs(f"{raw}/drop/{mode}", f"{name}.json")
            if runs:
                drop[(mode, name)] = runs
    return meta, modes, rates, points, alone, drop


def flood_mode_text(mode, meta=None):
    """A mode's name in the table (with META, adaptive's target too)."""
    if mode.startswith("fixed"):
        return f"fixed {mode[len('fixed'):]} us"
    if mode == "adaptive" and meta:
        return f"adaptive, target {meta['target']}/s"
    return mode


def rate_cell(s):
    """A rate's median and [min-max] of the runs, per second."""
    return f"{s['median']:.0f}/s [{s['min']:.0f}–{s['max']:.0f}]"


def flood_table(meta, modes, rates, agg):
    rows = []
    for rate in rates:
        for mode in modes:
            a = agg.get((mode, rate))
            if not a:
                continue
            rows.append([rate, flood_mode_text(mode, meta), cell(a["rung_s"], "{:.0f}"),
                         cell(a["intr_s"], "{:.0f}"), cell(a["timer_s"], "{:.0f}"),
                         cell(a["replay_s"], "{:.0f}"), cell(a["held_s"], "{:.0f}"),
                         cell(a["hardirq_pct"], "{:.1f}"), cell(a["p50_us"], "{:.0f}"),
                         cell(a["p99_us"], "{:.0f}"), cell(a["spin_s"], "{:.0f}"),
                         # not updated while moderation is off
                         "–" if mode == "off" else cell(a["delay_us"], "{:.0f}")])
    return md_table(["offered/s", "mode", "rung/s", "interrupts/s", "timers/s",
                     "replays/s", "held back/s", f"CPU {meta['flood_cpu']} hardirq %",
                     "ping p50 (us)", "ping p99 (us)", "spin loops/s",
                     "delay (us)"], rows)


def break_even(modes, rates, agg, mode):
    """The lowest offered rate at which MODE counts fewer interrupts than
    off (medians), and the rung below it; None where none does."""
    below = None
    for rate in rates:
        m, o = agg.get((mode, rate)), agg.get(("off", rate))
        if not (m and o):
            continue
        if m["intr_s"]["median"] < o["intr_s"]["median"]:
            return rate, below
        below = rate
    return None


def flood_target_lines(meta, rates, agg):
    target, peak = meta["target"], str(meta["peak_offered"])
    if not meta["reachable"]:
        a, o = agg.get(("adaptive", peak)), agg.get(("off", peak))
        line = (f"- no target below off is reachable: in the calibration, fixed "
                f"{meta['max_delay_us']} us counted {meta['floor_rate']}/s at the "
                f"peak ({meta['peak_offered']}/s offered) against "
                f"{meta['peak_taken']}/s off; adaptive's target {target}/s lies "
                "above off")
        if a and o:
            line += (f", and it took {a['intr_s']['median']:.0f}/s = "
                     f"{med_ratio(a, o, 'intr_s'):.2f} of off there")
        return [line]
    lines, light = [], []
    for rate in rates:
        a, o = agg.get(("adaptive", rate)), agg.get(("off", rate))
        if not (a and o):
            continue
        if o["intr_s"]["median"] <= target:
            light.append(f"{rate}/s {med_ratio(a, o, 'intr_s'):.2f}")
            continue
        got = a["intr_s"]["median"] / target
        lines.append(f"- offered {rate}/s: adaptive {a['intr_s']['median']:.0f}/s "
                     f"= {got:.2f} of the target {target}/s (off "
                     f"{o['intr_s']['median']:.0f}/s), "
                     f"{'within' if abs(got - 1) <= TARGET_TOLERANCE else 'not within'} "
                     f"{TARGET_TOLERANCE:.0%}; delay {a['delay_us']['median']:.0f} us")
    if light:
        lines.append("- where off takes no more than the target, adaptive/off "
                     "interrupts: " + ", ".join(light))
    return lines


def flood_drop_lines(meta, drop):
    agg = aggregate(drop, FLOOD_WINDOW_METRICS + ["delay_start_us"])
    lines = []
    for name, what in (("first", "in the second after the drop"),
                       ("later", f"in the {meta['drop_later_secs']} s after that")):
        a, o = agg.get(("adaptive", name)), agg.get(("off", name))
        if not (a and o):
            continue
        r = med_ratio(a, o, "intr_s")
        if not (a["timer_s"]["median"] or a["held_s"]["median"]):
            # Nothing moderated: a difference from off is the load's noise
            verdict = "no window, nothing held back: moderation off"
        else:
            verdict = "above off" if r > 1 else "not above off"
        lines.append(f"- load drop ({meta['peak_offered']}/s offered to "
                     f"{meta['drop_rate']}/s), {what}: adaptive "
                     f"{rate_cell(a['intr_s'])} against off "
                     f"{rate_cell(o['intr_s'])} = {r:.2f} of off "
                     f"({verdict}), timers "
                     f"{a['timer_s']['median']:.0f}/s, held back "
                     f"{a['held_s']['median']:.0f}/s" +
                     (f"; adaptive's delay at the drop "
                      f"{a['delay_start_us']['median']:.0f} us" if name == "first" else ""))
    return {f"{m} {n}": v for (m, n), v in agg.items()}, lines


def flood_break_even_lines(meta, modes, rates, agg):
    lines = []
    for mode in modes:
        if not mode.startswith("fixed"):
            continue
        delay = int(mode[len("fixed"):])
        # NaN where a point had no window
        windows = [agg[(mode, r)]["window_us"]["median"] for r in rates
                   if (mode, r) in agg and agg[(mode, r)]["window_us"]["median"] > 0]
        model = (f"model: {WINDOW_COST_BEFORE * 1e6 / delay:.0f}/s before section 3 "
                 f"(a window cost {WINDOW_COST_BEFORE} interrupts, so it paid from "
                 f"{WINDOW_COST_BEFORE} arrivals per window), "
                 f"{WINDOW_COST_AFTER * 1e6 / delay:.0f}/s after it (cost "
                 f"{WINDOW_COST_AFTER})")
        if windows:
            w = statistics.median(windows)
            model += (f"; with the measured mean window of {w:.0f} us (the delay "
                      f"plus the timer's latency) {WINDOW_COST_BEFORE * 1e6 / w:.0f}/s "
                      f"before, {WINDOW_COST_AFTER * 1e6 / w:.0f}/s after")
        found = break_even(modes, rates, agg, mode)
        if found:
            rate, below = found
            off = agg[("off", rate)]["intr_s"]["median"]
            measured = (f"measured: from {rate}/s offered (off takes {off:.0f}/s "
                        f"there, fixed {agg[(mode, rate)]['intr_s']['median']:.0f}/s)"
                        + (f", not yet at {below}/s" if below else
                           ", the lowest rate offered"))
        else:
            measured = (f"measured: fixed {delay} us counts no fewer interrupts "
                        f"than off at any offered rate up to {rates[-1]}/s")
        lines.append(f"- break-even of fixed {delay} us, {measured}; {model}")
    return lines


def flood_summary(meta, modes, rates, agg, alone, drop):
    lines = flood_target_lines(meta, rates, agg)
    drop_agg, drop_lines = flood_drop_lines(meta, drop)
    lines += drop_lines + flood_break_even_lines(meta, modes, rates, agg)
    peak = rates[-1]
    if alone:
        al = aggregate({"alone": alone}, ["spin_s", "hardirq_pct"])["alone"]
        parts = [f"{flood_mode_text(m)} {ratio(agg[(m, peak)]['spin_s']['median'], al['spin_s']['median']):.2f}"
                 for m in modes if (m, peak) in agg]
        lines.append(f"- spin at {peak}/s offered, of its {al['spin_s']['median']:.0f} "
                     "loops/s without the flood: " + ", ".join(parts))
    o = agg.get(("off", peak))
    if o:
        parts = [f"{flood_mode_text(m)} {med_ratio(agg[(m, peak)], o, 'p99_us'):.2f}"
                 for m in modes if m != "off" and (m, peak) in agg]
        lines.append(f"- ping p99 at {peak}/s offered, of off's "
                     f"{o['p99_us']['median']:.0f} us: " + ", ".join(parts))
    lost = sum(run for (m, r), a in agg.items() for run in a["ping_lost"]["runs"])
    if lost:
        lines.append(f"- pings lost (no event within 100 ms): {lost:.0f}")
    return drop_agg, "\n".join(lines) + "\n"


def flood_chart(path, meta, modes, rates, agg, alone, plt):
    fig, axes = plt.subplots(2, 2, figsize=(13, 9))
    xs = [int(r) for r in rates]
    metrics = (("intr_s", "interrupts/s the CPU took"),
               ("hardirq_pct", f"CPU {meta['flood_cpu']} hardirq %"),
               ("p99_us", "ping p99, doorbell to event (us)"),
               ("spin_s", f"spin loops/s on CPU {meta['flood_cpu']}"))
    for mode in modes:
        for ax, (metric, _) in zip(axes.flat, metrics):
            spreads = [agg.get((mode, r), {}).get(metric) for r in rates]
            med = [s["median"] if s else NAN for s in spreads]
            err = [[s["median"] - s["min"] if s else 0 for s in spreads],
                   [s["max"] - s["median"] if s else 0 for s in spreads]]
            ax.errorbar(xs, med, yerr=err, marker="o", capsize=2,
                        label=flood_mode_text(mode, meta))
    axes[0, 0].axhline(meta["target"], color="black", linestyle=":",
                       label="adaptive target")
    axes[0, 0].plot(xs, xs, color="grey", linestyle="--", linewidth=0.8,
                    label="offered")
    if alone:
        axes[1, 1].axhline(statistics.median(run["spin_s"] for run in alone),
                           color="black", linestyle=":", label="without the flood")
    for ax, (_, title) in zip(axes.flat, metrics):
        ax.set_xscale("log")
        ax.set_xticks(xs)
        ax.set_xticklabels(rates)
        ax.minorticks_off()
        ax.set_xlabel("offered doorbells/s, one CPU")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=8)
    axes[1, 1].legend(fontsize=8)
    fig.suptitle("GSIM flood: ivshmem-doorbell MSI-X vector on one vCPU, "
                 f"medians of {meta['reps']} runs (bars: min-max)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def flood_section(raw, results, plt):
    """The flood's table, chart and README text."""
    meta, modes, rates, points, alone, drop = flood_collect(raw)
    agg = aggregate(points, FLOOD_METRICS)
    table = flood_table(meta, modes, rates, agg)
    drop_agg, summary = flood_summary(meta, modes, rates, agg, alone, drop)
    with open(f"{results}/flood.md", "w", encoding="utf-8") as f:
        f.write(table)
    flood_chart(f"{results}/flood.png", meta, modes, rates, agg, alone, plt)
    data = {"meta": meta, "points": {f"{m} {r}": v for (m, r), v in agg.items()},
            "drop": drop_agg}
    if alone:
        data["alone"] = aggregate({"alone": alone}, FLOOD_WINDOW_METRICS)["alone"]
    cpu = meta["flood_cpu"]
    text = ["### GSIM flood", "",
            "QEMU's ivshmem-doorbell device, its MSI-X vectors taken through "
            "vfio-pci (no-IOMMU) by the irq_moderation selftest's `flood_guest`; "
            f"the host's `ivshmem_flood` rings vector 0 at the offered rate, "
            f"all vectors target CPU {cpu}. {meta['secs']} s per run, "
            f"{meta['reps']} runs, modes and rates interleaved. Calibration with "
            f"moderation off: the peak is {meta['peak_taken']}/s taken at "
            f"{meta['peak_offered']}/s offered (of {meta['calibrate_rates'].replace(' ', ', ')}/s), "
            "the top of the ladder; the adaptive target (delay_us "
            f"{meta['max_delay_us']}, no hardirq_percent) lies halfway between "
            f"that and fixed {meta['max_delay_us']} us's count there "
            f"({meta['floor_rate']}/s). rung/s: doorbells the host rang; "
            "interrupts/s: what the CPU took, the vectors' handler runs less "
            "those GSIM's timer ran, plus arrivals while held back and timer "
            "expiries; timers/s: those expiries; replays/s: handler runs the "
            "device did not raise (replays at the release and runs by the "
            "timer); held back/s: arrivals while held back. hardirq % and "
            f"spin: CPU {cpu}'s hard interrupt time and the loops/s of "
            f"`flood_guest spin` on CPU {cpu}, over the window. ping: "
            f"{meta['ping_count']} doorbells the guest rings on vector "
            f"{meta['ping_vector']}, {meta['ping_gap_us']} us apart, each timed "
            "to its eventfd's event, after the window with the flood still on: "
            "a sparse source on the flooded CPU, whose own arrival is never "
            f"held back. delay: CPU {cpu}'s delay_ns in soft_moderation/stats "
            "at the end of the window. The load drop: the flood at the peak, "
            "then at half the target, with moderation off and adaptive in turn; "
            "the break-even: the lowest offered rate at which fixed mode counts "
            "fewer interrupts than off, side by side in this run.", "",
            table, "Ratios (medians):", "", summary,
            "![GSIM flood](flood.png)", ""]
    return data, text


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
    for part in SUSPEND_PARTS:
        if os.path.exists(f"{args.raw}/{part['dir']}/meta.json"):
            data[part["dir"]], text = suspend_section(f"{args.raw}/{part['dir']}",
                                                      args.results, part, plt)
            readme += text
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
        protect, protect_text = protect_section(f"{args.raw}/gsim", meta)
        if protect:
            data["gsim"]["protect"] = protect
        readme += ["### GSIM", "",
                   "fio randread 4k, 2 jobs (one per CPU) on a two-queue null-co "
                   f"virtio-blk disk, {meta['secs']} s per run, {meta['reps']} runs. "
                   f"Adaptive target: {meta['target_percent']}% of the highest off-mode "
                   "rate over the iodepths; the second adaptive row's target is "
                   f"{meta['above_target'] // max(meta['flood_off_rate'], 1)}x that rate, "
                   "above every load, and the third's lies halfway between the "
                   f"rate at the flood (iodepth {meta['flood_depth']}, the highest "
                   "off-mode rate) off and its rate, counted as below, with the "
                   f"largest fixed delay ({meta['max_delay_us']} us): a target "
                   "the flood can be held to when that rate is below off. "
                   "interrupts/s: what the CPUs took for the "
                   "disk, its vector's count plus arrivals while held back plus "
                   "GSIM's timers; held back/s: arrivals while held back; a target "
                   "is reachable at an iodepth where fixed mode at adaptive's "
                   "largest delay gets below it. "
                   "hardirq us/intr: hardirq time of all CPUs "
                   "per disk interrupt (an interrupt completes more I/Os at deeper "
                   "queues, so compare it within one iodepth). delay: the mean over the "
                   "CPUs of delay_ns in soft_moderation/stats at the end of the "
                   "window (adaptive changes it by up to 1/8 per 5 ms epoch).", "",
                   table, "Ratios (medians):", "", summary,
                   "![GSIM](gsim.png)", ""]
        if protect:
            readme += ["hardirq_percent protecting a CPU-bound program: `cpu_spin` "
                       f"on CPU 0, alone and with one fio job (iodepth "
                       f"{meta['protect_depth']}) whose queue interrupts CPU 0; "
                       f"hardirq_percent is {meta['protect_percent']}, half of CPU 0's "
                       f"hardirq time with moderation off ({meta['protect_share']}%), "
                       "with no rate target.", "", protect_text]
    if os.path.exists(f"{args.raw}/flood/meta.json"):
        data["flood"], text = flood_section(f"{args.raw}/flood", args.results, plt)
        readme += text
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
        for name in ("suspend.png", "memcached.png", "gsim.png", "flood.png"):
            text = text.replace(f"]({name})", f"]({rel}/{name})")
        splice_readme(args.readme, text)


if __name__ == "__main__":
    main()
