#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""dpdk-vsock-exporter: a running dpdk-vsock-app's counters as Prometheus metrics.

At every scrape it reads the app's DPDK telemetry socket (the /vsock/... commands of
doc/operators-guide.md), as DPDK's usertools/dpdk-telemetry-exporter.py does for DPDK's own
counters, and answers in the Prometheus text format, or OpenMetrics when the scraper asks
for it, through the Prometheus client library (Debian's python3-prometheus-client).

A scrape reads everything it serves first and builds the page after, so that a page is one
reading, whole; scrapes take turns on one telemetry connection at a time. It only sends
commands that read counters (never /vsock/conns, the one that runs on a polling lcore), so a
scrape never holds up a poll. When the app is not there (not started yet, restarting) the
page still answers, with dpdk_vsock_up 0.
"""
import argparse
import errno
import json
import os
import re
import signal
import socket
import sys
import threading
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily,
                                    HistogramMetricFamily, InfoMetricFamily)
from prometheus_client.exposition import ThreadingWSGIServer

VERSION = "@VERSION@"
PROG = "dpdk-vsock-exporter"
DEFAULT_LISTEN = "127.0.0.1:9877"
EXIT_USAGE = 2
# DPDK's greeting ({"version": ..., "pid": ..., "max_output_len": ...}) is far shorter.
GREETING_MAX = 4096
# Readings of the VM list before settling for the last one, should VMs keep being added.
VM_LIST_TRIES = 3

# Counters of one VM (label cid): telemetry key of /vsock/stats, name, help.
VM_COUNTERS = (
    ("from_guest_pkts", "dpdk_vsock_vm_guest_to_host_packets",
     "vsock packets taken from the guest"),
    ("from_guest_bytes", "dpdk_vsock_vm_guest_to_host_bytes",
     "payload bytes of the packets taken from the guest"),
    ("to_guest_pkts", "dpdk_vsock_vm_host_to_guest_packets",
     "vsock packets written to the guest"),
    ("to_guest_bytes", "dpdk_vsock_vm_host_to_guest_bytes",
     "payload bytes of the packets written to the guest"),
    ("host_written_bytes", "dpdk_vsock_vm_host_socket_written_bytes",
     "bytes written to host sockets (guest data)"),
    ("host_read_bytes", "dpdk_vsock_vm_host_socket_read_bytes",
     "bytes read from host sockets"),
    ("conns_opened", "dpdk_vsock_vm_connections_opened",
     "connections established, either side connecting"),
    ("conns_closed", "dpdk_vsock_vm_connections_closed",
     "connections ended by a shutdown or a peer's close"),
    ("conns_reset", "dpdk_vsock_vm_connections_reset",
     "connections ended by an RST the app sent (error, timeout)"),
    ("conns_refused", "dpdk_vsock_vm_connections_refused",
     "connects nobody accepted"),
    ("conns_table_full", "dpdk_vsock_vm_connections_table_full",
     "connects refused because the VM had max-connections open"),
    ("pipes_refused", "dpdk_vsock_vm_pipes_refused",
     "guest-to-guest and native connects refused because the VM had max-pipes in use"),
    ("short_packets", "dpdk_vsock_vm_short_packets",
     "guest tx chains shorter than a vsock header"),
    ("small_rx_buffers", "dpdk_vsock_vm_small_rx_buffers",
     "guest rx buffers too small for a vsock header"),
)
# The display's "Stalls:" line: one counter, the reason as label.
VM_STALLS = (
    ("credit_stalls", "credit"),
    ("mempool_exhausted", "mempool_exhausted"),
    ("tx_backpressure", "tx_backpressure"),
    ("rx_ring_full", "rx_ring_full"),
    ("rst_dropped", "rst_dropped"),
)
# Counters of one virtqueue (labels cid, queue: rx is host->guest, tx guest->host).
QUEUE_COUNTERS = (
    ("packets", "dpdk_vsock_vm_ring_chains", "descriptor chains completed"),
    ("bursts", "dpdk_vsock_vm_ring_bursts", "polls that moved at least one chain"),
    ("used_idx_flushes", "dpdk_vsock_vm_ring_used_flushes",
     "used->idx stores (completions published to the guest)"),
    ("interrupts", "dpdk_vsock_vm_ring_interrupts", "interrupts sent to the guest"),
    ("kicks", "dpdk_vsock_vm_ring_guest_kicks", "notifications the guest sent"),
    ("budget_cuts", "dpdk_vsock_vm_ring_budget_cuts",
     "bursts cut at the round's byte budget (the rest moves next round)"),
    ("ring_errors", "dpdk_vsock_vm_ring_errors",
     "malformed descriptor chains (the ring is then stopped)"),
)
QUEUES = ("rx", "tx")
# Burst sizes as histogram buckets: powers of two up to the largest burst, 512.
BURST_BUCKETS = tuple(1 << i for i in range(10))
# Counters of one worker lcore (label lcore).
LCORE_COUNTERS = (
    ("polls", "dpdk_vsock_lcore_polls", "rounds over the lcore's VMs"),
    ("busy_polls", "dpdk_vsock_lcore_busy_polls",
     "rounds that found work (busy / polls is the lcore's utilisation)"),
    ("wakeups", "dpdk_vsock_lcore_wakeups",
     "sleeps ended by a pipe connection's far side (or a control request)"),
    ("lost_kicks", "dpdk_vsock_lcore_lost_kicks",
     "sleeps that ran to their timeout over a guest buffer no kick announced"),
    ("cycles_pkts", "dpdk_vsock_lcore_measured_packets",
     "packets moved by busy rounds while record-core-cycles was on"),
)
# TSC cycles of one lcore, turned into seconds by the TSC frequency.
LCORE_SECONDS = (
    ("cycles", "dpdk_vsock_lcore_measured_seconds",
     "time of all rounds while record-core-cycles was on"),
    ("busy_cycles", "dpdk_vsock_lcore_busy_seconds",
     "time of busy rounds while record-core-cycles was on"),
)


def counter(name, text, labels):
    """A counter family; bytes and seconds named as units, for OpenMetrics' UNIT line."""
    unit = next((u for u in ("bytes", "seconds") if name.endswith("_" + u)), "")
    return CounterMetricFamily(name, text, labels=labels, unit=unit)


class Telemetry:
    """One connection to a DPDK telemetry v2 socket: a command, then its JSON reply."""

    def __init__(self, path, timeout):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.sock.settimeout(timeout)
            self.sock.connect(path)
            hello = self._reply(GREETING_MAX)
            self.max_len = int(hello["max_output_len"])
            self.dpdk_version = str(hello.get("version", ""))
        except BaseException:
            self.sock.close()
            raise

    def _reply(self, size):
        data = self.sock.recv(size)
        if not data:  # DPDK closes at once past its number of clients
            raise ConnectionError("the app closed the telemetry connection")
        return json.loads(data)

    def cmd(self, command):
        """The reply's value: a dict, or None (an unknown CID, the app stopping)."""
        self.sock.send(command.encode())
        return self._reply(self.max_len)[command.split(",")[0]]

    def dict(self, command):
        """The reply of a command that always has one while the app runs."""
        reply = self.cmd(command)
        if not isinstance(reply, dict):
            raise ValueError(f"{command} answered {reply!r}: the app is stopping")
        return reply

    def close(self):
        self.sock.close()


def read_vms(tel):
    """Every VM of /vsock/vms, page after page: {cid: its entry}."""
    vms, start = {}, 0
    while True:
        page = tel.dict(f"/vsock/vms,{start}")
        nxt = page.pop("next", None)
        for vm in page.values():
            vms[int(vm["cid"])] = vm
        if nxt is None or nxt <= start:
            return vms
        start = nxt


def read_all(tel):
    """One reading of everything a page shows, or an exception."""
    for _ in range(VM_LIST_TRIES):
        config = tel.dict("/vsock/config")
        vms = read_vms(tel)
        if len(vms) == config["nb_vms"] == tel.dict("/vsock/config")["nb_vms"]:
            break
    # A VM whose stats are null is gone since the list was read: it is not on this page.
    stats = {cid: tel.cmd(f"/vsock/stats,{cid}") for cid in vms}
    return {
        "config": config,
        "vms": {cid: (vms[cid], st) for cid, st in stats.items() if st is not None},
        "lcores": tel.dict("/vsock/lcores"),
        "resources": tel.dict("/vsock/resources"),
        "dpdk_version": tel.dpdk_version,
    }


def vm_families(vms):
    """The per-VM families: state, counters, rings, burst sizes, errors."""
    info = InfoMetricFamily("dpdk_vsock_vm", "a VM as configured: the lcore that polls it "
                            "whenever a guest is attached, its sockets",
                            labels=["cid", "lcore", "socket", "uds"])
    running = GaugeMetricFamily("dpdk_vsock_vm_running", "1 while a guest driver is attached "
                                "and its rings are polled", labels=["cid"])
    conns = GaugeMetricFamily("dpdk_vsock_vm_connections", "connections open now, host "
                              "CONNECT lines in progress included", labels=["cid"])
    limit = GaugeMetricFamily("dpdk_vsock_vm_connections_limit", "the VM's max-connections",
                              labels=["cid"])
    pipes = GaugeMetricFamily("dpdk_vsock_vm_pipes", "guest-to-guest and native connections "
                              "of the VM's share in use now", labels=["cid"])
    pipes_limit = GaugeMetricFamily("dpdk_vsock_vm_pipes_limit", "the VM's max-pipes",
                                    labels=["cid"])
    broken = GaugeMetricFamily("dpdk_vsock_vm_ring_broken", "1 once the guest broke the "
                               "ring and it was stopped", labels=["cid", "queue"])
    counters = [counter(name, text, ["cid"]) for _, name, text in VM_COUNTERS]
    stalls = CounterMetricFamily("dpdk_vsock_vm_stalls", "waits of the datapath, by reason "
                                 "(the display's Stalls line); nothing is dropped but "
                                 "rst_dropped", labels=["cid", "reason"])
    rings = [counter(name, text, ["cid", "queue"]) for _, name, text in QUEUE_COUNTERS]
    bursts = HistogramMetricFamily("dpdk_vsock_vm_ring_burst_chains", "chains moved per "
                                   "burst, counted while record-burst-stats is on",
                                   labels=["cid", "queue"])
    errors = CounterMetricFamily("dpdk_vsock_vm_errors", "protocol errors by kind: hdr_* bad "
                                 "header, conn_* protocol, ring_* virtqueue",
                                 labels=["cid", "kind"])
    for cid, (vm, st) in sorted(vms.items()):
        c = str(cid)
        info.add_metric([c, str(vm["placed_lcore"]), vm["socket"], vm["uds"]], {})
        running.add_metric([c], vm["running"])
        conns.add_metric([c], vm["conns"])
        limit.add_metric([c], vm["max_conns"])
        pipes.add_metric([c], vm["pipes"])
        pipes_limit.add_metric([c], vm["max_pipes"])
        for (key, _, _), fam in zip(VM_COUNTERS, counters):
            fam.add_metric([c], st[key])
        for key, reason in VM_STALLS:
            stalls.add_metric([c, reason], st[key])
        for q in QUEUES:
            broken.add_metric([c, q], vm[q + "_ring_broken"])
            for (key, _, _), fam in zip(QUEUE_COUNTERS, rings):
                fam.add_metric([c, q], st[q][key])
            hist = {int(size): n for size, n in st[q]["burst_hist"].items()}
            buckets = [(str(float(le)), sum(n for size, n in hist.items() if size <= le))
                       for le in BURST_BUCKETS]
            buckets.append(("+Inf", sum(hist.values())))
            bursts.add_metric([c, q], buckets, sum(size * n for size, n in hist.items()))
        for kind, n in sorted(st["errors"].items()):
            errors.add_metric([c, kind], n)
    return [info, running, conns, limit, pipes, pipes_limit, broken] + counters + [stalls] + rings + [bursts,
                                                                                errors]


def lcore_families(lcores, tsc_hz):
    """The per-lcore families."""
    vms = GaugeMetricFamily("dpdk_vsock_lcore_vms", "VMs with a guest attached that the "
                            "lcore polls", labels=["lcore"])
    counters = [counter(name, text, ["lcore"]) for _, name, text in LCORE_COUNTERS]
    seconds = [counter(name, text, ["lcore"]) for _, name, text in LCORE_SECONDS]
    for lc in sorted(lcores.values(), key=lambda lc: lc["lcore_id"]):
        label = [str(lc["lcore_id"])]
        vms.add_metric(label, lc["nb_vms"])
        for (key, _, _), fam in zip(LCORE_COUNTERS, counters):
            fam.add_metric(label, lc[key])
        for (key, _, _), fam in zip(LCORE_SECONDS, seconds):
            fam.add_metric(label, lc[key] / tsc_hz)
    return [vms] + counters + seconds


def app_families(r):
    """What the app as a whole reports: versions, settings, resources."""
    config, res = r["config"], r["resources"]
    info = InfoMetricFamily("dpdk_vsock", "the dpdk-vsock engine and DPDK the app runs with",
                            value={"version": config["version"],
                                   "dpdk_version": r["dpdk_version"]})
    gauges = (
        ("dpdk_vsock_paused", "1 while polling is stopped (the console's stop)",
         config["paused"]),
        ("dpdk_vsock_burst_size", "packets per virtqueue per poll", config["burst"]),
        ("dpdk_vsock_tsc_hertz", "TSC frequency: cycles per second", config["tsc_hz"]),
        ("dpdk_vsock_mbufs", "payload buffers of every pool", res["mbufs_total"]),
        ("dpdk_vsock_mbufs_in_use", "payload buffers holding queued data",
         res["mbufs_in_use"]),
        ("dpdk_vsock_open_fds", "file descriptors the app has open", res["open_fds"]),
        ("dpdk_vsock_resident_memory_bytes", "resident memory of the app",
         res["rss_bytes"]),
    )
    return [info] + [GaugeMetricFamily(name, text, value=v) for name, text, v in gauges]


class VsockCollector:
    """A custom collector: every scrape reads the telemetry socket afresh."""

    def __init__(self, path, timeout):
        self.path = path
        self.timeout = timeout
        self.lock = threading.Lock()
        self.down = False

    def read(self):
        """The app's families from one reading, or None when there is none (said on stderr
        when the app goes away, and when it is back)."""
        error = None
        try:
            tel = Telemetry(self.path, self.timeout)
            try:
                r = read_all(tel)
            finally:
                tel.close()
            fams = app_families(r) + vm_families(r["vms"]) + \
                lcore_families(r["lcores"], r["config"]["tsc_hz"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            fams, error = None, f"{type(e).__name__}: {e}"
        if (error is not None) != self.down:
            self.down = error is not None
            if error:
                print(f"{PROG}: cannot read the app's telemetry at {self.path} ({error}); "
                      "dpdk_vsock_up is 0 until it can", file=sys.stderr, flush=True)
            else:
                print(f"{PROG}: reading the app's telemetry at {self.path}", flush=True)
        return fams

    def collect(self):
        # Several scrapers at once take turns: one telemetry client, readings never mixed.
        with self.lock:
            app = self.read()
        return [InfoMetricFamily("dpdk_vsock_exporter", "this exporter",
                                 value={"version": VERSION}),
                GaugeMetricFamily("dpdk_vsock_up", "1 when this scrape read the app's "
                                  "telemetry, 0 when it could not",
                                  value=0 if app is None else 1)] + (app or [])


def telemetry_path(prefix):
    """The EAL's runtime directory for --file-prefix PREFIX, as dpdk-telemetry.py finds it."""
    run_dir = os.environ.get("RUNTIME_DIRECTORY")
    if not run_dir:
        run_dir = "/var/run" if os.getuid() == 0 else os.environ.get("XDG_RUNTIME_DIR", "/tmp")
    return os.path.join(run_dir, "dpdk", prefix, "dpdk_telemetry.v2")


def listen_address(text):
    """ADDRESS:PORT or [IPV6]:PORT as (family, address, port); a usage error otherwise."""
    m = re.fullmatch(r"\[([^\]]+)\]:(\d+)|([^:\[\]]+):(\d+)", text)
    if not m:
        raise argparse.ArgumentTypeError(f"'{text}': expected ADDRESS:PORT, e.g. "
                                         f"{DEFAULT_LISTEN} or [::1]:9877")
    host, port = m.group(1) or m.group(3), int(m.group(2) or m.group(4))
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"'{text}': port {port} is not in 1..65535")
    # What looks like an IP address must be one: 300.1.2.3 is no host name to look up.
    numeric = ":" in host or re.fullmatch(r"[0-9.]+", host)
    try:
        family, _, _, _, addr = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM,
            flags=socket.AI_NUMERICHOST if numeric else 0)[0]
    except socket.gaierror as e:
        what = "not an IP address" if numeric else f"unknown host ({e.strerror})"
        raise argparse.ArgumentTypeError(f"'{text}': '{host}' is {what}")
    return family, addr[0], port


def parse_args():
    p = argparse.ArgumentParser(
        prog=PROG, description="Serve a running dpdk-vsock-app's counters (its DPDK telemetry "
        "socket) as Prometheus metrics on http://ADDRESS:PORT/metrics.",
        epilog="Exit status: 0 stopped (SIGTERM, SIGINT), 1 cannot listen (the port is in "
        "use, not allowed), 2 bad command line. See dpdk-vsock-exporter(8) and "
        "doc/operators-guide.md.")
    p.add_argument("-l", "--listen", metavar="ADDRESS:PORT", type=listen_address,
                   default=DEFAULT_LISTEN, help=f"where to serve (default {DEFAULT_LISTEN}: "
                   "this host only; 0.0.0.0:PORT or [::]:PORT for every address)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("-f", "--file-prefix", metavar="PREFIX", default="rte",
                       help="the app's EAL --file-prefix (default rte), as dpdk-telemetry.py "
                       "takes it: the socket is in the EAL's runtime directory "
                       "($RUNTIME_DIRECTORY, /var/run as root, else $XDG_RUNTIME_DIR or /tmp, "
                       "then dpdk/PREFIX)")
    where.add_argument("-s", "--socket", metavar="PATH",
                       help="the app's telemetry socket (dpdk_telemetry.v2) itself")
    p.add_argument("-t", "--timeout", metavar="SECONDS", type=float, default=5.0,
                   help="longest wait for a telemetry answer (default 5); a scrape that "
                   "waits longer says dpdk_vsock_up 0")
    p.add_argument("--version", action="version", version=f"{PROG} {VERSION}")
    args = p.parse_args()
    if not 0 < args.timeout <= 3600:
        p.error(f"argument -t/--timeout: {args.timeout:g} is not in (0, 3600] seconds")
    return args


class QuietHandler(WSGIRequestHandler):
    """No line per request: a scrape every few seconds is no news for the journal."""

    def log_message(self, *args):
        pass


def main():
    args = parse_args()
    family, host, port = args.listen
    path = args.socket or telemetry_path(args.file_prefix)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(VsockCollector(path, args.timeout))
    server = type("Server", (ThreadingWSGIServer,), {"address_family": family})
    where = f"[{host}]:{port}" if family == socket.AF_INET6 else f"{host}:{port}"
    try:
        httpd = make_server(host, port, make_wsgi_app(registry), server, QuietHandler)
    except OSError as e:
        why = {errno.EADDRINUSE: "the port is in use (another exporter? choose another "
                                 "with --listen)",
               errno.EADDRNOTAVAIL: "the address is not one of this host's",
               errno.EACCES: "not allowed (a port below 1024 needs root)"}
        print(f"{PROG}: cannot listen on {where}: {why.get(e.errno, e.strerror)}",
              file=sys.stderr)
        return EXIT_USAGE if e.errno == errno.EADDRNOTAVAIL else 1
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"{PROG} {VERSION}: serving http://{where}/metrics from {path}", flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
