#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_metrics_prom.sh - ulnetd --metrics scraped by the real thing: two
# daemons on 127.0.41.x (a subnet no other test uses), the second serving
# metrics and routing (so the router pool families are there too);
# promtool check metrics accepts a scrape; a Prometheus server (Debian's
# package) scraping it every second reports up == 1 through its HTTP API,
# and after pings from the second node to the first its ulnet_send_total,
# ulnet_ni_send_total (GETs of the NI) and the count of the NI's get_rtt
# latency histogram have moved, and histogram_quantile() reads that
# histogram (a median GET -> REPLY time in its range). Every wait is
# bounded (30 s); every process started is killed at exit. Skipped (77),
# saying why, without prometheus or promtool (scripts/install-deps.sh
# installs them).
set -u

# shellcheck disable=SC2034 # (ctl_lib.sh reads TAG)
TAG=metrics-prom
for tool in prometheus promtool python3; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "SKIP: no $tool (the Debian package prometheus has prometheus and promtool; scripts/install-deps.sh)"
		exit 77
	fi
done
# shellcheck source=tests/support/ctl_lib.sh
. "$(dirname "$0")/../support/ctl_lib.sh"

ADDR=127.0.41.10
# free_port BASE: the first port from BASE on where nothing listens on ADDR
free_port() {
	local p=$1
	while timeout 2 bash -c "exec 3<>/dev/tcp/$ADDR/$p" 2>/dev/null; do p=$((p + 1)); done
	echo "$p"
}
BASE=$((23000 + ($$ % 3000) * 3))
NIPORT=$(free_port "$BASE")
MPORT=$(free_port $((NIPORT + 1)))
PPORT=$(free_port $((MPORT + 1)))

# get PATH-AND-QUERY PORT: the body of an HTTP GET on ADDR:PORT (curl if
# there is one, else bash's /dev/tcp: the queries below need no encoding)
get() {
	if command -v curl >/dev/null 2>&1; then
		curl -sS --max-time 5 "http://$ADDR:$2$1"
	else
		timeout 5 bash -c "exec 3<>/dev/tcp/$ADDR/$2 &&
			printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' '$1' '$ADDR:$2' >&3 && cat <&3" |
			sed '1,/^\r\?$/d'
	fi
}

# value QUERY: the value of the first sample of an instant query of the
# ulnetd job (empty if none yet)
value() {
	get "/api/v1/query?query=$1" "$PPORT" 2>/dev/null | python3 -c '
import json, sys
try:
    r = json.load(sys.stdin)["data"]["result"]
except Exception:
    sys.exit(0)
for s in r:
    if s["metric"].get("job") == "ulnetd":
        print(s["value"][1]); break'
}

# wait_for SECONDS CMD...: until CMD succeeds (every 0.5 s), or fail
wait_for() {
	local n=$(($1 * 2)); shift
	for _ in $(seq "$n"); do "$@" && return 0; sleep 0.5; done
	return 1
}

ul_daemon A --accept all --accept-port "$NIPORT" || { fail "ulnetd A did not start"; exit 1; }
ul_daemon B --accept all --accept-port "$NIPORT" --metrics "$ADDR:$MPORT" ||
	{ fail "ulnetd B --metrics $ADDR:$MPORT did not start"; exit 1; }
run A 0 net add --nid 127.0.41.11@tcp
run B 0 net add --nid 127.0.41.12@tcp
run B 0 set routing 1
run B 0 ping 127.0.41.11@tcp

# --- promtool accepts a scrape (its lint included) --------------------------------
CHECKS=$((CHECKS + 1))
get /metrics "$MPORT" >"$T/scrape.txt" || fail "no scrape from $ADDR:$MPORT"
grep -q '^ulnet_router_buffers{pool="small"}' "$T/scrape.txt" || fail "no router pools in the scrape"
grep -q '^ulnet_peer_ni_send_total{peer_nid="127.0.41.11@tcp",type="get"}' "$T/scrape.txt" ||
	fail "no peer NI series in the scrape"
# the ping's GET -> REPLY time, in the NI's latency histogram
grep -q '^# TYPE ulnet_ni_latency_seconds histogram$' "$T/scrape.txt" || fail "no latency histogram"
grep -q '^ulnet_ni_latency_seconds_bucket{nid="127.0.41.12@tcp",op="get_rtt",le="+Inf"} [1-9]' \
	"$T/scrape.txt" || fail "no get_rtt sample in the latency histogram"
