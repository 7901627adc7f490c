# SPDX-License-Identifier: MIT
# /lib/ulrig.sh in a rig guest: helpers for the guest scripts (". /lib/ulrig.sh").
# Every wait is bounded: a guest that waits forever holds its qemu until the
# host's timeout, and the test learns nothing from it.

# ulrig_mark NAME: tell the other guests (and the host) NAME happened
ulrig_mark() { : >"/host/$1"; }

# ulrig_wait_file NAME SECS: wait for /host/NAME (another guest's mark)
ulrig_wait_file() {
	_n=$(($2 * 10))
	while [ ! -e "/host/$1" ]; do
		[ $_n -gt 0 ] || { echo "ulrig: /host/$1 not there after $2 s" >&2; return 1; }
		sleep 0.1
		_n=$((_n - 1))
	done
}

# ulrig_wait_socket PATH [SECS]: wait for a program's unix socket (ulnetd's
# control socket), 10 s by default
ulrig_wait_socket() {
	_n=$((${2:-10} * 10))
	while [ ! -S "$1" ]; do
		[ $_n -gt 0 ] || { echo "ulrig: no socket $1 after ${2:-10} s" >&2; return 1; }
		sleep 0.1
		_n=$((_n - 1))
	done
}

# ulrig_wait_grep PATTERN FILE [SECS]: wait for a line of FILE (a program's
# log) matching PATTERN (grep's basic regexp), 10 s by default; prints the
# matching lines, or says what it missed and returns 1
ulrig_wait_grep() {
	_n=$((${3:-10} * 10))
	until grep -q "$1" "$2" 2>/dev/null; do
		[ $_n -gt 0 ] || { echo "ulrig: no '$1' in $2 after ${3:-10} s" >&2; return 1; }
		sleep 0.1
		_n=$((_n - 1))
	done
	grep -h "$1" "$2"
}

# ulrig_retry TRIES DELAY CMD...: run CMD until it succeeds, at most TRIES times
# (a client started before its server listens fails at once: try again)
ulrig_retry() {
	_tries=$1 _delay=$2
	shift 2
	while :; do
		"$@" && return 0
		_tries=$((_tries - 1))
		[ $_tries -gt 0 ] || return 1
		sleep "$_delay"
	done
}

# ulrig_gid_index [DEV] [PORT]: the index of DEV's RoCE v2 GID that maps eth0's
# IPv4 address (::ffff:a.b.c.d), which ibv_rc_pingpong -g and perftest -x want;
# the kernel fills the GID table shortly after rxe0 appears: up to 10 s
ulrig_gid_index() {
	_dev=${1:-rxe0} _port=${2:-1}
	_want=$(echo "$ULRIG_IP" | awk -F. '{ printf "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", $1, $2, $3, $4 }')
	_d=/sys/class/infiniband/$_dev/ports/$_port
	_n=100
	while [ $_n -gt 0 ]; do
		for _g in "$_d"/gids/*; do
			_i=${_g##*/}
			if [ "$(cat "$_g" 2>/dev/null)" = "$_want" ] &&
				[ "$(cat "$_d/gid_attrs/types/$_i" 2>/dev/null)" = "RoCE v2" ]; then
				echo "$_i"
				return 0
			fi
		done
		sleep 0.1
		_n=$((_n - 1))
	done
	echo "ulrig: no RoCE v2 GID $_want on $_dev port $_port" >&2
	return 1
}

# ulrig_rxe_counters [DEV] [PORT]: DEV's non-zero hardware counters on one
# line ("rxe counters of rxe0: sent_pkts=... rcvd_seq_err=..."): retransmissions,
# sequence errors and retry failures say whether RoCE packets were lost when
# a transfer stalled
ulrig_rxe_counters() {
	_d=/sys/class/infiniband/${1:-rxe0}/ports/${2:-1}/hw_counters
	_line=
	for _c in "$_d"/*; do
		_v=$(cat "$_c" 2>/dev/null) || continue
		[ "$_v" = 0 ] || _line="$_line ${_c##*/}=$_v"
	done
	echo "rxe counters of ${1:-rxe0}:${_line:- none}"
}

# ulrig_diag [PID]: the guest's network state for a failed test's report:
# each NIC's packet counters, the neighbour table, the rxe devices' counters,
# the kernel's last messages (the console shows only errors), and PID's
# threads with where each waits in the kernel (a thread stuck in a verbs
# call shows there)
ulrig_diag() {
	echo "uptime $(cut -d' ' -f1 /proc/uptime) s"
	for _n in /sys/class/net/eth*; do
		echo "${_n##*/}: $(cat "$_n/operstate") tx $(cat "$_n/statistics/tx_packets") rx $(cat "$_n/statistics/rx_packets") packets"
	done
	cat /proc/net/arp
	for _d in /sys/class/infiniband/*; do
		[ -e "$_d" ] && ulrig_rxe_counters "${_d##*/}"
	done
	dmesg | grep -v "speed is unknown" | tail -n 80 # the o2ib LND queries its port each second; rxe then logs that virtio-net has no speed
	[ -n "${1:-}" ] || return 0
	for _t in /proc/"$1"/task/*; do
		echo "thread ${_t##*/} $(cat "$_t/comm") $(cut -d' ' -f3 "$_t/stat") in $(cat "$_t/wchan")"
		sed 's/^/    /' "$_t/stack" 2>/dev/null
	done
}
