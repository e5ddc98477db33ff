#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""dpdk-vsock-exporter against the real things: a running dpdk-vsock-app driven by a guest
(metrics-guest: the userspace frontend and guest driver), `promtool check metrics`, and a
Prometheus server (Debian's prometheus) started here on a free localhost port with its own
configuration and data directory.

- its command line: --version, --help, a bad --listen refused with exit 2, a port in use;
- every counter of /vsock/stats, its rings and errors, and of /vsock/lcores is on the page
  under its Prometheus name, with HELP and TYPE, and equal to what telemetry read just
  before and just after (a counter telemetry has and the page lacks fails); promtool accepts
  the page, OpenMetrics too when asked;
- Prometheus scrapes it while a stream runs: the guest->host bytes of VM 3 it answers through
  its HTTP API are exactly what the stream moved, midway (the connection open) and at the
  end, never less than before; host->guest too; the operators' guide's queries answer;
- pages fetched without pause while the guest detaches and attaches and the app restarts
  with one VM more are each whole: every family with a sample for every VM of the page.

Usage: test_metrics.py APP EXPORTER METRICS-GUEST OPERATORS-GUIDE (TAP)."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from queue import Empty, Queue

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "install"))
import tap  # noqa: E402
from tap import ok  # noqa: E402
from prometheus_client.openmetrics.parser import \
    text_string_to_metric_families as om_families  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

APP, EXPORTER, GUEST, GUIDE = sys.argv[1:5]
EAL = ["--no-huge", "-m", "512", "--no-pci", "--no-shconf", "-l", "0-1",
       "--log-level=lib.eal:error"]
PREFIX = f"vsock-metrics-{os.getpid()}"
# Longest wait for anything that must happen: a bound against hangs, never a speed.
WAIT = 90
G2H = (3 << 20) + 7, (5 << 20) + 11  # the stream in two steps
H2G = (2 << 20) + 5

# What the page must show for each telemetry counter: written here, not taken from the
# exporter, so that a counter it forgets or misnames fails.
VM = {
    "from_guest_pkts": "dpdk_vsock_vm_guest_to_host_packets_total",
    "from_guest_bytes": "dpdk_vsock_vm_guest_to_host_bytes_total",
    "to_guest_pkts": "dpdk_vsock_vm_host_to_guest_packets_total",
    "to_guest_bytes": "dpdk_vsock_vm_host_to_guest_bytes_total",
    "host_written_bytes": "dpdk_vsock_vm_host_socket_written_bytes_total",
    "host_read_bytes": "dpdk_vsock_vm_host_socket_read_bytes_total",
    "conns_opened": "dpdk_vsock_vm_connections_opened_total",
    "conns_closed": "dpdk_vsock_vm_connections_closed_total",
    "conns_reset": "dpdk_vsock_vm_connections_reset_total",
    "conns_refused": "dpdk_vsock_vm_connections_refused_total",
    "conns_table_full": "dpdk_vsock_vm_connections_table_full_total",
    "pipes_refused": "dpdk_vsock_vm_pipes_refused_total",
    "short_packets": "dpdk_vsock_vm_short_packets_total",
    "small_rx_buffers": "dpdk_vsock_vm_small_rx_buffers_total",
}
STALLS = {"credit_stalls": "credit", "mempool_exhausted": "mempool_exhausted",
          "tx_backpressure": "tx_backpressure", "rx_ring_full": "rx_ring_full",
          "rst_dropped": "rst_dropped"}
