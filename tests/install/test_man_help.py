#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The man page and --help stay in step: every application option the app's --help
lists is described in dpdk-vsock-app(8)'s OPTIONS, and every option described there is
in --help; the same for the console commands (the running console's "help" against CONSOLE),
and for dpdk-vsock-exporter's --help and dpdk-vsock-exporter(8).
Usage: test_man_help.py APP MANPAGE EXPORTER EXPORTER-MANPAGE (TAP)."""
import re
import subprocess
import sys

import tap
from tap import ok
import tempfile

app, manpage, exporter, exporter_manpage = sys.argv[1:5]


def man_section(text, name):
    """The roff source of one .SH section."""
    m = re.search(r"^\.SH " + re.escape(name) + r"\n(.*?)(?=^\.SH |\Z)", text, re.M | re.S)
    return m.group(1) if m else ""


def tagged_lines(section):
    """The tag line after each .TP (the term being described), roff markup removed."""
    lines = section.split("\n")
    tags = [lines[i + 1] for i, l in enumerate(lines[:-1]) if l == ".TP"]
    tags = [re.sub(r"^\.[BIR]+ |\\f[BIR]|\\c", "", t).replace("\\-", "-") for t in tags]
    return [t.replace('"', "").strip() for t in tags]


OPT = re.compile(r"(?<![\w-])(--[a-z][a-z-]*|-[a-z])\b")



def same_options(cmd, page, least):
    """The options cmd's --help lists against those page's OPTIONS describes."""
    name = cmd[0].split("/")[-1]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    ok(run.returncode == 0 and "sage:" in run.stdout, f"{name} --help exits 0")
    help_opts = set(OPT.findall(run.stdout)) - {"--"}
    man_opts = set()
    for tag in tagged_lines(man_section(open(page).read(), "OPTIONS")):
        man_opts |= set(OPT.findall(tag))
    print(f"# {name} --help: {sorted(help_opts)}")
    print(f"# man OPTIONS: {sorted(man_opts)}")
    ok(len(help_opts) >= least, f"{name} --help lists the options")
    missing = sorted(help_opts - man_opts)
    ok(not missing, f"every {name} --help option is in its man page (missing: {missing})")
    extra = sorted(man_opts - help_opts)
    ok(not extra, f"every option of its man page is in {name} --help (not: {extra})")


same_options([app, "--", "--help"], manpage, 10)
same_options([exporter, "--help"], exporter_manpage, 8)
man = open(manpage).read()

# The console's own "help" lists its commands; CONSOLE in the man page describes each.
with tempfile.TemporaryDirectory(prefix="vsock-man-") as d:
    con = subprocess.run([app, "-l", "0-1", "--no-huge", "-m", "256", "--no-pci",
                          "--no-shconf", "--log-level=lib.eal:error", "--", "-i", "--vm",
                          f"cid=3,socket={d}/vm3.sock,uds={d}/vm3.vsock"],
                         input="help\nquit\n", capture_output=True, text=True, timeout=120)
ok(con.returncode == 0 and "Commands" in con.stdout, "the console's help, then quit: exit 0")
block = con.stdout[con.stdout.find("Commands"):].split("\n")[1:]
cmds = {"help"}	# the command that printed the list
for line in block:
    if not line.startswith("  "):
        break
    words = []
    for w in line.strip().split("  ")[0].split():
        if "<" in w or "|" in w:
            break
        words.append(w)
    cmds.add(" ".join(words))
man_cmds = {re.sub(r"\s+", " ", t.replace('"', " ")).strip()
            for t in tagged_lines(man_section(man, "CONSOLE"))}
print(f"# console: {sorted(cmds)}")
print(f"# man CONSOLE: {sorted(man_cmds)}")
ok(len(cmds) >= 10, "the console's help lists its commands")
missing = sorted(c for c in cmds if not any(m.startswith(c) for m in man_cmds))
ok(not missing, f"every console command is in the man page (missing: {missing})")
extra = sorted(m for m in man_cmds if not any(m.startswith(c) for c in cmds))
ok(not extra, f"every man page command is a console command (not one: {extra})")
tap.done()
