python3 benchmarks/kernel_variants.py "$f37" --kernel rows_forward $flag --json "$out/variants_l2_37_b.json" \
  --variant "inflight2:kRowsPacksInFlight = 4;=>kRowsPacksInFlight = 2;" \
  --variant "perlane1:kRowsPacksPerLane = 2;=>kRowsPacksPerLane = 1;" \
  --variant "inflight2_perlane1:kRowsPacksInFlight = 4;=>kRowsPacksInFlight = 2;|||kRowsPacksPerLane = 2;=>kRowsPacksPerLane = 1;" \
  --variant "perlane4:kRowsPacksPerLane = 2;=>kRowsPacksPerLane = 4;"