RING = {
    "packets": "dpdk_vsock_vm_ring_chains_total",
    "bursts": "dpdk_vsock_vm_ring_bursts_total",
    "used_idx_flushes": "dpdk_vsock_vm_ring_used_flushes_total",
    "interrupts": "dpdk_vsock_vm_ring_interrupts_total",
    "kicks": "dpdk_vsock_vm_ring_guest_kicks_total",
    "budget_cuts": "dpdk_vsock_vm_ring_budget_cuts_total",
    "ring_errors": "dpdk_vsock_vm_ring_errors_total",
}
LCORE = {
    "polls": "dpdk_vsock_lcore_polls_total",
    "busy_polls": "dpdk_vsock_lcore_busy_polls_total",
    "lost_kicks": "dpdk_vsock_lcore_lost_kicks_total",
    "wakeups": "dpdk_vsock_lcore_wakeups_total",
    "cycles_pkts": "dpdk_vsock_lcore_measured_packets_total",
}
LCORE_CYCLES = {"cycles": "dpdk_vsock_lcore_measured_seconds_total",
                "busy_cycles": "dpdk_vsock_lcore_busy_seconds_total"}
# Every family with a sample per VM (per ring for the ring ones): what a whole page has.
PER_VM = (["dpdk_vsock_vm_info", "dpdk_vsock_vm_running", "dpdk_vsock_vm_connections",
           "dpdk_vsock_vm_connections_limit", "dpdk_vsock_vm_pipes",
           "dpdk_vsock_vm_pipes_limit", "dpdk_vsock_vm_stalls_total",
           "dpdk_vsock_vm_errors_total"] + list(VM.values()))
PER_RING = ["dpdk_vsock_vm_ring_broken", "dpdk_vsock_vm_ring_burst_chains_count"] + \
    list(RING.values())

tmp = tempfile.mkdtemp(prefix="vsock-metrics-")
procs = []


def log(path):
    return open(os.path.join(tmp, path), "w")


def dump(path):
    try:
        for line in open(os.path.join(tmp, path), errors="replace"):
            print(f"# {path}: {line.rstrip()}")
    except OSError:
        pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ended(p):
    """p's exit status once it exited by itself, or None (killed after WAIT seconds)."""
    try:
        return p.wait(WAIT)
    except subprocess.TimeoutExpired:
        p.kill()
        return None


def wait_for(what, secs=WAIT, step=0.1):
    """Evaluate what() until it is truthy or secs passed: its last value."""
    end = time.monotonic() + secs
    while True:
        v = what()
        if v or time.monotonic() > end:
            return v
        time.sleep(step)


# The app's EAL runtime directory, where its telemetry socket is (app_proc_eal_dir()).
EAL_DIR = os.path.join(os.environ.get("RUNTIME_DIRECTORY") or (
    "/var/run" if os.getuid() == 0 else os.environ.get("XDG_RUNTIME_DIR", "/tmp")),
    "dpdk", PREFIX)


