#!/usr/bin/env bash
# Runs every benchmark scenario in one go and prints `name: value unit` lines and a summary table.
# Installs the load tools it needs (h2load, wrk, aioapns), builds the release binaries, then runs HubBench, which
# starts the APNs emulator, the hub and the tools itself and removes its files afterwards.
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

swift build -c release --product hub >/dev/null
swift build -c release --product StoreBenchmark >/dev/null
swift build -c release --product HubBench >/dev/null
bin=$(swift build -c release --show-bin-path)
exec "$bin/HubBench" --hub "$bin/hub" --store-benchmark "$bin/StoreBenchmark" "$@"
