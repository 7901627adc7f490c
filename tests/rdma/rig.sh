# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# rig.sh - the soft-RoCE rig's host side, sourced by the tests of tests/rdma/:
#
#   . tests/rdma/rig.sh
#   rig_init                  run directory, share, image, accelerator; traps
#   (write "$RIG_SHARE/guest-<id>.sh" for each guest: /init runs it)
#   rig_up N                  netns + bridge + N taps; boots guests 1..N
#   rig_wait                  until every guest has powered off (bounded)
#   rig_rc ID, rig_log ID     a guest script's exit status and its output
#   rig_down                  kills what is left, deletes the netns (rig_exit, the EXIT trap)
#
# Guest <id> is 10.210.0.<10+id>/24 on eth0 with rxe0 over it; the bridge
# (10.210.0.1) lives in the netns ulrig-<pid> that rig_up makes and rig_down
# deletes: the host's own network is never touched. The guests share
# RIG_SHARE (9p, mounted at /host); RIG_BIN_DIR (default: ULNET_BIN), when set,
# is shared read-only at /ulnet/bin, first in the guests' PATH.
#
# Knobs (environment):
#   RIG_DIR             the image (default: $ULNET_BUILD/rdma-rig, else build/rdma-rig):
#                       per build tree, as it holds the libraries of its ulnet
#   RIG_CACHE           the guest kernel (.deb, extracted) and the KVM verdict,
#                       shared by build trees (default: ~/.cache/ulnet-rig)
#   RIG_ACCEL           kvm or tcg: force one (default: KVM when it works)
#   RIG_GUEST_TIMEOUT   seconds a guest may live (default 180 with KVM, 600 with TCG)
#   RIG_MEM             guest memory in MiB (default 512)
#   RIG_RAILS=2         a second NIC per guest (eth1, 10.210.0.<40+id>/24,
#                       rig_ip2) on the same bridge, with rxe1 over it
#   RIG_KEEP=1          keep the run directory (logs, consoles) after rig_down
#   RIG_PCAP=FILE       capture the bridge's RoCE v2 (UDP 4791) and ARP
#                       packets into FILE (pcapng, 160 bytes of each) while
#                       the guests run: dumpcap, from the wireshark packages

RIG_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RIG_ROOT=$(cd "$RIG_SRC/../.." && pwd)
RIG_DIR=${RIG_DIR:-${ULNET_BUILD:-$RIG_ROOT/build}/rdma-rig}
RIG_CACHE=${RIG_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/ulnet-rig}
export RIG_CACHE # for rig-image.sh
RIG_MEM=${RIG_MEM:-512}
RIG_BIN_DIR=${RIG_BIN_DIR:-${ULNET_BIN:-}}
RIG_NS=ulrig-$$
RIG_N=0
RIG_RUN=
RIG_SHARE=
RIG_PIDS=()   # the timeout(1) wrapping each guest's qemu
RIG_START=()  # when each guest was started (s since the epoch, with ns)
RIG_BOOT_S=() # seconds from start to the guest's "running /host/guest-<id>.sh"
RIG_ACCEL_ARGS=()

rig_say() { echo "rig: $*" >&2; }
rig_now() { date +%s.%N; }
rig_elapsed() { awk -v a="$1" -v b="$(rig_now)" 'BEGIN { printf "%.1f", b - a }'; }

# the bridge's address in the netns: the guests' /init asks it for its MAC
# (ARP) to tell a stalled emulated NIC (rig_emulator_faults)
RIG_BRIDGE_IP=10.210.0.1
# rig_ip ID: the guest's address
rig_ip() { echo "10.210.0.$((10 + $1))"; }
# rig_ip2 ID: guest ID's address on its second rail (eth1, RIG_RAILS=2)
rig_ip2() { echo "10.210.0.$((40 + $1))"; }