def telemetry(*cmds):
    """Replies of the app's telemetry to cmds (None where it has none), or None."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
            s.settimeout(10)
            s.connect(os.path.join(EAL_DIR, "dpdk_telemetry.v2"))
            size = json.loads(s.recv(4096))["max_output_len"]
            out = []
            for c in cmds:
                s.send(c.encode())
                out.append(json.loads(s.recv(size))[c.split(",")[0]])
            return out
    except (OSError, ValueError):
        return None


def http_get(url, accept=None, timeout=30):
    """(status, body) of a GET; status 0 when there was no answer."""
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    except (OSError, ValueError):
        return 0, ""


def samples(page):
    """{(name, ((label, value), ...)): value} of a Prometheus text page."""
    out = {}
    for fam in text_string_to_metric_families(page):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def key(name, **labels):
    return (name, tuple(sorted((k, str(v)) for k, v in labels.items())))


class App:
    """dpdk-vsock-app with VMs CIDS, its console on a pipe, its log in the temp dir."""

    def __init__(self, cids, name):
        self.cids, self.name = cids, name
        args = [APP] + EAL + [f"--file-prefix={PREFIX}", "--", "-i"]
        for cid in cids:
            args += ["--vm", f"cid={cid},socket={self.sock(cid)},uds={self.uds(cid)}"]
        self.p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=log(name),
                                  stderr=subprocess.STDOUT, text=True)
        procs.append(self.p)

    @staticmethod
    def sock(cid):
        return os.path.join(tmp, f"vm{cid}.sock")

    @staticmethod
    def uds(cid):
        return os.path.join(tmp, f"vm{cid}.vsock")

    def ready(self):
        c = wait_for(lambda: self.p.poll() is not None or
                     (telemetry("/vsock/config") or [None])[0], secs=WAIT)
        return isinstance(c, dict) and c["nb_vms"] == len(self.cids)

    def console(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        return ended(self.p)


class Guest:
    """metrics-guest on VM CID: commands in, answers out (tests/metrics/metrics_guest.c)."""

    def __init__(self, cid):
        self.p = subprocess.Popen([GUEST, App.sock(cid), App.uds(cid)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=log("guest.err"), text=True)
        procs.append(self.p)
        self.lines = Queue()
        threading.Thread(target=self.read, daemon=True).start()
        self.started = self.answer()

    def read(self):
        for line in self.p.stdout:
            if not line.startswith("#"):
                self.lines.put(line.strip())
        self.lines.put("EOF")

    def answer(self, secs=WAIT * 2):
        try:
            return self.lines.get(timeout=secs)
        except Empty:
            return "TIMEOUT"

    def cmd(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return self.answer()

    def stop(self):
        self.p.stdin.close()
        return ended(self.p)


class Exporter:
    """dpdk-vsock-exporter on the app's --file-prefix, on a free localhost port."""

    def __init__(self):
        self.port = free_port()
        self.p = subprocess.Popen([EXPORTER, "-f", PREFIX, "--listen",
                                   f"127.0.0.1:{self.port}"], stdout=log("exporter"),
                                  stderr=subprocess.STDOUT)
        procs.append(self.p)
        self.url = f"http://127.0.0.1:{self.port}/metrics"

    def page(self, accept=None):
        return http_get(self.url, accept)


class Prometheus:
    """A Prometheus server of its own: config, data and port, scraping target every second."""

    def __init__(self, target):
        self.port = free_port()
        cfg = os.path.join(tmp, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: vsock\n    static_configs:\n"
                    f"      - targets: ['127.0.0.1:{target}']\n")
        self.p = subprocess.Popen(["prometheus", f"--config.file={cfg}",
                                   f"--storage.tsdb.path={os.path.join(tmp, 'tsdb')}",
                                   f"--web.listen-address=127.0.0.1:{self.port}",
                                   "--log.level=warn"],
                                  stdout=log("prometheus"), stderr=subprocess.STDOUT)
        procs.append(self.p)
        self.base = f"http://127.0.0.1:{self.port}"

    def ready(self):
        return wait_for(lambda: self.p.poll() is not None or
                        http_get(self.base + "/-/ready")[0] == 200) is True and \
            self.p.poll() is None

    def query(self, expr):
        """The API's answer to an instant query: (status, result list)."""
        code, body = http_get(self.base + "/api/v1/query?" +
                              urllib.parse.urlencode({"query": expr}))
        try:
            reply = json.loads(body)
            return reply["status"], reply["data"]["result"]
        except (ValueError, KeyError):
            return f"HTTP {code}", []

    def value(self, expr):
        """The value of a query that answers one series, or None."""
        status, result = self.query(expr)
        return float(result[0]["value"][1]) if status == "success" and len(result) == 1 \
            else None

    def wait_value(self, expr, want):
        got = wait_for(lambda: self.value(expr) == want, step=0.2)
        return got, self.value(expr)


