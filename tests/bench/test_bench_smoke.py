#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The benchmark's smoke: vsock-perf run for seconds, then what it must have done, read from
its JSON. Behaviour only, no rate or latency: every case ran and moved bytes that were
verified, the backend's counters moved, per-entry publication stored used->idx once per
packet, the native path made no syscall per packet and gave back every mbuf, the references,
the CPUs' distance around each backend and every record the command line asks for are there;
for the isolation and scale parts, both VMs moved in every slice and every count ran.

Usage: test_bench_smoke.py VSOCK_PERF OPTION... (vsock-perf's options, --json FILE among them)
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "install"))
import tap  # noqa: E402
from tap import ok  # noqa: E402

# Each of the two counter reads around a window may fall between a queue's entry and its
# used->idx store, on each of the two queues: the counts may differ by that much, whatever
# the number of packets in the window.
SKEW = 4
# Syscalls the measurement adds to the client thread's count in a window, at most: the read
# of perf's ack of "enable", the write of "disable" and the poll for its ack, and the few the
# client makes at the window's edges (7 to 11 in all, seen at any load).
MEASURE_SYSCALLS = 16


def numbers(s):
    """A list option of vsock-perf: "64,4k" -> [64, 4096]."""
    out = []
    for w in s.split(","):
        out.append(int(w[:-1], 0) * 1024 if w[-1:] in "kK" else int(w, 0))
    return out