# rig_accel: sets RIG_ACCEL (kvm or tcg) and RIG_ACCEL_ARGS. KVM is tried for
# real, by booting the image to its /init (ulrig.probe=1: it powers off at
# once): /dev/kvm can be there and yet refuse the host CPU model (nested KVM
# that cannot set IA32_ARCH_CAPABILITIES aborts qemu), or run no ordinary
# kernel (a PVM host, kvm-pvm, takes minutes to get nowhere). The verdict is
# kept in RIG_CACHE/accel for this host kernel, qemu and guest kernel.
RIG_KVM_PROBE_S=${RIG_KVM_PROBE_S:-20}
rig_kernel() { # the guest kernel: vmlinux (PVH entry) when the image has one
	if [[ -f $RIG_DIR/vmlinux ]]; then echo "$RIG_DIR/vmlinux"; else echo "$RIG_DIR/vmlinuz"; fi
}
rig_kvm_boots() { # CPU: 0 when the image boots to /init with KVM and CPU
	local log=$RIG_RUN/probe.log p t
	rm -f "$log"
	timeout -k 2 "$RIG_KVM_PROBE_S" qemu-system-x86_64 -M pc -accel kvm -cpu "$1" -m "$RIG_MEM" \
		-nodefaults -no-user-config -display none -no-reboot -monitor none \
		-serial "file:$log" -kernel "$(rig_kernel)" -initrd "$RIG_DIR/initramfs.img" \
		-append "console=ttyS0 panic=-1 quiet ulrig.probe=1" >"$RIG_RUN/probe-qemu.log" 2>&1 &
	p=$!
	wait "$p" 2>/dev/null || t=$?
	grep -q "ulrig: probe ok" "$log" 2>/dev/null && return 0
	[[ ${t:-0} == 124 || ${t:-0} == 137 ]] && return 2 # it ran, did not boot
	return 1                                          # qemu refused
}
rig_accel() {
	local cpu key r=1 cache=$RIG_CACHE/accel
	if [[ ${RIG_ACCEL:-} != tcg && -r /dev/kvm && -w /dev/kvm ]]; then
		key="$(uname -r) $(qemu-system-x86_64 --version | head -n 1) $(cat "$RIG_DIR/kver") $(basename "$(rig_kernel)")"
		if [[ -f $cache && $(head -n 1 "$cache") == "$key" ]]; then
			cpu=$(sed -n 2p "$cache")
			r=0
			[[ $cpu == none ]] && r=1
		else
			for cpu in host host,-arch-capabilities; do
				r=0
				rig_kvm_boots "$cpu" || r=$?
				[[ $r == 1 ]] || break # booted, or a CPU model would not help
			done
			[[ $r == 0 ]] || cpu=none
			printf '%s\n%s\n' "$key" "$cpu" >"$cache"
		fi
		if [[ $r == 0 ]]; then
			RIG_ACCEL=kvm
			RIG_ACCEL_ARGS=(-accel kvm -cpu "$cpu")
			return 0
		fi
		if [[ ${RIG_ACCEL:-} == kvm ]]; then
			rig_say "RIG_ACCEL=kvm, but the guest does not boot with KVM here ($cache)"
			return 1
		fi
		rig_say "the guest does not boot with KVM here ($cache): TCG"
	fi
	RIG_ACCEL=tcg
	RIG_ACCEL_ARGS=(-accel tcg -cpu max)
}

# rig_init: the run directory and share, the image (built or found up to
# date), the accelerator; traps that run rig_down on any exit
rig_init() {
	RIG_RUN=$(mktemp -d "${TMPDIR:-/tmp}/ulrig.XXXXXX")
	RIG_SHARE=$RIG_RUN/share
	mkdir -p "$RIG_SHARE"
	trap 'rig_exit $?' EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	local t0 rc=0
	t0=$(rig_now)
	RIG_LIBS_FROM=$RIG_BIN_DIR "$RIG_SRC/rig-image.sh" "$RIG_DIR" || rc=$?
	RIG_IMAGE_S=$(rig_elapsed "$t0")
	[[ $rc == 0 ]] || return "$rc"
	rig_accel || return 1
	if [[ -z ${RIG_GUEST_TIMEOUT:-} ]]; then
		RIG_GUEST_TIMEOUT=180
		[[ $RIG_ACCEL == kvm ]] || RIG_GUEST_TIMEOUT=600
	fi
	rig_say "image $RIG_DIR ($(cat "$RIG_DIR/kver"), ${RIG_IMAGE_S}s), $RIG_ACCEL (${RIG_ACCEL_ARGS[*]}), run dir $RIG_RUN"
}

# rig_reap: deletes the netns of rigs whose process is gone (killed with
# SIGKILL, as ctest does at its timeout, a rig has no chance to run rig_down;
# its guests power themselves off at their own timeout). Only ulrig-<pid>
# names, only for pids that no longer exist.
rig_reap() {
	local ns
	for ns in $(ip netns list 2>/dev/null | awk '$1 ~ /^ulrig-[0-9]+$/ { print $1 }'); do
		if ! kill -0 "${ns#ulrig-}" 2>/dev/null; then
			if ip netns del "$ns" 2>/dev/null; then rig_say "deleted $ns, left by a rig that is gone"; fi
		fi
	done
}

