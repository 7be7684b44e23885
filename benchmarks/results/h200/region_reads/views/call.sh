#!/usr/bin/env bash
# On the GPU machine (device tool, carry .kb), from the repository root: the 20 own and unseen references whose
# regions read a view (a chunk or split piece, a slice, a transpose or permute, an expanded tensor) emitted, built and
# judged by kgen validate at fp32, channels-last and bf16 (family.py, 8 at a time), beside the GPU tests of the C++
# autograd node and of an in-place change of an output. The fp32 pass ran out of its budget after the builds here;
# it was finished on the warm machine by the same family.py line with --resume (FAMILY_fp32.md).
REFS=.devrun/refs; mkdir -p $REFS
for n in gn_chunked_groups_cat gn_half_channels_then_cat gn_split_by_half_channels gn_strided_slice_input \
         gn_sequence_first_transposed gn_sequence_transposed gn_transposed_input gn_video_permute_5d \
         permute_channels_last_gn transpose_then_gn view_gn gn_expanded_input chunk_after_gn \
         gn_time_embedding_channels_last gn_transpose_contiguous_output gn_sdpa_heads_split gn_inplace_iadd_slice; do
  cp tests/ref/unseen/$n.py $REFS/
done
for n in conv1d_chunk_gate_one_norm conv_split_two_groupnorms_gate linear_gn_max_broadcast_transpose; do
  cp tests/ref/references/$n.py $REFS/
done
set -u
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
pip install --no-build-isolation --no-deps -e . -q > $R/pip.log 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
(timeout 500 python3 -m pytest -q tests/gpu/test_autograd_cpp.py tests/gpu/test_inplace_output.py -p no:cacheprovider > $R/gpu_tests.log 2>&1; echo "rc $?" >> $R/gpu_tests.log) &
F=.build/views
timeout 330 python3 benchmarks/family.py $REFS .kb $F/fp32 --glob "*.py" --trials 1 --workers 8 --jobs 16 --timeout 200 --skip-kernelbench --budget 300 > $R/fp32.log 2>&1
echo "fp32 $(( $(date +%s) - T0 )) s"; grep -E "validate exit|emit:|prebuild:" $R/fp32.log | sort | uniq -c | sort -rn | head -30
for mode in "--channels-last" "--precisions bf16"; do
  d=$F/$(echo $mode | tr -dc 'a-z0-9'); timeout 150 python3 benchmarks/family.py $REFS .kb $d --glob "*.py" --trials 1 --workers 8 --jobs 16 --timeout 120 --skip-kernelbench --budget 120 $mode > $R/$(basename $d).log 2>&1
  echo "$mode $(( $(date +%s) - T0 )) s"; grep -E "validate exit" $R/$(basename $d).log | grep -v "exit 0" | head
  grep -c "validate exit 0" $R/$(basename $d).log
done
wait; tail -3 $R/gpu_tests.log
for d in $F/*; do cp $d/FAMILY.md $R/FAMILY_$(basename $d).md 2>/dev/null; done
tar czf $OUT/views.tar.gz -C $F . 2>/dev/null
echo "total $(( $(date +%s) - T0 )) s"
