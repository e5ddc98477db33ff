# SPDX-License-Identifier: BSD-3-Clause
"""TAP output for the Python tests here, as lib/vsock_harness/tap.h is for the C ones."""
import sys

n = 0
failed = False


def ok(cond, what):
    """One TAP line; returns whether cond held, as tap_ok() does in C."""
    global n, failed
    n += 1
    failed |= not cond
    print(f"{'ok' if cond else 'not ok'} {n} - {what}", flush=True)
    return bool(cond)


def skip(what, why):
    """A check that cannot run here, and why (a TAP SKIP)."""
    global n
    n += 1
    print(f"ok {n} - {what} # SKIP {why}", flush=True)


def done():
    """The plan, then the exit status."""
    print(f"1..{n}")
    sys.exit(1 if failed else 0)