# rig_net N: the netns, its bridge and the guests' taps
rig_net() {
	local i
	rig_reap
	ip netns add "$RIG_NS"
	ip -n "$RIG_NS" link set lo up
	# no STP: the taps forward at once
	ip -n "$RIG_NS" link add br0 type bridge stp_state 0
	ip -n "$RIG_NS" addr add "$RIG_BRIDGE_IP/24" dev br0
	ip -n "$RIG_NS" link set br0 up
	for ((i = 1; i <= $1; i++)); do
		ip -n "$RIG_NS" tuntap add dev "tap$i" mode tap
		ip -n "$RIG_NS" link set "tap$i" master br0
		ip -n "$RIG_NS" link set "tap$i" up
	done
	[[ ${RIG_RAILS:-1} == 2 ]] || return 0
	# the second rail: on the same bridge and subnet, as Lustre's
	# Multi-Rail wants its rails (every NI can reach every peer NI); the
	# guest's /init keeps each address on its own NIC (ARP, source routes)
	for ((i = 1; i <= $1; i++)); do
		ip -n "$RIG_NS" tuntap add dev "tap${i}r2" mode tap
		ip -n "$RIG_NS" link set "tap${i}r2" master br0
		ip -n "$RIG_NS" link set "tap${i}r2" up
	done
}

# rig_up N: boots guests 1..N (their scripts already in RIG_SHARE)
rig_up() {
	local n=$1 i bin_share=()
	[[ $n -ge 1 && $n -le 8 ]] || { rig_say "rig_up: 1 to 8 guests"; return 1; }
	rig_net "$n" || { rig_say "cannot make netns $RIG_NS and its bridge"; return 1; }
	RIG_N=$n
	if [[ -n ${RIG_PCAP:-} ]]; then
		ip netns exec "$RIG_NS" dumpcap -q -i br0 -s 160 -f "udp port 4791 or arp" \
			-w "$RIG_PCAP" >"${RIG_PCAP}.log" 2>&1 &
		RIG_PCAP_PID=$!
		rig_say "capturing br0 into $RIG_PCAP"
	fi
	if [[ -n $RIG_BIN_DIR && -d $RIG_BIN_DIR ]]; then
		bin_share=(-virtfs "local,path=$(cd "$RIG_BIN_DIR" && pwd),mount_tag=bin,security_model=none,readonly=on,id=bin")
	fi
	for ((i = 1; i <= n; i++)); do
		local rail2=() ip2=
		if [[ ${RIG_RAILS:-1} == 2 ]]; then
			rail2=(-netdev "tap,id=n1,ifname=tap${i}r2,script=no,downscript=no"
				-device "virtio-net-pci,netdev=n1,mac=52:54:00:0a:d3:$(printf %02x "$i"),romfile=")
			ip2=" ulrig.ip2=$(rig_ip2 "$i")/24"
		fi
		RIG_START[i]=$(rig_now)
		# timeout bounds the guest's life whatever happens in it; its own
		# scripts are bounded 20 s sooner, so that they report a timeout
		timeout -k 5 "$RIG_GUEST_TIMEOUT" ip netns exec "$RIG_NS" \
			qemu-system-x86_64 -name "ulrig$i" -M pc "${RIG_ACCEL_ARGS[@]}" \
			-m "$RIG_MEM" -smp 1 -nodefaults -no-user-config -display none \
			-no-reboot -monitor none -serial "file:$RIG_RUN/console-$i.log" \
			-pidfile "$RIG_RUN/qemu-$i.pid" \
			-kernel "$(rig_kernel)" -initrd "$RIG_DIR/initramfs.img" \
			-append "console=ttyS0 panic=-1 quiet ulrig.id=$i ulrig.ip=$(rig_ip "$i")/24 ulrig.timeout=$((RIG_GUEST_TIMEOUT - 20))$ip2 ulrig.bridge=$RIG_BRIDGE_IP" \
			-netdev "tap,id=n0,ifname=tap$i,script=no,downscript=no" \
			-device "virtio-net-pci,netdev=n0,mac=52:54:00:0a:d2:$(printf %02x "$i"),romfile=" \
			"${rail2[@]}" \
			-virtfs "local,path=$RIG_SHARE,mount_tag=host,security_model=none,id=host" \
			"${bin_share[@]}" \
			>"$RIG_RUN/qemu-$i.log" 2>&1 </dev/null &
		RIG_PIDS[i]=$!
	done
}

