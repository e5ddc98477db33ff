#!/usr/bin/env python3
"""The targets of the benchmark against one scripts/bench.sh run: DIR/summary.md.

    bench_summary.py DIR    reads DIR/<part>.json (vsock-perf --json), writes DIR/summary.md

One Markdown table, `target | measured | limit measured in the same run | met?`, a line per
target (TARGETS below: each a function of the loaded JSON files). A part that did not run
(its JSON missing) says "not run"; a case that failed or is absent says "no data". Figures
are medians over the repetitions of ok cases, ratios the median of each repetition's pair
where two things ran alternated. Below it, how far apart the two CPUs were in each part (the
cache-line round trips vsock-perf measures around each backend). Python 3, standard library
only.
"""
import json
import os
import statistics
import sys

PARTS = ("payload", "native", "rings", "irq", "isolation", "callgrind", "callgrind_native",
         "conns", "burst", "ring512", "wait", "scale")
# Callgrind's parts by host end: the app's Unix sockets, the native API in vsock-perf's process.
CALLGRIND = (("uds", "callgrind"), ("native", "callgrind_native"))
RINGS = ("split", "packed")
STREAM = ("g2h", "h2g")


class NotRun(Exception):
    """A part whose JSON is missing."""


class NoData(Exception):
    """The part ran, but without the cases a target needs."""


def load(out):
    docs = {}
    for p in PARTS:
        path = os.path.join(out, p + ".json")
        try:
            with open(path) as f:
                docs[p] = json.load(f)
        except (OSError, ValueError):
            docs[p] = None
    return docs


def doc(docs, part):
    if docs.get(part) is None:
        raise NotRun(part + ".json")
    return docs[part]


def records(d, **match):
    """The ok records of a part whose fields equal @match."""
    return [c for c in d["cases"]
            if c.get("ok") and all(c.get(k) == v for k, v in match.items())]


def med(d, key, **match):
    vals = [c[key] for c in records(d, **match) if c.get(key) is not None]
    if not vals:
        raise NoData("%s %s" % (key, " ".join("%s=%s" % kv for kv in match.items())))
    return statistics.median(vals)


def first_variant(d):
    return d["config"]["variants"][0]


def refs_doc(docs):
    """The first part that measured the reference limits (vsock-perf --refs)."""
    for p in PARTS:
        if (docs.get(p) or {}).get("refs"):
            return docs[p]["refs"]
    raise NoData("the reference limits (--refs)")


def ref(docs, payload, key):
    """A reference limit at @payload bytes."""
    for r in refs_doc(docs)["by_payload"]:
        if r["payload"] == payload and r.get(key):
            return r[key]
    raise NoData("reference %s at %d B" % (key, payload))


def case_name(c):
    name = "%s %s" % (c["direction"], size(c["payload"]))
    if c.get("burst") not in (None, 32):
        name += " burst %d" % c["burst"]
    if c.get("conns") not in (None, 1):
        name += " conns %d" % c["conns"]
    return name


