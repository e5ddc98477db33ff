#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The app under systemd (Type=notify): with NOTIFY_SOCKET set it sends READY=1 once every
VM's vhost-user and hybrid vsock sockets are listening (each connectable when the message
arrives), and STOPPING=1 when SIGTERM starts the shutdown, then exits 0.
Usage: test_notify.py APP HAVE_LIBSYSTEMD (TAP)."""
import os
import select
import signal
import socket
import subprocess
import sys

import tap
from tap import ok
import tempfile
import time

app, have = sys.argv[1], sys.argv[2] == "true"


def recv_until(sock, want, timeout, proc):
    """Datagrams until one holds the line @want, the app exits, or @timeout s."""
    seen = []
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if select.select([sock], [], [], 0.2)[0]:
            msg = sock.recv(4096).decode(errors="replace")
            seen.append(msg)
            if want in msg.split("\n"):
                return True, seen
        elif proc.poll() is not None:
            break
    return False, seen


if not have:
    print("1..0 # SKIP built without libsystemd (-Dsystemd=disabled)")
    sys.exit(0)

with tempfile.TemporaryDirectory(prefix="vsock-notify-") as d:
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(f"{d}/notify")
    socks = [f"{d}/vm3.sock", f"{d}/vm3.vsock", f"{d}/vm4.sock", f"{d}/vm4.vsock"]
    env = dict(os.environ, NOTIFY_SOCKET=f"{d}/notify")
    log = open(f"{d}/log", "w+")
    proc = subprocess.Popen([app, "-l", "0-1", "--no-huge", "-m", "512", "--no-pci",
                             "--no-shconf", "--log-level=lib.eal:error", "--",
                             "--mbufs", "1024",
                             "--vm", f"cid=3,socket={socks[0]},uds={socks[1]}",
                             "--vm", f"cid=4,socket={socks[2]},uds={socks[3]}"],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        got, seen = recv_until(notify, "READY=1", 120, proc)
        ok(got, f"READY=1 arrives ({seen})")
        # Checked right after the message: the app had them listening before it sent it.
        listening = []
        for path in socks:
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                c.connect(path)
                listening.append(path)
            except OSError as e:
                print(f"# {path}: {e}")
            c.close()
        ok(got and len(listening) == len(socks),
           "every vhost-user and hybrid vsock socket accepts a connection when READY=1 arrives")
        proc.send_signal(signal.SIGTERM)
        got, seen = recv_until(notify, "STOPPING=1", 60, proc)
        ok(got, f"STOPPING=1 on SIGTERM ({seen})")
        try:
            rc = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            rc = None
        ok(rc == 0, f"exit status 0 after SIGTERM (got {rc})")
        log.seek(0)
        out = log.read()
        ok("\x1b" not in out, "no terminal escapes in what the journal would record")
        if tap.failed:
            print("".join(f"# {l}\n" for l in out.splitlines()[-20:]), end="")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
tap.done()
