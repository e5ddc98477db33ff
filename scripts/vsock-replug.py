#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plug a running VM's vhost-user-vsock-pci device out and in again, through QEMU's QMP.

After dpdk-vsock-app restarted (an upgrade, a crash), QEMU 7.2 does not set the vsock device up
on the new vhost-user connection by itself (doc/beyond-the-peers.md). Unplugging the device
makes the guest's driver reset every vsock connection at once; plugging it back makes QEMU
open a new vhost-user connection to the new app and the guest driver start over on it. The VM
keeps running; no guest cooperation is needed beyond what PCI hot-plug asks of any guest.

    vsock-replug.py --qmp /run/vm3.qmp --device vsock0

The device must sit on a hot-pluggable bus (q35: a pcie-root-port; pc: any slot of pci.0)
and have an id. Its chardev is re-created with the same id, socket path and role (a client
of the app, or the server an app with client=1 connects to), and the device with the same
id, bus and virtqueue layout. Exit status 0 once the device is back, 1 otherwise.
"""
import argparse
import json
import select
import socket
import sys
import time


class Qmp:
    """A QMP client: one command at a time, events kept for wait_event()."""

    def __init__(self, path, timeout):
        self.timeout = timeout  # for a command's answer: QEMU may talk to the backend first
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buf = b""
        self.events = []
        self.read(timeout)  # the greeting
        self.cmd("qmp_capabilities")

    def read(self, timeout):
        """The next message, or TimeoutError when none came within @timeout seconds."""
        while b"\n" not in self.buf:
            if not select.select([self.sock], [], [], timeout)[0]:
                raise TimeoutError
            chunk = self.sock.recv(65536)
            if not chunk:
                raise RuntimeError("QMP connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def cmd(self, name, **args):
        self.sock.sendall((json.dumps({"execute": name, "arguments": args}) + "\n").encode())
        while True:
            try:
                msg = self.read(self.timeout)
            except TimeoutError:
                raise RuntimeError(f"{name}: no answer from QEMU in {self.timeout} s")
            if "event" in msg:
                self.events.append(msg)
            elif "error" in msg:
                raise RuntimeError(f"{name}: {msg['error'].get('desc', msg['error'])}")
            else:
                return msg.get("return")

    def wait_event(self, name, match, deadline):
        while True:
            for ev in self.events:
                if ev["event"] == name and match(ev.get("data", {})):
                    return
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"no {name} event in time")
            try:
                self.events.append(self.read(left))
            except TimeoutError:
                pass


def chardev_of(qmp, label):
    """(path, server, connected) of socket chardev @label, from query-chardev's filename."""
    for c in qmp.cmd("query-chardev"):
        if c["label"] != label:
            continue
        name = c["filename"]
        connected = not name.startswith("disconnected:")
        name = name.removeprefix("disconnected:")
        if not name.startswith("unix:"):
            raise RuntimeError(f"chardev {label} is not a Unix socket ({c['filename']})")
        opts = name[len("unix:"):].split(",")
        return opts[0], "server=on" in opts[1:], connected
    raise RuntimeError(f"no chardev {label}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--qmp", required=True, help="QEMU's QMP Unix socket")
    ap.add_argument("--device", required=True, help="id of the vhost-user-vsock-pci device")
    ap.add_argument("--timeout", type=float, default=30,
                    help="seconds for the guest to release the device, and for the app to connect")
    a = ap.parse_args()

    qmp = Qmp(a.qmp, a.timeout)
    path = f"/machine/peripheral/{a.device}"
    chardev = qmp.cmd("qom-get", path=path, property="chardev")
    bus = qmp.cmd("qom-get", path=path, property="parent_bus").rsplit("/", 1)[-1]
    packed = qmp.cmd("qom-get", path=path, property="packed")
    sock_path, server, _ = chardev_of(qmp, chardev)
    print(f"{a.device}: chardev {chardev} ({'server' if server else 'client'} of {sock_path}), "
          f"bus {bus}{', packed' if packed else ''}", flush=True)

    qmp.cmd("device_del", id=a.device)
    qmp.wait_event("DEVICE_DELETED", lambda d: d.get("device") == a.device,
                   time.monotonic() + a.timeout)
    print(f"{a.device}: unplugged (the guest reset its vsock connections)", flush=True)

    qmp.cmd("chardev-remove", id=chardev)
    addr = {"type": "unix", "data": {"path": sock_path}}
    deadline = time.monotonic() + a.timeout
    # A client chardev connects at once: an app that is still starting (or replacing the
    # socket a killed one left) is not listening yet, so try again until the timeout.
    while True:
        try:
            qmp.cmd("chardev-add", id=chardev,
                    backend={"type": "socket",
                             "data": {"addr": addr, "server": server, "wait": False}
                             if server else {"addr": addr, "server": False}})
            break
        except RuntimeError:
            if server or time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    # QEMU talks to the backend while it realizes the device: an app with client=1 must
    # have connected to the new server socket first (it retries every second).
    while not chardev_of(qmp, chardev)[2]:
        if time.monotonic() > deadline:
            raise RuntimeError(f"no app connected to {sock_path}")
        time.sleep(0.2)

    qmp.cmd("device_add", driver="vhost-user-vsock-pci", id=a.device, chardev=chardev, bus=bus,
            packed=packed)
    print(f"{a.device}: plugged in again on the new vhost-user connection", flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, RuntimeError) as e:
        print(f"vsock-replug: {e}", file=sys.stderr)
        sys.exit(1)
