#!/usr/bin/env python3
"""Plots of a scripts/bench.sh run, from its JSON (vsock-perf --json), into the same directory.

    plot_bench.py DIR      reads DIR/{payload,wait,burst,native,rings,scale,isolation}.json, writes DIR/*.png

Every point is the median over the repetitions of one (variant, case); failed cases are left
out. Needs Debian's python3-matplotlib.
"""
import json
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def medians(doc, key, **match):
    """{(variant, payload, burst, conns, direction): median of key} over ok cases."""
    groups = {}
    for c in doc["cases"]:
        if not c["ok"] or c.get(key) is None:
            continue
        if any(c[k] != v for k, v in match.items()):
            continue
        k = (c["variant"], c["payload"], c["burst"], c["conns"], c["direction"])
        groups.setdefault(k, []).append(c[key])
    return {k: statistics.median(v) for k, v in groups.items()}


def throughput(doc, out):
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, d in zip(axes, ("g2h", "h2g")):
        m = medians(doc, "gbps", direction=d)
        for v in doc["config"]["variants"]:
            pts = sorted((k[1], g) for k, g in m.items() if k[0] == v)
            if pts:
                ax.plot([p for p, _ in pts], [g for _, g in pts], "o-", label=v)
        refs = doc.get("refs", {}).get("by_payload", [])
        if refs:
            ax.plot([r["payload"] for r in refs], [r["unix_gbps"] for r in refs], "k--",
                    label="raw Unix stream")
        ax.set_xscale("log", base=2)
        ax.set_title({"g2h": "guest -> host", "h2g": "host -> guest"}[d])
        ax.set_xlabel("payload (bytes)")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("Gbit/s (median)")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(out)


def rtt(doc, out):
    fig, ax = plt.subplots(figsize=(7, 4.2))
    labels, data = [], []
    for v in doc["config"]["variants"]:
        for c in sorted({c["payload"] for c in doc["cases"] if c["direction"] == "rr"}):
            sel = [x for x in doc["cases"]
                   if x["ok"] and x["direction"] == "rr" and x["variant"] == v and x["payload"] == c]
            if not sel:
                continue
            med = lambda k: statistics.median(x[k] for x in sel)  # noqa: E731
            labels.append(f"{v}\n{c} B")
            data.append((med("rtt_p50_us"), med("rtt_p99_us"), med("rtt_p999_us")))
    xs = range(len(labels))
    for i, (name, mark) in enumerate((("p50", "o"), ("p99", "s"), ("p99.9", "^"))):
        ax.plot(xs, [d[i] for d in data], mark, label=name)
    ax.set_xticks(list(xs))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("round trip (us), median over repetitions")
    ax.set_title("ping-pong host -> guest -> host")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out)


def burst(doc, out):
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for d in ("g2h", "h2g"):
        m = medians(doc, "mpps", direction=d)
        pts = sorted((k[2], g) for k, g in m.items())
        if pts:
            ax.plot([p for p, _ in pts], [g for _, g in pts], "o-", label=f"{d} Mpps")
    ax2 = ax.twinx()
    for d in ("g2h", "h2g"):
        m = medians(doc, "cycles_per_packet", direction=d)
        pts = sorted((k[2], g) for k, g in m.items())
        if pts:
            ax2.plot([p for p, _ in pts], [g for _, g in pts], "x:", label=f"{d} cycles/packet")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("burst (packets per queue per poll), 64 B payload")
    ax.set_ylabel("Mpps (median)")
    ax2.set_ylabel("backend cycles per packet")
    ax.grid(True, alpha=0.3)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=8)
    fig.tight_layout()
    fig.savefig(out)


def paired_ratios(doc):
    """[(label, [second/first of each repetition])]: rates, or p50 RTT for rr."""
    v = doc["config"]["variants"][:2]
    by = {}
    for c in doc["cases"]:
        if c["ok"] and c["variant"] in v:
            key = "rtt_p50_us" if c["direction"] == "rr" else "mpps"
            by[(c["direction"], c["payload"], c["rep"], c["variant"])] = c[key]
    out = []
    for d in ("g2h", "h2g", "rr"):
        for p in sorted({k[1] for k in by if k[0] == d}):
            reps = sorted({k[2] for k in by if k[:2] == (d, p)})
            r = [by[(d, p, n, v[1])] / by[(d, p, n, v[0])] for n in reps
                 if (d, p, n, v[0]) in by and (d, p, n, v[1]) in by and by[(d, p, n, v[0])]]
            if r:
                out.append((f"{d}\n{p} B", r))
    return out


