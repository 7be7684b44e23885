#!/usr/bin/env bash
# Rows kernels' functor parameters as 16-byte loads (at4) A/B against main, and the conv-bias peel's files checked and timed.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
trap 'tar czf $OUT/call1.tar.gz -C $R .' EXIT
find .build -path "*ext*" -name lock -delete 2>/dev/null
pip install --no-build-isolation --no-deps -e . -q > $R/pip.log 2>&1
export PYTHONPATH=$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
python3 -c "import torch; print('torch', torch.__version__)" >> $R/gpu.txt
el() { echo "$(( $(date +%s) - T0 ))"; }
python3 benchmarks/prebuild_gpu_tests.py .build/rh rows_half > $R/emit.log 2>&1
timeout 300 python3 benchmarks/prebuild.py -j 16 .devrun/new_L2-*.py .devrun/base_L2-*.py .build/rh/*.py .devrun/peel_*.py .devrun/base_[dv]*.py > $R/prebuild.log 2>&1
echo "prebuild exit $? at $(el) s" >> $R/prebuild.log; tail -3 $R/prebuild.log
(timeout 200 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_rows_half.py > $R/pytest_rows_half.log 2>&1; echo "exit $?" >> $R/pytest_rows_half.log) &
v() { local name=$1; shift; (timeout 200 python3 -m kgen.cli validate "$@" --trials 1 2>&1 | grep -v Warn | tail -6) > $R/validate_$name.log 2>&1; }
v L2-37_fp32 .devrun/new_L2-37.py & v L2-37_bf16 .devrun/new_L2-37.py --precision bf16 & v L2-37_fp16 .devrun/new_L2-37.py --precision fp16 &
v L2-75_bf16 .devrun/new_L2-75.py --precision bf16 & v L2-88_fp32 .devrun/new_L2-88.py & v L2-30_fp16 .devrun/new_L2-30.py --precision fp16 &
for s in diffusion_resblock_mid vae_decoder_up_mid diffusion_resblock_large vae_decoder_up_large; do
  v peel_$s .devrun/peel_$s.py --ref tests/corpus/$s.py &
done
v peel_diffusion_resblock_mid_bf16 .devrun/peel_diffusion_resblock_mid.py --ref tests/corpus/diffusion_resblock_mid.py --precision bf16 &
wait
echo "checks done at $(el) s"
for spec in "37 bf16" "37 fp32" "37 fp16" "88 fp32" "75 bf16" "30 bf16"; do
  set -- $spec
  for mode in fwd bwd; do
    [ $(el) -gt 430 ] && break
    flag=""; [ $mode = bwd ] && flag=--backward
    timeout 60 python3 benchmarks/kernel_variants.py .devrun/base_L2-$1.py --file new=.devrun/new_L2-$1.py --kernel "kgen::" \
      $flag --rounds 3 --dtype $2 --json $R/variants_L2-$1_$2_$mode.json 2>&1 | grep -v Warn | grep -E "^(base|new) " | cut -c1-400 > $R/variants_L2-$1_$2_$mode.log
    echo "== L2-$1 $2 $mode"; cut -c1-90 $R/variants_L2-$1_$2_$mode.log
  done
done
for s in diffusion_resblock_mid vae_decoder_up_mid diffusion_resblock_large; do
  [ $(el) -gt 500 ] && break
  timeout 60 python3 benchmarks/kernel_variants.py .devrun/base_$s.py --file peel=.devrun/peel_$s.py --kernel "." --backward \
    --rounds 3 --json $R/peel_gpu_$s.json 2>&1 | grep -v Warn | grep -E "^(base|peel) " | cut -c1-300 > $R/peel_gpu_$s.log
  echo "== peel GPU $s"; cut -c1-90 $R/peel_gpu_$s.log
done
for s in diffusion_resblock_mid vae_decoder_up_mid; do
  for f in base peel; do
    [ $(el) -gt 540 ] && break
    timeout 40 python3 benchmarks/host_profile.py .devrun/${f}_$s.py --reference tests/corpus/$s.py --rounds 5 \
      --json $R/host_${f}_$s.json 2>&1 | grep -v Warn | head -4 > $R/host_${f}_$s.log
    echo "== host $f $s"; cut -c1-150 $R/host_${f}_$s.log
  done
done
for f in $R/validate_*.log; do echo "== $(basename $f): $(grep -E "verdict|RESULT|PASS|FAIL" $f | head -3 | tr '\n' ' ')"; done
tail -2 $R/pytest_rows_half.log; echo "total $(el) s"
