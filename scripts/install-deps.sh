#!/usr/bin/env bash
# Installs every Debian 12 package that building, testing, the demo and the
# benchmarks need. Idempotent: does nothing when all are present.
set -euo pipefail
# prometheus: prometheus and promtool, for test_metrics_prom.sh (ulnetd
# --metrics scraped by a real server; its own test ports, not the :9090 of
# the service the package may start); dpkg-dev, debhelper, lintian: the
# Debian packages (make deb, tests/abi/test_deb.sh); scdoc: the man pages
# (docs/man/*.scd, cmake/man.cmake); groff-base: groff, with which
# test_man_options.sh renders them; libibverbs-dev, librdmacm-dev: the o2ib
# LND (ULNET_O2IB), with rdma-core and ibverbs-providers (rxe) to run it;
# haproxy: the relay measured beside ulnet's router (bench/relay_peers.sh)
pkgs=(build-essential cmake pkg-config clang libclang-rt-14-dev libcmocka-dev
      libyaml-dev iproute2 tshark python3 iperf3 sockperf procps prometheus
      dpkg-dev debhelper lintian scdoc groff-base
      libibverbs-dev librdmacm-dev rdma-core ibverbs-providers haproxy)
# tshark's question (may users capture?) answered no, as a fresh machine has
APT_PRESEED="wireshark-common wireshark-common/install-setuid boolean false" \
  exec "$(dirname "$0")/apt-ensure.sh" install-deps "${pkgs[@]}"
