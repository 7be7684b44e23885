#!/usr/bin/env bash
# Session 29's device calls, by name (the record of what ran; logs under benchmarks/h100/s29/).
#   run1: issue 12's pipelined GroupNorm backward (gn_region_twopass_pipeline.cuh), below 80 % of a same-size copy at
#         L2-19 (69 %), L2-60 (70), L2-83 (75), L2-21 (79), L1-35 (74). Where does its time go? A/B in one process
#         (kernel_variants --backward, 3 rounds): `trivial` = the region's element-wise ops removed (z = x, dy = dv,
#         dx = dz: timing only), the kernel's skeleton at the problem's shape and streams. If trivial is near the copy
#         rate, the ops' instructions bound it (session 16's ncu: L2-19 71 % of issue slots); if not, the skeleton
#         (latency, hand-over). `prefetch` = each block, as it starts an item, asks L2 for the pass A item one round of
#         tickets ahead (bulk prefetch, sm_90): pass A's loads then wait on L2, not DRAM. Predicted: 5-10 % where
#         latency bounds it (L2-83, L2-21), nothing or worse at L1-35 (L2 capacity). `fastexp` (L2-19): GELU's
#         derivative's exp as __expf (5 of ~55 instructions a value in pass B).
set -uo pipefail
S=s29
mkdir -p "$OUT/$S"
case "${1:-}" in
  run1)
    triv='const float z = ch.pro.value(xv);=>const float z = xv;|||return ch.pro.backward(xv, dz, dparam) + dx_direct;=>return dz + dx_direct;|||ch.epi.backward(y, z, xv, dv, dy, dz_direct, dx_direct, dparam);=>dy = dv;|||ch.epi.backward(y, z, xv, dv, dy, dz_direct, dx_direct, discard);=>dy = dv;'
    pf='constexpr bool kPipelinePrefetch = false;=>constexpr bool kPipelinePrefetch = true;'
    fexp='fastexp:return cdf + a * (kBeta * expf(-0.5f * a * a));=>return cdf + a * (kBeta * __expf(-0.5f * a * a));'
    S16_AB="19 60 83 21 35" S16_TESTS= S16_ROUNDS=3 S16_AB_TIMEOUT=100 \
      S16_VARIANTS_19="trivial:$triv"$'\n'"prefetch:$pf"$'\n'"trivial_prefetch:${triv}|||$pf"$'\n'"$fexp" \
      S16_VARIANTS_60="trivial:$triv"$'\n'"prefetch:$pf" \
      S16_VARIANTS_83="trivial:$triv"$'\n'"prefetch:$pf" \
      S16_VARIANTS_21="trivial:$triv"$'\n'"prefetch:$pf" \
      S16_VARIANTS_35="prefetch:$pf" \
      bash benchmarks/device_run.sh s16
    mv "$OUT/s16_logs.tar.gz" "$OUT/$S/run1_logs.tar.gz" 2>/dev/null
    ;;
  *) echo "usage: $0 runN"; exit 2 ;;
esac