def check_cli():
    run = subprocess.run([EXPORTER, "--version"], capture_output=True, text=True, timeout=60)
    ver = subprocess.run([APP, "--", "--version"], capture_output=True, text=True, timeout=60)
    m = re.search(r"dpdk-vsock-app (\S+)", ver.stdout)
    ok(run.returncode == 0 and m and run.stdout.strip() == f"dpdk-vsock-exporter {m[1]}",
       f"--version: '{run.stdout.strip()}', the app's version")
    run = subprocess.run([EXPORTER, "--help"], capture_output=True, text=True, timeout=60)
    ok(run.returncode == 0 and "--listen ADDRESS:PORT" in run.stdout and
       "127.0.0.1:9877" in run.stdout and "--file-prefix" in run.stdout,
       "--help: exit 0, --listen (default 127.0.0.1:9877) and --file-prefix")
    bad = {"nonsense": "expected ADDRESS:PORT", "127.0.0.1:0": "not in 1..65535",
           "127.0.0.1:65536": "not in 1..65535", "127.0.0.1:http": "expected ADDRESS:PORT",
           "300.1.2.3:9877": "not an IP address", "[::1x]:9877": "not an IP address",
           "192.0.2.1:9877": "not one of this host's"}
    for arg, why in bad.items():
        run = subprocess.run([EXPORTER, "--listen", arg], capture_output=True, text=True,
                             timeout=60)
        said = run.stderr.strip().split("\n")[-1]
        ok(run.returncode == 2 and arg.split(":")[0].strip("[") in said and why in said,
           f"--listen {arg}: exit 2, '{said}'")
    run = subprocess.run([EXPORTER, "-f", "a", "-s", "/x"], capture_output=True, text=True,
                         timeout=60)
    ok(run.returncode == 2 and "not allowed with" in run.stderr,
       "--file-prefix and --socket together: exit 2")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = subprocess.run([EXPORTER, "--listen", f"127.0.0.1:{port}"], capture_output=True,
                             text=True, timeout=60)
    ok(run.returncode == 1 and f"127.0.0.1:{port}" in run.stderr and "in use" in run.stderr,
       f"--listen on a port in use: exit 1, '{run.stderr.strip()}'")


def between(lo, v, hi):
    return v is not None and lo <= v <= hi