# rig_wait [SECS]: until every guest's qemu has exited, at most SECS (default
# the guests' own timeout and 10 s); notes each guest's boot time on the way
# shellcheck disable=SC2120 # SECS is optional
rig_wait() {
	local limit=${1:-$((RIG_GUEST_TIMEOUT + 10))} t0 i left
	t0=$(date +%s)
	while :; do
		left=0
		for ((i = 1; i <= RIG_N; i++)); do
			if [[ -z ${RIG_BOOT_S[i]:-} ]] && grep -q "ulrig\[$i\]: running" "$RIG_RUN/console-$i.log" 2>/dev/null; then
				RIG_BOOT_S[i]=$(rig_elapsed "${RIG_START[i]}")
			fi
			kill -0 "${RIG_PIDS[i]}" 2>/dev/null && left=$((left + 1))
		done
		[[ $left == 0 ]] && break
		if (($(date +%s) - t0 >= limit)); then
			rig_say "$left guest(s) still running after ${limit}s"
			return 1
		fi
		sleep 0.2
	done
	for ((i = 1; i <= RIG_N; i++)); do
		wait "${RIG_PIDS[i]}" 2>/dev/null || rig_say "guest $i: qemu exited $? ($(tail -n 3 "$RIG_RUN/qemu-$i.log" | tr '\n' ' '))"
	done
	return 0
}

# rig_rc ID: the exit status of guest ID's script (255: it never finished)
rig_rc() { cat "$RIG_SHARE/guest-$1.rc" 2>/dev/null || echo 255; }
# rig_failed_guests N: for each of guests 1..N whose script did not exit 0,
# a FAIL line with its output, its ulnetd's log (when it wrote
# /host/ulnetd-<id>.log) and its console; RIG_FAILED = how many.
rig_failed_guests() {
	local i r n=0
	for ((i = 1; i <= $1; i++)); do
		r=$(rig_rc "$i")
		[[ $r == 0 ]] && continue
		echo "FAIL: guest $i's script exited $r; its output, its ulnetd's, then its console:"
		# (a missing log is no error: under pipefail it would end the test)
		{ sed 's/^/  | /' "$(rig_log "$i")" 2>/dev/null || true; } | tail -n 60
		{ sed 's/^/  d /' "$RIG_SHARE/ulnetd-$i.log" 2>/dev/null || true; } | tail -n 30
		{ sed 's/^/  # /' "$(rig_console "$i")" 2>/dev/null || true; } | tail -n 20
		n=$((n + 1))
	done
	# shellcheck disable=SC2034 # read by the tests
	RIG_FAILED=$n
}
# rig_log ID: the output of guest ID's script
rig_log() { echo "$RIG_SHARE/guest-$1.log"; }
# rig_console ID: guest ID's serial console
rig_console() { echo "$RIG_RUN/console-$1.log"; }

rig_qemu_pid() { # guest $1's qemu, while it runs (not a reused pid)
	local p
	p=$(cat "$RIG_RUN/qemu-$1.pid" 2>/dev/null) || return 0
	if [[ $(cat "/proc/$p/comm" 2>/dev/null) == qemu-system-* ]]; then echo "$p"; fi
	return 0
}

# rig_down: kills the guests left (qemu by its pidfile, then its timeout
# wrapper), deletes the netns (and with it the bridge and taps), and the run
# directory unless RIG_KEEP=1. Safe to call twice. Runs from the EXIT trap of
# scripts under set -e: every command that may fail is an if or has || true.
rig_down() {
	local i p
	for ((i = 1; i <= RIG_N; i++)); do
		p=$(rig_qemu_pid "$i")
		if [[ -n $p ]]; then kill -TERM "$p" 2>/dev/null || true; fi
		if [[ -n ${RIG_PIDS[i]:-} ]]; then kill -TERM "${RIG_PIDS[i]}" 2>/dev/null || true; fi
	done
	for ((i = 1; i <= RIG_N; i++)); do
		p=$(rig_qemu_pid "$i")
		# up to 5 s for each to go, then KILL
		for _ in {1..25}; do
			if [[ -z $p ]] || ! kill -0 "$p" 2>/dev/null; then break; fi
			sleep 0.2
		done
		if [[ -n $p ]]; then kill -KILL "$p" 2>/dev/null || true; fi
		if [[ -n ${RIG_PIDS[i]:-} ]]; then
			kill -KILL "${RIG_PIDS[i]}" 2>/dev/null || true
			wait "${RIG_PIDS[i]}" 2>/dev/null || true
		fi
	done
	RIG_N=0
	if [[ -n ${RIG_PCAP_PID:-} ]]; then
		kill -INT "$RIG_PCAP_PID" 2>/dev/null || true
		wait "$RIG_PCAP_PID" 2>/dev/null || true
		RIG_PCAP_PID=
	fi
	if ip netns list 2>/dev/null | grep -q "^$RIG_NS\b"; then
		ip netns del "$RIG_NS" || rig_say "could not delete netns $RIG_NS"
	fi
	if [[ -n $RIG_RUN && -d $RIG_RUN ]]; then
		if [[ ${RIG_KEEP:-0} == 1 ]]; then
			rig_say "kept $RIG_RUN"
		else
			rm -rf "$RIG_RUN"
		fi
	fi
	RIG_RUN=
	return 0
}