def size(b):
    return "%d KiB" % (b // 1024) if b >= 1024 and b % 1024 == 0 else "%d B" % b


def num(v, digits=0):
    return "{:,.{}f}".format(v, digits)


def by_case(recs, value, fields=("variant", "direction", "payload", "burst", "conns")):
    """[(a record, median of value(record))] per distinct @fields, value None left out."""
    groups = {}
    for c in recs:
        v = value(c)
        if v is not None:
            groups.setdefault(tuple(c.get(f) for f in fields), (c, []))[1].append(v)
    return [(c, statistics.median(v)) for c, v in groups.values()]


# A case ran with the two CPUs near when both its cache-line round trips, measured before its
# backend started and after it stopped, are in the lower of two clusters: the run's round trips
# sorted, the widest step between neighbours, if one is at least GAP times. This machine's host
# moves them between 60-140 ns and 345-440 ns (doc/performance.md), the compute speed the same;
# a run that stayed at one distance has no such step, and every case ran near.
CL = ("cacheline_rtt_ns_before", "cacheline_rtt_ns_after")
GAP = 2


def timed_parts(docs):
    """The parts that ran, but those under callgrind: it runs one thread at a time, and its
    round trips take milliseconds."""
    return [p for p in PARTS if docs.get(p) and not p.startswith("callgrind")]


def near_limit(docs):
    """The largest round trip of the near cluster, ns; None if not measured."""
    vals = sorted(c[k] for p in timed_parts(docs) for c in docs[p]["cases"] for k in CL
                  if c.get(k))
    if not vals:
        return None
    step = max(range(1, len(vals)), key=lambda i: vals[i] / vals[i - 1], default=None)
    return vals[step - 1] if step and vals[step] >= GAP * vals[step - 1] else vals[-1]


def near(c, limit):
    return all(c.get(k) and c[k] <= limit for k in CL)


def distances(docs, limit):
    """Per part: the cache-line round trips' range, and its backends that ran far (beyond
    @limit, near_limit()'s)."""
    if limit is None:
        return "not measured"
    got = []
    for p in timed_parts(docs):
        backends = {(c["variant"], c["rep"]): c for c in docs[p]["cases"] if c.get(CL[0])}
        if not backends:
            continue
        vals = [c[k] for c in backends.values() for k in CL if c.get(k)]
        far = sum(1 for c in backends.values() if not near(c, limit))
        got.append("%s %.0f-%.0f%s" % (p, min(vals), max(vals),
                                       " (far: %d of %d backends)" % (far, len(backends))
                                       if far else ""))
    return "; ".join(got)


# ---- the targets: each returns (measured, limit measured in the same run, met) ----

def cycles_per_packet(docs, direction, most, hosts=("uds", "native")):
    d = doc(docs, "native")
    got = [(h, med(d, "cycles_per_packet", host=h, direction=direction, payload=64))
           for h in hosts]
    return (", ".join("%s %s" % (h, num(v)) for h, v in got), "-",
            all(v <= most for _, v in got))


def callgrind_64(docs, part, key):
    """[(direction, ring, median of @key)] of a callgrind part at 64 B, each way and ring."""
    d = doc(docs, part)
    return [(dr, rg, med(d, key, direction=dr, ring=rg, payload=64))
            for dr in STREAM for rg in RINGS]


def callgrind_ir(docs, most):
    """The target is the Unix-socket host end's; the native end's counts are shown beside."""
    got = callgrind_64(docs, "callgrind", "instructions_per_packet")
    measured = "; ".join("%s %s %s" % (dr, rg, num(v)) for dr, rg, v in got)
    try:
        measured += " (native host end: %s)" % "; ".join(
            "%s %s %s" % (dr, rg, num(v))
            for dr, rg, v in callgrind_64(docs, "callgrind_native", "instructions_per_packet"))
    except (NotRun, NoData):
        pass
    return measured, "-", all(v <= most for _, _, v in got)


def callgrind_ring(docs, ratio_most, most):
    """The virtqueue code alone, both host ends: packed over split per direction, and each."""
    measured, met = [], True
    for host, part in CALLGRIND:
        got = {(dr, rg): v for dr, rg, v in
               callgrind_64(docs, part, "ring_instructions_per_packet")}
        for dr in STREAM:
            split, packed = got[dr, "split"], got[dr, "packed"]
            measured.append("%s %s split %s packed %s (%sx)" % (
                host, dr, num(split), num(packed), num(packed / split, 2)))
            met &= packed <= ratio_most * split and max(split, packed) <= most
    return "; ".join(measured), "-", met


def native_over_uds(d):
    """Per case, the median over the repetitions of native over uds in the same one (above
    1: native faster; for rr, uds's p50 round trip over native's)."""
    by = {}
    for c in records(d):
        by.setdefault((c["direction"], c["payload"], c["burst"], c["conns"], c["rep"]),
                      {})[c["host"]] = c
    pairs = []
    for pair in by.values():
        n, u = pair.get("native"), pair.get("uds")
        if n and u:
            a, b = ((u.get("rtt_p50_us"), n.get("rtt_p50_us")) if n["direction"] == "rr"
                    else (n.get("mpps"), u.get("mpps")))
            n["_ratio"] = a / b if a and b else None
            pairs.append(n)
    return by_case(pairs, lambda c: c["_ratio"])


def native_never_slower(docs, least):
    ratios = sorted(native_over_uds(doc(docs, "native")), key=lambda cv: cv[1])
    if not ratios:
        raise NoData("uds and native pairs")
    below = [cv for cv in ratios if cv[1] < least]
    shown = ", ".join("%s %.2fx" % (case_name(c), r) for c, r in (below or ratios)[:4])
    return ("worst: %s (%d of %d cases below %gx)" % (shown, len(below), len(ratios), least),
            "uds, alternated with native", not below)


def uds_vs_raw_unix(docs, least):
    d = doc(docs, "payload")
    limit = ref(docs, 65536, "unix_gbps")
    v = first_variant(d)
    got = [(dr, med(d, "gbps", variant=v, direction=dr, payload=65536)) for dr in STREAM]
    return (", ".join("%s %.1f Gbit/s (%.2fx)" % (dr, g, g / limit) for dr, g in got),
            "raw Unix stream %.1f Gbit/s" % limit, all(g >= least * limit for _, g in got))


def native_vs_memcpy(docs, most):
    d = doc(docs, "native")
    hz = d["machine"].get("tsc_hz")
    if not hz:
        raise NoData("the TSC rate, machine.tsc_hz")
    gbps = ref(docs, 65536, "memcpy_gbps")
    memcpy = 65536 * 8 / (gbps * 1e9) * hz
    got = [(dr, med(d, "cycles_per_packet", host="native", direction=dr, payload=65536))
           for dr in STREAM]
    return (", ".join("%s %s cycles (%.2fx)" % (dr, num(v), v / memcpy) for dr, v in got),
            "one 64 KiB memcpy %s cycles (%.0f Gbit/s)" % (num(memcpy), gbps),
            all(v <= most * memcpy for _, v in got))


def native_rr(docs, p50_most, p99_most):
    d = doc(docs, "native")
    p50 = med(d, "rtt_p50_us", host="native", direction="rr", payload=64)
    p99 = med(d, "rtt_p99_us", host="native", direction="rr", payload=64)
    try:
        limit = "cache line round trip %.0f ns" % refs_doc(docs)["cacheline_rtt_ns"]
    except NoData:
        limit = "-"
    return ("p50 %.2f us, p99 %.2f us" % (p50, p99), limit, p50 <= p50_most and p99 <= p99_most)


def uds_rr(docs, most):
    d = doc(docs, "payload")
    case = dict(variant=first_variant(d), direction="rr", payload=64)
    cases = records(d, **case)
    p50 = med(d, "rtt_p50_us", **case)
    # Each repetition beside the floor measured just before it, where vsock-perf did: the
    # floor moves between minutes of one machine as much as the ratio's margin.
    pairs = [(c["rtt_p50_us"], c["floor_rtt_p50_us"]) for c in cases
             if c.get("rtt_p50_us") and c.get("floor_rtt_p50_us")]
    if pairs:
        ratio = statistics.median(a / b for a, b in pairs)
        floor = statistics.median(b for _, b in pairs)
        return ("p50 %.2f us (%.2fx, the median of %d repetitions' ratios)"
                % (p50, ratio, len(pairs)),
                "Unix ping-pong %.2f us (each repetition's own, median)" % floor,
                ratio <= most)
    floor = ref(docs, 64, "unix_rtt_p50_us")
    return ("p50 %.2f us (%.2fx)" % (p50, p50 / floor),
            "Unix ping-pong %.2f us" % floor, p50 <= most * floor)


def busy_share(docs, least, payload=None, only=None):
    """The lowest shares of the stream cases (of @payload bytes, of the parts @only, if given;
    else of every part on QEMU's ring: ring512 has a row of its own)."""
    # Under callgrind the worker runs 50x slower, always busy: its share says nothing.
    parts = [p for p in timed_parts(docs) if p in (only or PARTS) and (only or p != "ring512")]
    if not parts:
        raise NotRun("no part with stream cases")
    cl = near_limit(docs)

    def shares_of(keep):
        return [(p, c, v) for p in parts
                for c, v in by_case((c for c in records(docs[p])
                                     if not c.get("part") and c["direction"] in STREAM and
                                     payload in (None, c["payload"]) and keep(c)),
                                    lambda c: c.get("worker_busy_share"))]

    shares = shares_of(lambda c: True)
    if not shares:
        raise NoData("worker_busy_share in the stream cases")
    shares.sort(key=lambda t: t[2])
    below = [t for t in shares if t[2] < least]
    shown = ", ".join("%s: %s %s %.0f%%" % (p, c["variant"], case_name(c), v * 100)
                      for p, c, v in (below or shares)[:4])
    text = ("lowest: %s (%d of %d stream cases below %.0f%%)"
            % (shown, len(below), len(shares), least * 100))
    if cl is not None:
        # The same cases again, each the median of its repetitions that ran with the CPUs near.
        shares = shares_of(lambda c: near(c, cl))
        text += ("; with the CPUs near, %d of %d below"
                 % (sum(1 for t in shares if t[2] < least), len(shares)))
    return text, "-", not below


def isolation(docs, p50_most, p99_most):
    d = doc(docs, "isolation")
    q = records(d, part="isolation", condition="quiet")
    f = records(d, part="isolation", condition="flood")
    if not q or not f:
        raise NoData("isolation records")
    q, f = q[0], f[0]
    return ("flood p50 %.2f us (%.2fx quiet), p99 %.2f us"
            % (f["rtt_p50_us"], f["p50_over_quiet"], f["rtt_p99_us"]),
            "quiet p50 %.2f us, p99 %.2f us" % (q["rtt_p50_us"], q["rtt_p99_us"]),
            f["p50_over_quiet"] <= p50_most and f["rtt_p99_us"] < p99_most)


def scale(docs, idle_most, vms, p50_most):
    d = doc(docs, "scale")
    counts = sorted({c["vms"] for c in records(d, part="scale")})
    if not counts:
        raise NoData("scale records")
    base, top = counts[0], (vms if vms in counts else counts[-1])
    idle = [(n, med(d, "idle_ns_per_vm", part="scale", vms=n)) for n in counts[1:]]
    worst = max(v for _, v in idle) if idle else None
    ratio = med(d, "p50_over_base", part="scale", vms=top)
    return ("idle %s ns/VM/round (worst of %s VMs); active p50 at %d VMs %.2fx"
            % (num(worst, 1) if idle else "?", ", ".join(str(n) for n, _ in idle), top, ratio),
            "active p50 with %d VM %.2f us" % (base, med(d, "rtt_p50_us", part="scale",
                                                         vms=base)),
            idle and worst <= idle_most and ratio <= p50_most and top == vms)


def conns(docs, most):
    d = doc(docs, "conns")
    v = first_variant(d)
    many = max(c["conns"] for c in records(d))
    got = []
    for dr in ("g2h", "h2g", "rr"):
        try:
            got.append((dr, med(d, "cycles_per_packet", variant=v, direction=dr, conns=many),
                        med(d, "cycles_per_packet", variant=v, direction=dr, conns=1)))
        except NoData:
            pass
    if not got:
        raise NoData("cycles per packet at 1 and %d connections" % many)
    return (", ".join("%s %s at %d (%.2fx)" % (dr, num(m), many, m / o) for dr, m, o in got),
            "at 1: " + ", ".join("%s %s" % (dr, num(o)) for dr, _, o in got),
            many == 1023 and all(m <= most * o for _, m, o in got))


def irq(docs, most):
    d = doc(docs, "irq")
    got = by_case((c for c in records(d) if c["direction"] in STREAM),
                  lambda c: c.get("guest_interrupts_per_packet"))
    if not got:
        raise NoData("guest interrupts per packet")
    return (", ".join("%s %.3f" % (case_name(c), v) for c, v in got),
            "1/burst: " + ", ".join("%.3f" % (1 / b) for b in sorted({c["burst"]
                                                                     for c, _ in got})),
            all(v <= most / c["burst"] for c, v in got))


# The issue's targets: the text, formatted with the limits the function checks.
TARGETS = [
    ("g2h 64 B: busy cycles per packet at most {most}, uds and native", cycles_per_packet,
     dict(direction="g2h", most=260)),
    ("h2g 64 B: busy cycles per packet at most {most}, uds and native", cycles_per_packet,
     dict(direction="h2g", most=170)),
    ("h2g 64 B native: busy cycles per packet at most {most}", cycles_per_packet,
     dict(direction="h2g", most=150, hosts=("native",))),
    ("callgrind: at most {most} instructions per packet at 64 B each way, split and packed",
     callgrind_ir, dict(most=300)),
    ("callgrind: the virtqueue code alone at 64 B, packed at most {ratio_most}x split, both at "
     "most {most} instructions per packet", callgrind_ring, dict(ratio_most=1.1, most=120)),
    ("native/uds at least {least}x in every case (rate; rr: p50 round trip)",
     native_never_slower, dict(least=1)),
    ("uds 64 KiB: at least {least}x the raw Unix stream each way", uds_vs_raw_unix,
     dict(least=0.95)),
    ("native 64 KiB: a packet at most {most}x one 64 KiB memcpy (cycles)", native_vs_memcpy,
     dict(most=1.2)),
    ("rr 64 B native: p50 at most {p50_most} us, p99 at most {p99_most} us", native_rr,
     dict(p50_most=1.5, p99_most=3)),
    ("rr 64 B uds: p50 at most {most}x the Unix ping-pong floor", uds_rr, dict(most=1.3)),
    ("the worker's busy share at least {least:.0%} in every stream case", busy_share,
     dict(least=0.9)),
    ("the worker's busy share at least {least:.0%} in every 64 B stream case", busy_share,
     dict(least=0.9, payload=64)),
    ("the same on a 512-entry ring (the issue's row is on QEMU's 128)", busy_share,
     dict(least=0.9, payload=64, only=("ring512",))),
    ("isolation: the neighbour's p50 within {p50_most}x quiet, p99 under {p99_most} us",
     isolation, dict(p50_most=2, p99_most=100)),
    ("scale: at most {idle_most} ns per idle VM per round; the active p50 at {vms} VMs at "
     "most {p50_most}x 1 VM's", scale, dict(idle_most=50, vms=256, p50_most=2)),
    ("conns: cycles per packet at 1023 at most {most}x those at 1", conns, dict(most=1.3)),
    ("--guest-irq: interrupts per packet near 1/burst (at most {most}/burst)", irq,
     dict(most=2)),
]


def summary(docs):
    near_ns = near_limit(docs)
    lines = ["# Benchmark summary", ""]
    d = next((docs[p] for p in PARTS if docs.get(p)), None)
    if d:
        m = d["machine"]
        lines += ["%s, %s CPUs, kernel %s." % (m["cpu"], m["cpus"], m["kernel"]), ""]
    lines += ["| target | measured | limit measured in the same run | met? |",
              "|---|---|---|---|"]
    for text, fn, limits in TARGETS:
        target = text.format(**limits)
        try:
            measured, limit, met = fn(docs, **limits)
            met = "yes" if met else "**no**"
        except NotRun as e:
            measured, limit, met = "not run (%s)" % e, "-", "-"
        except NoData as e:
            measured, limit, met = "no data (%s)" % e, "-", "?"
        lines.append("| %s | %s | %s | %s |" % (target, measured, limit, met))
    lines += ["", "Medians over the repetitions of the cases that passed; busy cycles are the "
              "worker's cycles in rounds that moved packets (record-core-cycles), per packet. "
              "Parts: " + (", ".join(p for p in PARTS if docs.get(p)) or "none") + ".",
              "", "The CPUs' cache-line round trip before and after each backend, ns%s: %s."
              % ("" if near_ns is None else " (near: at most %s, the lower of the run's two "
                 "clusters)" % num(near_ns), distances(docs, near_ns))]
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    text = summary(load(out))
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