def check_page(exp, cids):
    """Every telemetry counter on the page, equal to telemetry read before and after it."""
    cmds = ["/vsock/config", "/vsock/lcores"] + [f"/vsock/stats,{c}" for c in cids]
    before = telemetry(*cmds)
    code, page = exp.page()
    after = telemetry(*cmds)
    if not ok(code == 200 and before and after and all(before) and all(after),
              f"a page (HTTP {code}) between two telemetry readings"):
        return ""
    s = samples(page)
    hz = before[0]["tsc_hz"]
    missing, wrong, unknown = [], [], []

    def check(k, lo, hi):
        if k not in s:
            missing.append(k)
        elif not between(lo, s[k], hi):
            wrong.append((k, lo, s[k], hi))

    for cid, st0, st1 in zip(cids, before[2:], after[2:]):
        for name, v in st0.items():
            if name in VM:
                check(key(VM[name], cid=cid), v, st1[name])
            elif name in STALLS:
                check(key("dpdk_vsock_vm_stalls_total", cid=cid, reason=STALLS[name]), v,
                      st1[name])
            elif name in ("rx", "tx"):
                for rk, rv in v.items():
                    if rk in RING:
                        check(key(RING[rk], cid=cid, queue=name), rv, st1[name][rk])
                    elif rk == "burst_hist":
                        n0, n1 = sum(rv.values()), sum(st1[name][rk].values())
                        check(key("dpdk_vsock_vm_ring_burst_chains_count", cid=cid,
                                  queue=name), n0, n1)
                        check(key("dpdk_vsock_vm_ring_burst_chains_sum", cid=cid, queue=name),
                              sum(int(b) * c for b, c in rv.items()),
                              sum(int(b) * c for b, c in st1[name][rk].items()))
                        for le in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512):
                            check(key("dpdk_vsock_vm_ring_burst_chains_bucket", cid=cid,
                                      queue=name, le=float(le)),
                                  sum(c for b, c in rv.items() if int(b) <= le),
                                  sum(c for b, c in st1[name][rk].items() if int(b) <= le))
                    else:
                        unknown.append(f"{name}.{rk}")
            elif name == "errors":
                for kind, n in v.items():
                    check(key("dpdk_vsock_vm_errors_total", cid=cid, kind=kind), n,
                          st1[name][kind])
            elif name == "errors_total":
                total = sum(v for (n, lbl), v in s.items()
                            if n == "dpdk_vsock_vm_errors_total" and ("cid", str(cid)) in lbl)
                if not between(st0[name], total, st1[name]):
                    wrong.append((f"sum of errors of {cid}", st0[name], total, st1[name]))
            elif name != "cid":
                unknown.append(name)
    for lc, l0 in before[1].items():
        for name, v in l0.items():
            if name in LCORE:
                check(key(LCORE[name], lcore=lc), v, after[1][lc][name])
            elif name in LCORE_CYCLES:
                check(key(LCORE_CYCLES[name], lcore=lc), v / hz, after[1][lc][name] / hz)
            elif name == "nb_vms":
                check(key("dpdk_vsock_lcore_vms", lcore=lc), min(v, after[1][lc][name]),
                      max(v, after[1][lc][name]))
            elif name != "lcore_id":
                unknown.append(f"lcore.{name}")
    ok(not unknown, f"every telemetry counter has a metric here (not: {unknown})")
    ok(not missing, f"every counter of every VM, ring and lcore is on the page "
       f"({len(missing)} missing: {missing[:4]})")
    ok(not wrong, f"each equal to telemetry's before and after ({len(wrong)} not: {wrong[:3]})")
    helps = set(re.findall(r"^# HELP (\S+) \S", page, re.M))
    types = dict(re.findall(r"^# TYPE (\S+) (\w+)$", page, re.M))
    names = {re.sub(r"_(bucket|count|sum)$", "", n) if types.get(
        re.sub(r"_(bucket|count|sum)$", "", n)) == "histogram" else n for n, _ in s}
    ok(names and names <= helps and names <= set(types),
       f"HELP and TYPE for each of the {len(names)} metrics "
       f"(without: {sorted(names - helps - set(types))[:4]})")
    bad = [n for n in names if (types.get(n) == "counter") != n.endswith("_total")]
    ok(not bad, f"counters and only counters end in _total (not: {bad})")
    info = [lbl for (n, lbl) in s if n == "dpdk_vsock_info"]
    ver = subprocess.run([APP, "--", "--version"], capture_output=True, text=True).stdout
    ok(len(info) == 1 and ("version", before[0]["version"]) in info[0] and
       f"dpdk-vsock-app {before[0]['version']} " in ver,
       f"dpdk_vsock_info: {dict(info[0]) if info else None}")
    ok(s.get(key("dpdk_vsock_up")) == 1, "dpdk_vsock_up 1")
    return page


def check_promtool(page):
    run = subprocess.run(["promtool", "check", "metrics"], input=page, capture_output=True,
                         text=True, timeout=60)
    ok(run.returncode == 0 and not run.stdout.strip() and not run.stderr.strip(),
       f"promtool check metrics accepts the page, no lint "
       f"(rc {run.returncode}: {(run.stdout + run.stderr).strip()[:300]})")


def check_openmetrics(exp):
    code, page = exp.page("application/openmetrics-text; version=1.0.0")
    try:
        n = sum(len(f.samples) for f in om_families(page))
    except ValueError as e:
        n = f"unparsable: {e}"
    ok(code == 200 and page.endswith("# EOF\n") and isinstance(n, int) and n > 100,
       f"OpenMetrics when asked: {n} samples, ends with # EOF")


def guide_queries():
    """The PromQL lines of the operators' guide's ```promql blocks."""
    text = open(GUIDE).read()
    blocks = re.findall(r"^```promql\n(.*?)^```", text, re.M | re.S)
    return [q for b in blocks for q in b.splitlines() if q.strip() and not q.startswith("#")]


