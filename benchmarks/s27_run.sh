#!/usr/bin/env bash
# Session 27's device calls, by name (the record of what ran; logs under benchmarks/convt_fused/h100_v3/s27/).
#   run1: where the forward conv kernel's ~0.9 ms beyond its main loop goes (session 26: whole 3.87-3.99 ms, main
#         loop 2.97, identity op 3.69, epilogue alone 1.33-1.42). New timing variants: the conv storing z without
#         moments (19; its epilogue alone, 20) and the moments without z's stores (21). If the stores are the cost,
#         19 ~ 3.6 and 21 ~ 3.3; if the GELU moments are, 19 ~ 3.2 and 21 ~ 3.8. ncu of the whole kernel at batch 16:
#         the epilogue's stall reasons per instruction.
set -u
S=s27
. benchmarks/convt_fused_helpers.sh
case "${1:-}" in
  run1)
    build_wgmma run1
    timeout -k 5 150 python3 tests/gpu/test_convt_wgmma.py --bench "moments (again)" "identity op" \
      "main loop alone (timing" "epilogue alone" "storing z" "without storing" 2>&1 | tee "$OUT/$S/run1_bench.log" | tail -10
    ncu_source run1_ncu_v0 0
    ncu_source run1_ncu_v19 19
    ;;
  *) echo "usage: $0 runN"; exit 2 ;;
esac
