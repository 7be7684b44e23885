#!/usr/bin/env bash
# Merged regions: the new files built and judged; host time a call, main's file and the new one, each beside eager.
set -u; cd "$(dirname "$0")/.."; R=$OUT/r; mkdir -p $R; trap 'tar czf $OUT/x.tar.gz -C $R .' EXIT
find .build -path "*ext*" -name lock -delete 2>/dev/null
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
M=.devrun/m; F=.devrun/files
timeout 400 python3 benchmarks/prebuild.py -j 16 $M/diffusion_resblock_tiny.py $M/adaptive_groupnorm_mid.py $F/host_diffusion_resblock_tiny.py $F/host_adaptive_groupnorm_mid.py $M/*.py > $R/prebuild.log 2>&1
tail -1 $R/prebuild.log; grep -v ": ok" $R/prebuild.log | head -5
ls $M/*.py | xargs -P 6 -I{} sh -c 'n=$(basename {} .py); timeout 240 python3 -m kgen.cli validate {} --trials 1 > '$R'/validate_$n.log 2>&1; echo "$n exit $?"' | sort
for n in adm_resblock_scale_shift diffusion_resblock_tiny audio_film_conv1d linear_gn_per_sample_bias; do
  echo "$n bf16"; done | xargs -P 4 -I{} sh -c 'set -- {}; timeout 240 python3 -m kgen.cli validate '$M'/$1.py --trials 1 --precision bf16 > '$R'/validate_$1_bf16.log 2>&1; echo "$1 bf16 exit $?"' | sort
for r in diffusion_resblock_tiny adaptive_groupnorm_mid; do
  for v in base new; do
    f=$M/$r.py; [ $v = base ] && f=$F/host_$r.py
    timeout 90 python3 benchmarks/host_profile.py $f --reference tests/corpus/$r.py --api --rounds 7 --top 12 --json $R/host_${r}_$v.json > $R/host_${r}_$v.log 2>&1
    echo "== $r $v"; grep "^== .*unprofiled" $R/host_${r}_$v.log; grep -A0 "ATen ops a call" $R/host_${r}_$v.log | grep kgen
  done
done
