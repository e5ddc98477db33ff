# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=sh
# pid_NAME is set through eval, host_timeout by the script that calls host()
# shellcheck disable=SC2154
#
# Sourced by the QEMU test scripts (tests/qemu/test_*.sh): TAP output, the
# scratch directory, starting and stopping the app, host uds-io programs, and
# a cleanup on exit that stops whatever a failed test left running.
#
#   . "$(dirname "$0")/lib.sh"
#   qemu_test_init NAME VAR...    skip without QEMU, check meson's variables
#   start_app EAL-ARGS... -- APP-ARGS...; wait_sockets "TAP NAME" SOCK...
#   ... ok STATUS NAME ...
#   stop_app; tap_done
#
# Variables the cleanup reads, kept up to date by the script:
#   app      pid of the app (start_app sets it; empty once it was reaped)
#   qemu     pids of QEMU runs (run-guest.sh) still going, space-separated
#   hosts    names of the host programs started with host()
#   scratch  more paths to remove, space-separated
# diag_lines (default 60) bounds how much of a file diag_file shows.

n=0
failed=0
app=
qemu=
hosts=
scratch=

ok() {	# STATUS NAME...: one TAP line, STATUS 0 meaning pass
	st=$1
	shift
	n=$((n + 1))
	if [ "$st" -eq 0 ]; then
		echo "ok $n - $*"
	else
		echo "not ok $n - $*"
		failed=$((failed + 1))
	fi
}

diag_file() {	# TITLE FILE: the end of FILE as TAP diagnostics
	echo "# --- $1 ---"
	sed 's/^/#   /' "$2" 2>/dev/null | tail -n "${diag_lines:-60}"
}

# The plan comes last because the number of tests depends on what ran; the
# status is the script's, so it must be the last command.
tap_done() {
	echo "1..$n"
	[ $failed -eq 0 ]
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# kill -0 would also succeed on a child that exited but is not reaped yet
alive() {
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
	[ -n "$st" ] && [ "$st" != Z ]
}

# qemu_test_init NAME VAR...: skip the whole test when QEMU is missing, bail
# out when tests/qemu/meson.build did not set a VAR, make the scratch
# directory $work (/tmp/vsock-NAME-*) and clean up on any exit.
qemu_test_init() {
	name=$1
	shift
	if ! command -v qemu-system-x86_64 >/dev/null; then
		echo "1..0 # SKIP qemu-system-x86_64 not installed"
		exit 0
	fi
	for v in "$@"; do
		eval "[ -n \"\${$v:-}\" ]" || { echo "Bail out! $v not set"; exit 1; }
	done
	work=$(mktemp -d "/tmp/vsock-$name-XXXXXX")
	trap cleanup EXIT
	trap 'exit 1' INT TERM
}

cleanup() {
	for h in $hosts; do
		eval "p=\$pid_$h"
		kill -KILL "$p" 2>/dev/null
	done
	# SIGTERM, not SIGKILL: run-guest.sh's timeout(1) passes it on to QEMU
	for q in $qemu; do
		kill -TERM "$q" 2>/dev/null
	done
	[ -n "$app" ] && kill -KILL "$app" 2>/dev/null
	# shellcheck disable=SC2086 # a list of paths
	rm -rf "$work" $scratch
}

# start_app EAL-ARGS... -- APP-ARGS...: the app in the background with the
# EAL options every test needs, log in $work/app.log, pid in $app
start_app() {
	"$VSOCK_APP" --no-huge -m 512 --no-pci --no-shconf --log-level=lib.eal:error "$@" \
		>"$work/app.log" 2>&1 &
	app=$!
}

# wait_sockets NAME SOCK...: the app creates every vhost-user SOCK within
# 20 s; one TAP line NAME, and the test bails out without them.
wait_sockets() {
	what=$1
	shift
	i=0
	for s in "$@"; do
		while [ ! -S "$s" ] && [ $i -lt 200 ] && alive "$app"; do
			sleep 0.1
			i=$((i + 1))
		done
	done
	missing=
	for s in "$@"; do
		[ -S "$s" ] || missing="$missing $s"
	done
	[ -z "$missing" ]
	ok $? "$what"
	if [ -n "$missing" ]; then
		diag_file "app log" "$work/app.log"
		echo "Bail out! the app did not start"
		exit 1
	fi
}

# stop_app: SIGTERM, then one TAP line on how the app exited (0 within 10 s)
stop_app() {
	kill -TERM "$app"
	i=0
	while alive "$app" && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if alive "$app"; then
		ok 1 "app exits on SIGTERM within 10 s"
		kill -KILL "$app"
		wait "$app"
	else
		wait "$app"
		st=$?
		ok $st "app exits with status 0 on SIGTERM (got $st)"
	fi
	app=
}

# host NAME ARGS...: tests/host/uds-io (UDS_IO) in the background, giving up
# after $host_timeout s; output in $work/NAME.out and .err, pid in pid_NAME,
# start time in start_NAME, end_NAME empty for the script to fill.
host() {
	name=$1
	shift
	"$UDS_IO" --timeout "$host_timeout" "$@" >"$work/$name.out" 2>"$work/$name.err" &
	eval "pid_$name=$! start_$name=$(now_ms) end_$name="
	hosts="$hosts $name"
}

host_line() {	# NAME KIND: the first line of that kind host program NAME printed
	grep "^$2 " "$work/$1.out" | head -n 1
}

host_has() {	# NAME KIND: whether host program NAME printed a line of that kind
	grep -q "^$2 " "$work/$1.out"
}

# wait_for PID TENTHS CMD...: run CMD every 0.1 s until it succeeds, at most
# TENTHS more times and while process PID lives; the status is CMD's last. Giving
# up prints a TAP diagnostic naming what it waited for.
wait_for() {
	wpid=$1
	wtenths=$2
	wleft=$2
	shift 2
	until "$@"; do
		if [ "$wleft" -le 0 ] || ! alive "$wpid"; then
			if alive "$wpid"; then
				echo "# gave up after $((wtenths / 10)) s waiting for: $*"
			else
				echo "# gave up waiting for: $* (pid $wpid ended)"
			fi
			return 1
		fi
		sleep 0.1
		wleft=$((wleft - 1))
	done
}

field() {	# LINE N: the Nth word
	echo "$1" | cut -d' ' -f"$2"
}