# and its REPLY's payload (the ping info), in the NI's bytes by type
grep -q '^ulnet_ni_recv_bytes_total{nid="127.0.41.12@tcp",type="reply"} [1-9]' "$T/scrape.txt" ||
	fail "no REPLY bytes in ulnet_ni_recv_bytes_total"
CHECKS=$((CHECKS + 1))
if ! promtool check metrics <"$T/scrape.txt" >"$T/promtool.out" 2>&1; then
	fail "promtool check metrics: $(cat "$T/promtool.out")"
fi

# --- a Prometheus server scrapes it ------------------------------------------------
cat >"$T/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: ulnetd
    static_configs:
      - targets: ['$ADDR:$MPORT']
EOF
prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/data" \
	--web.listen-address="$ADDR:$PPORT" --log.level=warn >"$T/prometheus.log" 2>&1 &
PIDS+=("$!")
CHECKS=$((CHECKS + 1))
ready() { get /-/ready "$PPORT" 2>/dev/null | grep -q Ready; }
wait_for 30 ready || fail "Prometheus not ready on $ADDR:$PPORT within 30 s: $(tail -5 "$T/prometheus.log")"
CHECKS=$((CHECKS + 1))
up1() { [[ $(value up) == 1 ]]; }
wait_for 30 up1 || fail "up is '$(value up)', not 1, after 30 s: $(tail -5 "$T/prometheus.log")"

# the counters as Prometheus has them now, then traffic, then moved
# (queries URL-encoded: {nid="127.0.41.12@tcp",...})
NI_GET='ulnet_ni_send_total%7Bnid%3D%22127.0.41.12%40tcp%22%2Ctype%3D%22get%22%7D'
NI_RTT='ulnet_ni_latency_seconds_count%7Bnid%3D%22127.0.41.12%40tcp%22%2Cop%3D%22get_rtt%22%7D'
v0=$(value ulnet_send_total)
n0=$(value "$NI_GET")
r0=$(value "$NI_RTT")
CHECKS=$((CHECKS + 1))
[[ -n $v0 && -n $n0 && -n $r0 ]] ||
	fail "no ulnet_send_total ('$v0'), ulnet_ni_send_total ('$n0') or ulnet_ni_latency_seconds_count ('$r0') in Prometheus"
for _ in 1 2 3 4 5; do run B 0 ping 127.0.41.11@tcp; done
moved() {
	local v n r
	v=$(value ulnet_send_total)
	n=$(value "$NI_GET")
	r=$(value "$NI_RTT")
	[[ -n $v && -n $n && -n $r ]] &&
		(($(printf '%.0f' "$v") >= ${v0%.*} + 5 && $(printf '%.0f' "$n") >= ${n0%.*} + 5 &&
		  $(printf '%.0f' "$r") >= ${r0%.*} + 5))
}
CHECKS=$((CHECKS + 1))
wait_for 30 moved || fail "ulnet_send_total $v0 -> '$(value ulnet_send_total)', get_rtt samples $r0 -> '$(value "$NI_RTT")' after 5 pings (want +5)"
# Prometheus reads the buckets as a histogram: a median GET -> REPLY time
# above 0 and at most the last finite bound
median() {
	local m
	m=$(value 'histogram_quantile(0.5%2C%20ulnet_ni_latency_seconds_bucket%7Bnid%3D%22127.0.41.12%40tcp%22%2Cop%3D%22get_rtt%22%7D)')
	[[ -n $m ]] && python3 -c "import sys; m = float(sys.argv[1]); sys.exit(0 if 0 < m <= 68.719476736 else 1)" "$m"
}
CHECKS=$((CHECKS + 1))
wait_for 30 median || fail "histogram_quantile(0.5, get_rtt buckets) is '$(value 'histogram_quantile(0.5%2C%20ulnet_ni_latency_seconds_bucket%7Bnid%3D%22127.0.41.12%40tcp%22%2Cop%3D%22get_rtt%22%7D)')'"
alive B
alive A

echo "$CHECKS checks, $FAILS failures"
[[ $FAILS == 0 ]]