# rig_secs A B: seconds from A to B (date +%s.%N), one decimal
rig_secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# rig_run N: boots guests 1..N and waits until all have powered off; FAILS
# (set to 0 first) counts a wait that ran out and each failed guest. RIG_T1
# and RIG_T2: when the guests were started and when the last powered off.
rig_run() {
	RIG_T1=$(rig_now)
	rig_up "$1" || { echo "FAIL: rig_up"; exit 1; }
	FAILS=0
	if ! rig_wait; then
		echo "FAIL: guests did not power off in time"
		FAILS=$((FAILS + 1))
	fi
	RIG_T2=$(rig_now)
	rig_failed_guests "$1"
	FAILS=$((FAILS + RIG_FAILED))
}

# rig_sanitizer_check: a sanitizer's report in a log of the share (a guest
# program built with ASan, UBSan or TSan) fails the test (FAILS), the
# report printed (its first 60 lines: the log may be gone after the run)
rig_sanitizer_check() {
	local f
	for f in "$RIG_SHARE"/*.log; do
		grep -q "Sanitizer" "$f" 2>/dev/null || continue
		echo "FAIL: a sanitizer report in ${f##*/}:"
		grep -m 1 -A 59 -E "==[0-9]+==(ERROR|WARNING)|WARNING: ThreadSanitizer|runtime error|Sanitizer" "$f" |
			sed 's/^/  | /'
		FAILS=$((FAILS + 1))
	done
	return 0
}

# rig_wrong_data_check: a ulst's "wrong data" in a log of the share (a data
# check that failed) fails the test (FAILS), its first lines printed
rig_wrong_data_check() {
	if grep -h "wrong data" "$RIG_SHARE"/*.log 2>/dev/null | head -5 | grep .; then
		echo "FAIL: wrong data (above)"
		FAILS=$((FAILS + 1))
	fi
	return 0
}

# rig_emulator_faults: a line for each guest whose console shows a fault of
# the emulated machine rather than of what ran in it: a virtio-net NIC that
# stopped moving packets for good (seen with TCG guests on a loaded host,
# docs/rdma-rig.md), after which the guest cannot reach its peers on it.
# The guest kernel's NETDEV WATCHDOG says so when the NIC's transmit ring
# is full; the guest's /init says so ("ethN stalled") when the NIC's ARP
# asks to the bridge go unanswered. Returns 0 when a guest shows one.
rig_emulator_faults() {
	local i line r=1
	for ((i = 1; i <= RIG_N; i++)); do
		line=$(grep -m 1 -E "NETDEV WATCHDOG|^ulrig\[[0-9]+\]: eth[0-9]+ stalled" "$(rig_console "$i")" 2>/dev/null) ||
			continue
		echo "guest $i: its NIC stopped moving packets (an emulator fault): $line"
		r=0
	done
	return $r
}

# rig_verdict T0: the test's time since T0, then PASS, or FAIL: $FAILS and
# exit 1 (which rig_exit turns into 75 beside an emulator fault)
rig_verdict() {
	echo "whole test:      $(rig_secs "$1" "$(rig_now)")s"
	if [[ $FAILS != 0 ]]; then
		echo "FAIL: $FAILS"
		exit 1
	fi
	echo "PASS"
}

# rig_exit RC: the EXIT trap. A test that failed, at its verdict or
# wherever set -e stopped it, while a guest's console shows an emulator
# fault exits 75, which rig-rerun.sh (ctest's runner of the rig tests) runs
# once more; then rig_down. A skip (77) or a signal (130, 143) stays.
rig_exit() {
	local rc=$1
	if [[ $rc != 0 && $rc != 75 && $rc != 77 && $rc != 130 && $rc != 143 ]] && rig_emulator_faults; then
		echo "rig: the failure above came with an emulator fault: exit 75"
		rc=75
	fi
	rig_down
	exit "$rc"
}