def check_prometheus(exp, guest):
    prom = Prometheus(exp.port)
    if not ok(prom.ready(), f"prometheus ready on 127.0.0.1:{prom.port}"):
        dump("prometheus")
        return
    g2h = 'dpdk_vsock_vm_guest_to_host_bytes_total{cid="3",job="vsock"}'
    h2g = 'dpdk_vsock_vm_host_to_guest_bytes_total{cid="3",job="vsock"}'
    got, v = prom.wait_value(g2h, 0)
    ok(got and prom.value('up{job="vsock"}') == 1,
       f"prometheus scrapes the exporter: VM 3's guest->host bytes {v} before the stream")
    ok(guest.cmd("connect 5000") == "CONNECTED", "the guest connects to a host program")
    ok(guest.cmd(f"send {G2H[0]}") == f"SENT {G2H[0]}", f"{G2H[0]} bytes guest -> host")
    got, v = prom.wait_value(g2h, G2H[0])
    ok(got, f"prometheus, the stream midway (connection open): {v}, exactly {G2H[0]}")
    got, v = prom.wait_value('dpdk_vsock_vm_connections{cid="3"}', 1)
    ok(got, f"prometheus: VM 3 has {v} open connection")
    ok(guest.cmd(f"send {G2H[1]}") == f"SENT {G2H[1]}",
       f"{G2H[1]} bytes more, prometheus scraping meanwhile")
    ok(guest.cmd(f"recv {H2G}") == f"RECEIVED {H2G}", f"{H2G} bytes host -> guest")
    got, v = prom.wait_value(g2h, sum(G2H))
    ok(got, f"prometheus, the stream done: VM 3's guest->host bytes {v}, exactly {sum(G2H)}")
    got, v = prom.wait_value(h2g, H2G)
    ok(got, f"prometheus: VM 3's host->guest bytes {v}, exactly {H2G}")
    status, result = prom.query(f"{g2h}[10m]")
    seen = [float(x[1]) for r in result for x in r["values"]]
    ok(status == "success" and len(result) == 1 and seen == sorted(seen) and
       {0, G2H[0], sum(G2H)} <= set(seen) and max(seen) == sum(G2H),
       f"every sample of it: {len(seen)}, from 0 through {G2H[0]} to {sum(G2H)}, "
       "never down")
    for q in guide_queries():
        status, result = prom.query(q)
        vals = {r["metric"].get("cid"): float(r["value"][1]) for r in result}
        if "connections_limit" in q:
            good = vals.get("3") == 1 / 1023 and vals.get("5") == 0
        elif "stalls" in q:
            good = len(result) == 2 * 5
        else:
            good = vals.get("3", 0) > 0 and vals.get("5") == 0
        ok(status == "success" and good, f"the guide's {q}: {len(result)} series, {vals}")
    ok(guest.cmd("close") == "CLOSED", "the guest resets the connection")
    got, v = prom.wait_value('dpdk_vsock_vm_connections_closed_total{cid="3"}', 1)
    ok(got and prom.value('dpdk_vsock_vm_connections{cid="3"}') == 0,
       "prometheus: the connection closed, none open")
    prom.p.terminate()
    ok(ended(prom.p) == 0, "prometheus stops")


