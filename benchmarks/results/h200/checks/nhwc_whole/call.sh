#!/usr/bin/env bash
# tests/gpu/test_gn_region_nhwc.py whole: its 16 solution files (the --conv fast files at each block size, the default
# files) emitted as the tests emit them and built in parallel first (the build is keyed by the source's hash, so the
# tests find them built), then the tests. Before them, the merged_sums files timed again by kernel_variants.py, which
# now sums a kernel's launches a call (../../merged_sums/: .build/merged_sums carried).
# On the GPU machine from the repository root, .kb (and .build/merged_sums) carried:
#   bash benchmarks/results/h200/checks/nhwc_whole/call.sh
set -u; cd "$(dirname "$0")/../../../../.."; T0=$(date +%s)
R=.build/nhwc_whole; mkdir -p $R/files; trap 'tar czf $OUT/nhwc_whole.tar.gz -C $R --exclude files .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
(nvidia-smi --query-gpu=name --format=csv,noheader; python3 -c "import torch; print(torch.__version__)") > $R/machine.txt
python3 - <<'PY'
from tests.gpu import test_gn_region_nhwc as t
from kgen.ref.emit import emit_reference
files = {(name, 256): dict(block_size=256, conv="fast", autograd="python") for name in t.REFERENCES}
files.update({(name, block): dict(block_size=block, conv="fast", autograd="python") for block, (name, _, _) in t.BLOCK_CASES})
for name, _, shape in [t.MODEL_CASES[0], t.MODEL_CASES[2], t.MODEL_CASES[5]]:
    files[(name, "exact")] = {}
for (name, tag), kwargs in files.items():
    open(f".build/nhwc_whole/files/{name}_{tag}.py", "w").write(emit_reference(str(t.REFERENCES[name]), **kwargs)[0])
print(len(files), "files")
PY
B=.build/merged_sums
timeout 420 python3 benchmarks/prebuild.py -j 16 $R/files/*.py $B/old/diffusion_resblock_mid.py $B/new/diffusion_resblock_mid.py \
  > $R/prebuild.log 2>&1
echo "prebuild rc $? $(( $(date +%s) - T0 )) s"
timeout 90 python3 benchmarks/kernel_variants.py $B/old/diffusion_resblock_mid.py --file new=$B/new/diffusion_resblock_mid.py \
  --kernel "kgen::|sum|reduce" --backward --rounds 3 --json $R/variants_diffusion_resblock_mid.json \
  > $R/variants_diffusion_resblock_mid.log 2>&1 || echo "kernel_variants failed"
grep -E "^(base|new) " $R/variants_diffusion_resblock_mid.log | cut -c1-100
timeout $(( 590 - ($(date +%s) - T0) )) python3 -m pytest -q tests/gpu/test_gn_region_nhwc.py > $R/test_nhwc.log 2>&1
echo "pytest rc $?"; tail -3 $R/test_nhwc.log
echo "total $(( $(date +%s) - T0 )) s"