def plan_of(opts):
    """The options the checks need, with vsock-perf's defaults (its --help)."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--json", required=True)
    p.add_argument("--modes", default="g2h,h2g,rr")
    p.add_argument("--payloads", default="64,256,1024,4096,16384,65536")
    p.add_argument("--bursts", default="32")
    p.add_argument("--conns", default="1")
    p.add_argument("--reps", type=int)
    p.add_argument("--vms", default="1,16,64,256")
    p.add_argument("--refs", action="store_true")
    p.add_argument("--isolation", action="store_true")
    p.add_argument("--scale", action="store_true")
    p.add_argument("--syscalls", action="store_true")
    plan, _ = p.parse_known_args(opts)
    if plan.reps is None:
        plan.reps = 10 if plan.isolation else 3
    return plan


def check_cases(doc, plan):
    cfg = doc["config"]
    cases = doc["cases"]
    variants = cfg["variants"]
    for c in cases:
        what = "%s %s %d B burst %d conns %d" % (c["variant"], c["direction"], c["payload"],
                                                 c["burst"], c["conns"])
        ok(c["ok"] and c["bytes"] > 0, "%s: %d bytes verified (%s Mpps)%s" % (
            what, c["bytes"], c["mpps"], "" if c["ok"] else ": " + c["error"]))
        if c["direction"] == "rr":
            continue
        if cfg["used_publish"][variants.index(c["variant"])] == "per-entry":
            ok(c["ring_packets"] > 0 and abs(c["used_idx_stores"] - c["ring_packets"]) <= SKEW,
               "per-entry %s %d B: one used->idx store per packet (%d stores, %d packets)" % (
                   c["direction"], c["payload"], c["used_idx_stores"], c["ring_packets"]))
        ok(c["ring_packets"] > 0 and (c["used_idx_stores_per_packet"] or 0) > 0
           and (c["cycles_per_packet"] or 0) > 0,
           "%s: the backend's counters moved (%d ring packets, %s used->idx stores and %s "
           "cycles per packet)" % (what, c["ring_packets"], c["used_idx_stores_per_packet"],
                                   c["cycles_per_packet"]))
    if plan.syscalls and "native" in cfg["hosts"]:
        check_native_syscalls(cases, perf_unusable())
    if "native" in cfg["hosts"]:
        lost = doc.get("native_mbufs_lost")
        ok(lost == 0, "native: every host mbuf came back to its pool (%s missing)" % lost)
    if plan.refs:
        refs = doc.get("refs") or {"cacheline_rtt_ns": 0, "by_payload": [{}]}
        first = refs["by_payload"][0]
        ok(refs["cacheline_rtt_ns"] > 0 and first.get("memcpy_gbps", 0) > 0
           and first.get("unix_gbps", 0) > 0,
           "reference limits measured (cache line %.0f ns)" % refs["cacheline_rtt_ns"])
        for c in cases:
            if c["direction"] == "rr":
                ok((c.get("floor_rtt_p50_us") or 0) > 0,
                   "%s rr %d B rep %d: its repetition's Unix ping-pong floor (%s us)" % (
                       c["variant"], c["payload"], c["rep"], c.get("floor_rtt_p50_us")))
    backends = {(c["variant"], c["rep"]): c for c in cases}
    for (v, rep), c in sorted(backends.items()):
        cl = [c.get(k) for k in ("cacheline_rtt_ns_before", "cacheline_rtt_ns_after")]
        ok(all((x or 0) > 0 for x in cl),
           "%s rep %d: the CPUs' cache-line round trip before and after its backend (%s, %s "
           "ns)" % (v, rep, cl[0], cl[1]))
    want = sorted((v, rep, m, p, b, n) for v in variants for rep in range(plan.reps)
                  for m in plan.modes.split(",") for p in numbers(plan.payloads)
                  for b in numbers(plan.bursts) for n in numbers(plan.conns))
    got = sorted((c["variant"], c["rep"], c["direction"], c["payload"], c["burst"], c["conns"])
                 for c in cases)
    ok(got == want, "JSON has one record per case the command line asks for (%d of %d)" % (
        len(got), len(want)))


def perf_unusable():
    """Why perf stat cannot count syscalls tracepoints here (as vsock-perf --syscalls does),
    or None when it can."""
    if shutil.which("perf") is None:
        return "perf is not installed"
    try:
        # Seconds on a loaded machine; a minute is far from them.
        run = subprocess.run(["perf", "stat", "-x", ",", "-e", "raw_syscalls:sys_enter",
                              "--filter", "id >= 0", "-e", "syscalls:sys_enter_epoll_wait",
                              "--", "true"], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "perf stat -- true did not end in 60 s"
    for line in run.stderr.splitlines():
        count = line.split(",")[0]
        if ",raw_syscalls:sys_enter," in line and count.isdigit() and int(count) > 0:
            return None
    lines = run.stderr.strip().splitlines()
    return "perf stat cannot count them (status %d%s)" % (
        run.returncode, ": " + lines[-1] if lines else "")


def check_native_syscalls(cases, unusable):
    """The point of the native path: no syscall per packet on either end, in every native
    case, counted by perf stat unless it cannot count here."""
    for c in cases:
        if c["host"] != "native":
            continue
        what = "native %s %d B: no syscall per packet on either end" % (c["direction"],
                                                                        c["payload"])
        if unusable:
            tap.skip(what, unusable)
            continue
        if c["client_syscalls"] is None or c["worker_syscalls_per_packet"] is None:
            ok(False, "%s: perf stat works here, yet the window's counts are unknown (client "
               "%s, worker %s per packet; vsock-perf's perf messages above)" % (
                   what, c["client_syscalls"], c["worker_syscalls_per_packet"]))
            continue
        # Besides the guest driver's kicks (eventfd writes the engine counts, one per lap of
        # avail_event), the client thread's count holds only the measurement's own few; the
        # worker's leaves out its idle rounds' epoll_wait, counted apart.
        kicks = round((c["guest_kicks_per_packet"] or 0) * c["ring_packets"])
        worker = c["worker_syscalls_per_packet"] * c["ring_packets"]
        ok(c["client_syscalls"] - kicks <= MEASURE_SYSCALLS and worker <= MEASURE_SYSCALLS,
           "%s: %d client syscalls in %d packets (%d guest kicks, the rest the "
           "measurement's), worker %.0f besides epoll_wait" % (
               what, c["client_syscalls"], c["ring_packets"], kicks, worker))


def check_isolation(doc, plan):
    recs = {c["condition"]: c for c in doc["cases"] if c.get("part") == "isolation"}
    ok(sorted(recs) == ["flood", "quiet"], "JSON has the quiet and the flood condition")
    q, fl = recs.get("quiet"), recs.get("flood")
    if q is None or fl is None:
        return
    ok(q["ok"] and fl["ok"], "isolation: %d quiet and %d flood slices of %s s, no stall, the "
       "app exited cleanly%s" % (q["slices"], fl["slices"], q["slice_seconds"],
                                 "" if q["ok"] else ": " + q["error"]))
    ok(q["slices"] == plan.reps and q["min_slice_round_trips"] > 0,
       "quiet: VM 5's round trips in every slice (%d of %d slices, at least %d each)" % (
           q["slices"], plan.reps, q["min_slice_round_trips"]))
    ok(fl["slices"] == plan.reps and fl["min_slice_round_trips"] > 0
       and fl["min_slice_flood_bytes"] > 0,
       "flood: VM 5's round trips and VM 3's flood in every slice (%d of %d slices, at least "
       "%d round trips and %d flood bytes each)" % (
           fl["slices"], plan.reps, fl["min_slice_round_trips"], fl["min_slice_flood_bytes"]))
    # ok holds only when both ends' books matched: every flood byte checked against the
    # pattern, every echo byte as pinged.
    ok(fl["ok"] and fl["flood_bytes"] > 0, "VM 3: %d flood bytes on %d connections, every one "
       "checked against the pattern at its stream offset, counts equal" % (
           fl["flood_bytes"], fl["flood_conns"]))
    ok(q["ok"] and q["round_trips"] + fl["round_trips"] > 0,
       "VM 5: %d round trips, every echo byte as pinged" % (q["round_trips"] + fl["round_trips"]))


def check_scale(doc, plan):
    recs = [c for c in doc["cases"] if c.get("part") == "scale"]
    for r in recs:
        ok(r["ok"] and r["round_trips"] > 0 and r["stream_bytes"] > 0,
           "scale, %d VM(s) on lcore 1: VM 3's %d round trips and %d g2h bytes verified (p50 "
           "%s us, %s Gbit/s)%s" % (r["vms"], r["round_trips"], r["stream_bytes"],
                                    r["rtt_p50_us"], r["gbps"],
                                    "" if r["ok"] else ": " + r["error"]))
        ok(r["idle_rounds"] > 0 and (r["idle_round_ns"] or 0) > 0,
           "scale, %d VM(s): the worker's idle rounds counted (%d rounds, %s ns each)" % (
               r["vms"], r["idle_rounds"], r["idle_round_ns"]))
    want = sorted((n, rep) for n in numbers(plan.vms) for rep in range(plan.reps))
    got = sorted((r["vms"], r["rep"]) for r in recs)
    ok(got == want, "JSON has one record per count and repetition (%d of %d)" % (
        len(got), len(want)))


def main():
    perf, opts = sys.argv[1], sys.argv[2:]
    plan = plan_of(opts)
    if os.path.exists(plan.json):
        os.unlink(plan.json)
    run = subprocess.run([perf] + opts, capture_output=True, text=True)
    for line in run.stdout.splitlines():
        print("# " + line)
    for line in run.stderr.splitlines():
        if line.startswith("vsock-perf: perf stat"):
            print("# " + line)
    if not ok(run.returncode == 0, "vsock-perf %s: exit status %d" % (" ".join(opts),
                                                                       run.returncode)):
        for line in run.stderr.splitlines()[-20:]:
            print("# " + line)
    try:
        with open(plan.json, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        ok(False, "its JSON %s: %s" % (plan.json, e))
        tap.done()
    if plan.isolation:
        check_isolation(doc, plan)
    elif plan.scale:
        check_scale(doc, plan)
    else:
        check_cases(doc, plan)
    tap.done()


if __name__ == "__main__":
    main()
