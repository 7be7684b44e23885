#!/usr/bin/env bash
# Session 11's A/B runs (kernel_variants.py) on the GPU machine: the rows forward's packs in flight and packs a
# lane at L2-37, and the channel sweep's LSE (push_many against the one-at-a-time push) at L2-92.
#   bash benchmarks/s11_variants.sh build|time FILE_37 FILE_92 OUTDIR
set -u
mode=$1 f37=$2 f92=$3 out=$4
flag=""; [ "$mode" = build ] && flag=--build-only
python3 benchmarks/kernel_variants.py "$f37" --kernel rows_forward $flag --json "$out/variants_l2_37.json" \
  --variant "inflight4:kRowsPacksInFlight = 8;=>kRowsPacksInFlight = 4;" \
  --variant "inflight16:kRowsPacksInFlight = 8;=>kRowsPacksInFlight = 16;" \
  --variant "perlane1:kRowsPacksPerLane = 4;=>kRowsPacksPerLane = 1;" \
  --variant "perlane2:kRowsPacksPerLane = 4;=>kRowsPacksPerLane = 2;" \
  --variant "perlane8:kRowsPacksPerLane = 4;=>kRowsPacksPerLane = 8;" \
  --variant "inflight4_perlane2:kRowsPacksInFlight = 8;=>kRowsPacksInFlight = 4;|||kRowsPacksPerLane = 4;=>kRowsPacksPerLane = 2;"
python3 benchmarks/kernel_variants.py "$f92" --kernel channel_forward $flag --json "$out/variants_l2_92.json" \
  --variant "one_at_a_time:if constexpr (O == ReduceOp::kLogSumExp) {
          // the kLoads=>if constexpr (O == ReduceOp::kLogSumExp && O == ReduceOp::kSum) {
          // the kLoads"
