#!/usr/bin/env bash
# Session 11's second A/B of the rows forward at L2-37 (base: 4 packs in flight, 2 a lane), as s11_variants.sh:
#   bash benchmarks/s11_variants_b.sh build|time FILE_37 OUTDIR
set -u
mode=$1 f37=$2 out=$3
flag=""; [ "$mode" = build ] && flag=--build-only
python3 benchmarks/kernel_variants.py "$f37" --kernel rows_forward $flag --json "$out/variants_l2_37_b.json" \
  --variant "inflight2:kRowsPacksInFlight = 4;=>kRowsPacksInFlight = 2;" \
  --variant "perlane1:kRowsPacksPerLane = 2;=>kRowsPacksPerLane = 1;" \
  --variant "inflight2_perlane1:kRowsPacksInFlight = 4;=>kRowsPacksInFlight = 2;|||kRowsPacksPerLane = 2;=>kRowsPacksPerLane = 1;" \
  --variant "perlane4:kRowsPacksPerLane = 2;=>kRowsPacksPerLane = 4;"