def side_by_side(doc, out, suptitle, pairs=False):
    """Alternated variants side by side: rate each way and ping-pong RTT, by payload; with
    pairs, a fourth panel has the second variant over the first in each repetition."""
    fig, axes = plt.subplots(1, 4 if pairs else 3, figsize=(18 if pairs else 14, 4.2))
    panels = (("g2h", "gbps", "guest -> host, Gbit/s"), ("h2g", "gbps", "host -> guest, Gbit/s"),
              ("rr", "rtt_p50_us", "ping-pong p50 RTT, us"))
    for ax, (d, key, title) in zip(axes, panels):
        m = medians(doc, key, direction=d)
        for v in doc["config"]["variants"]:
            pts = sorted((k[1], g) for k, g in m.items() if k[0] == v)
            if pts:
                ax.plot([p for p, _ in pts], [g for _, g in pts], "o-", label=v)
        ax.set_xscale("log", base=2)
        if d == "rr":
            ax.set_yscale("log")
        ax.set_title(title)
        ax.set_xlabel("payload (bytes)")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("median over repetitions")
    axes[0].legend()
    if pairs:
        v = doc["config"]["variants"]
        ax = axes[3]
        ratios = paired_ratios(doc)
        for i, (label, r) in enumerate(ratios):
            ax.plot([i] * len(r), r, "o", color="C1", alpha=0.5)
            ax.plot([i], [statistics.median(r)], "_", color="k", markersize=18)
        ax.axhline(1, color="k", linewidth=0.8)
        ax.set_xticks(range(len(ratios)))
        ax.set_xticklabels([lab for lab, _ in ratios], fontsize=7)
        ax.set_yscale("log")
        ax.set_title(f"{v[1]}/{v[0]} per repetition (rate; rr: RTT)")
        ax.grid(True, alpha=0.3)
    fig.suptitle(suptitle)
    fig.tight_layout()
    fig.savefig(out)


def native(doc, out):
    side_by_side(doc, out,
                 "host end: Unix-socket endpoint (uds) against the native poll-mode API")


def rings(doc, out):
    side_by_side(doc, out, "ring layout the guest asks for: split against packed (dots: each "
                 "repetition's pair, bar: their median)", pairs=True)


def scale(doc, out):
    """The scale part: VM 3's round trip and the worker's idle cost against the VM count."""
    recs = [c for c in doc["cases"] if c.get("part") == "scale" and c["ok"]]

    def med(key):
        by = {}
        for c in recs:
            if c.get(key) is not None:
                by.setdefault(c["vms"], []).append(c[key])
        pts = sorted((n, statistics.median(v)) for n, v in by.items())
        return [n for n, _ in pts], [v for _, v in pts]

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for key, mark, label in (("rtt_p50_us", "o-", "p50"), ("rtt_p99_us", "s:", "p99")):
        xs, ys = med(key)
        ax.plot(xs, ys, mark, label=label)
    base = [c for c in recs if c["vms"] == c["base_vms"]]
    if base:
        b = statistics.median(c["rtt_p50_us"] for c in base)
        ax.axhline(2 * b, color="k", linestyle="--", linewidth=0.8,
                   label=f"target: 2x the {base[0]['vms']}-VM p50")
    ax.set_yscale("log")
    ax.set_ylabel("VM 3's 64 B round trip (us)")
    ax.set_title("the active VM, the others idle")
    xs, ys = med("idle_ns_per_vm")
    ax2.plot(xs, ys, "o-", label="ns per idle VM (slope from the base count)")
    rounds = {}
    for c in recs:
        rounds.setdefault(c["vms"], []).append(c["idle_round_ns"] / c["vms"])
    pts = sorted((n, statistics.median(v)) for n, v in rounds.items())
    ax2.plot([n for n, _ in pts], [v for _, v in pts], "x:", label="idle round ns / VMs")
    ax2.axhline(50, color="k", linestyle="--", linewidth=0.8, label="target: 50 ns")
    ax2.set_ylim(bottom=0)
    ax2.set_ylabel("worker ns per VM per idle round")
    ax2.set_title("the worker with every VM idle")
    for a in (ax, ax2):
        a.set_xscale("log", base=2)
        a.set_xlabel("VMs on one worker lcore")
        a.grid(True, alpha=0.3)
        a.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out)


def isolation(doc, out):
    """The isolation part: VM 5's p50 in each quiet and flood slice, in the order they ran."""
    recs = {c["condition"]: c for c in doc["cases"] if c.get("part") == "isolation" and c["ok"]}
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for cond, mark in (("quiet", "o-"), ("flood", "s-")):
        c = recs.get(cond)
        if c is None:
            continue
        ys = c.get("slice_p50_us") or []
        ax.plot(range(1, len(ys) + 1), ys, mark,
                label=f"{cond}: p50 {c['rtt_p50_us']:.1f} us, p99 {c['rtt_p99_us']:.1f} us")
    if "quiet" in recs:
        ax.axhline(2 * recs["quiet"]["rtt_p50_us"], color="k", linestyle="--", linewidth=0.8,
                   label="target: p50 within 2x quiet")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("slice (quiet and flood alternated)")
    ax.set_ylabel("VM 5's 64 B round trip, p50 of the slice (us)")
    ax.set_title("a neighbour's round trips while VM 3 streams 64 KiB on the same lcore")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out)


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "build/bench"
    made = []
    for name, fn in (("payload", throughput), ("wait", rtt), ("burst", burst),
                     ("native", native), ("rings", rings), ("scale", scale),
                     ("isolation", isolation)):
        doc = load(os.path.join(d, name + ".json"))
        if doc is None:
            continue
        out = os.path.join(d, {"payload": "throughput.png", "wait": "rtt.png",
                               "burst": "burst.png", "native": "native.png",
                               "rings": "rings.png", "scale": "scale.png",
                               "isolation": "isolation.png"}[name])
        fn(doc, out)
        made.append(out)
    doc = load(os.path.join(d, "payload.json"))
    if doc is not None and any(c["direction"] == "rr" for c in doc["cases"]):
        out = os.path.join(d, "rtt-payload.png")
        rtt(doc, out)
        made.append(out)
    print("plots: " + (", ".join(made) if made else "none (no JSON found)"))


if __name__ == "__main__":
    main()
