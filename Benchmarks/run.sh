#!/usr/bin/env bash
# Runs every benchmark scenario in one go and prints `name: value unit` lines and a summary table.
# Installs the load tools it needs (h2load, wrk, aioapns), builds the release binaries, then runs HubBench, which
# starts the APNs emulator, the hub and the tools itself and removes its files afterwards, and the FCM and WNS
# latency-tolerance runs (and HMS's and ADM's).
#
#   Benchmarks/run.sh                                   # 10k, 100k and 1M devices
#   Benchmarks/run.sh --sizes 10000,100000 --skip-peer  # options: see Benchmarks/HubBench/main.swift
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v h2load >/dev/null || missing+=(nghttp2-client)
command -v wrk >/dev/null || missing+=(wrk)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  $sudo apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
    || { $sudo apt-get update >/dev/null && $sudo apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; }
fi
python3 -c 'import aioapns' 2>/dev/null || python3 -m pip install --quiet aioapns

for product in hub StoreBenchmark HubBench FCMDelivery WNSDelivery HMSDelivery ADMDelivery XiaomiDelivery BaiduDelivery; do
  swift build -c release --product "$product" >/dev/null
done
bin=$(swift build -c release --show-bin-path)
"$bin/HubBench" --hub "$bin/hub" --store-benchmark "$bin/StoreBenchmark" "$@"
# Each platform's fan-out with its adapter's default settings: first its emulator's ceiling (`fcm.ceiling.h2load`,
# `wns.ceiling.wrk`) and the fan-out as a share of it (`*.ofCeiling`), then the latency tolerance: the same fan-out
# with the emulator answering at once and 50 ms late (`fcm.latency50.ofZero`, `wns.latency50.ofZero`, …).
"$bin/FCMDelivery" --devices 20000 --rounds 3 --latency-ms 50
"$bin/WNSDelivery" --devices 20000 --rounds 3 --latency-ms 50
"$bin/HMSDelivery" --devices 20000 --rounds 3 --latency-ms 50
"$bin/ADMDelivery" --devices 20000 --rounds 3 --latency-ms 50
"$bin/XiaomiDelivery" --devices 20000 --rounds 3 --latency-ms 50
"$bin/BaiduDelivery" --devices 20000 --rounds 3 --latency-ms 50