class Scraper(threading.Thread):
    """Fetches pages without pause; each must be whole, whatever the app goes through."""

    def __init__(self, exp):
        super().__init__(daemon=True)
        self.exp, self.stop, self.pages, self.down = exp, False, 0, 0
        self.bad, self.vm_sets, self.last = [], set(), {}

    def run(self):
        while not self.stop:
            code, page = self.exp.page()
            self.pages += 1
            try:
                s = samples(page) if code == 200 and page.endswith("\n") else None
            except ValueError:
                s = None
            if s is None:
                self.bad.append(f"HTTP {code}, {len(page)} bytes")
                continue
            if s.get(key("dpdk_vsock_up")) != 1:
                self.down += 1
                continue
            cids = {dict(lbl)["cid"] for n, lbl in s if n == "dpdk_vsock_vm_info"}
            self.vm_sets.add(tuple(sorted(cids, key=int)))
            for name in PER_VM:
                have = {dict(lbl)["cid"] for n, lbl in s if n == name}
                if have != cids:
                    self.bad.append(f"{name}: VMs {sorted(have)} of {sorted(cids)}")
            for name in PER_RING:
                have = {(dict(lbl)["cid"], dict(lbl)["queue"]) for n, lbl in s if n == name}
                if have != {(c, q) for c in cids for q in ("rx", "tx")}:
                    self.bad.append(f"{name}: rings {sorted(have)}")
            # Within one app's life (its lcore keeps polling), a counter never goes down.
            polls = s.get(key("dpdk_vsock_lcore_polls_total", lcore=1), 0)
            now = {k: v for k, v in s.items() if k[0] == VM["from_guest_bytes"]}
            if polls >= self.last.get("polls", 0):
                for k, v in now.items():
                    if v < self.last.get(k, 0):
                        self.bad.append(f"{k} went down: {self.last[k]} -> {v}")
            self.last = dict(now, polls=polls)


def check_churn(exp, app, guest):
    scraper = Scraper(exp)
    scraper.start()
    cycles = 0
    for _ in range(4):
        cycles += guest.cmd("detach") == "DETACHED" and guest.cmd("attach") == "ATTACHED" and \
            guest.cmd("connect 5001") == "CONNECTED" and \
            guest.cmd("send 65536") == "SENT 65536" and guest.cmd("close") == "CLOSED"
    ok(cycles == 4, f"pages fetched while the guest detached and attached {cycles} times, "
       "a connection and 64 KiB each time")
    guest.cmd("detach")
    status = app.stop()
    app = App([3, 5, 7], "app2.log")
    up = app.ready()
    ok(status == 0 and up and guest.cmd("attach") == "ATTACHED",
       "meanwhile the app restarts with VM 7 added, the guest attaches again")
    wait_for(lambda: ("3", "5", "7") in scraper.vm_sets)
    scraper.stop = True
    scraper.join(WAIT)
    ok(not scraper.bad and scraper.pages > 20,
       f"{scraper.pages} pages, each whole ({len(scraper.bad)} not: {scraper.bad[:3]})")
    ok(scraper.down > 0 and scraper.vm_sets == {("3", "5"), ("3", "5", "7")},
       f"{scraper.down} while the app was away (dpdk_vsock_up 0), then VMs "
       f"{sorted(scraper.vm_sets)}")
    return app


def main():
    check_cli()
    app = App([3, 5], "app.log")
    exp = guest = None
    try:
        if not ok(app.ready(), "app started with VMs 3 and 5"):
            return
        exp = Exporter()
        code, page = wait_for(lambda: (lambda r: r if r[0] == 200 else None)(exp.page()))
        ok(code == 200 and "dpdk_vsock_up 1.0" in page, f"the exporter answers on {exp.url}")
        # Bursts and cycles counted, so that their metrics carry numbers.
        app.console("set record-burst-stats on")
        app.console("set record-core-cycles on")
        guest = Guest(3)
        if not ok(guest.started == "ATTACHED", "a guest attached to VM 3"):
            return
        check_prometheus(exp, guest)
        page = check_page(exp, [3, 5])
        check_promtool(page)
        check_openmetrics(exp)
        app = check_churn(exp, app, guest)
        ok(guest.stop() == 0, "the guest detaches")
        exp.p.send_signal(signal.SIGTERM)
        ok(ended(exp.p) == 0, "the exporter exits 0 on SIGTERM")
        ok(app.stop() == 0, "the app exits 0 on SIGTERM")
    finally:
        if tap.failed:
            for f in ("exporter", "app.log", "app2.log", "guest.err", "prometheus"):
                dump(f)
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(EAL_DIR, ignore_errors=True)


main()
tap.done()
