# Session 11's second A/B of the rows forward at L2-37 (base: 4 packs in flight, 2 a lane), sourced by
# device_run.sh's step s11c with f37 (the emitted file), out (the folder) and flag (--build-only or empty) set.
python3 benchmarks/kernel_variants.py "$f37" --kernel rows_forward $flag --json "$out/variants_l2_37_b.json" \
  --variant "inflight2:kRowsPacksInFlight = 4;=>kRowsPacksInFlight = 2;" \
  --variant "perlane1:kRowsPacksPerLane = 2;=>kRowsPacksPerLane = 1;" \
  --variant "inflight2_perlane1:kRowsPacksInFlight = 4;=>kRowsPacksInFlight = 2;|||kRowsPacksPerLane = 2;=>kRowsPacksPerLane = 1;" \
  --variant "perlane4:kRowsPacksPerLane = 2;=>kRowsPacksPerLane = 4;"
