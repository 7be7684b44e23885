#!/usr/bin/env bash
# Session 12's A/B of the rows forward's sample reduction at L2-75 (base: 2 packs a thread in flight):
#   bash benchmarks/s12_variants.sh build|time FILE_75 OUTDIR
set -u
mode=$1 f75=$2 out=$3
flag=""; [ "$mode" = build ] && flag=--build-only
python3 benchmarks/kernel_variants.py "$f75" --kernel rows_reduce $flag --json "$out/variants_l2_75.json" \
  --variant "inflight4:kRowsReducePacksInFlight = 2;=>kRowsReducePacksInFlight = 4;" \
  --variant "inflight8:kRowsReducePacksInFlight = 2;=>kRowsReducePacksInFlight = 8;"
