set -u; T0=$(date +%s)
R=.build/r3; mkdir -p $R; trap 'tar czf $OUT/r3.tar.gz -C $R .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
export PYTHONPATH=$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
(git status --short | head; python3 -c "import torch; print(torch.__version__)") > $R/machine.txt
python3 -m kgen.cli emit --ref tests/corpus/resnet_gn_bottleneck_tiny.py -o .build/diag/add_relu.py 2>/dev/null
timeout 300 python3 benchmarks/prebuild.py -j 2 .build/diag/add_relu.py emit:conv-gn-tanh-hardswish-res-lse > $R/prebuild.log 2>&1
echo "prebuild rc $? $(( $(date +%s) - T0 )) s"
timeout 60 python3 -X faulthandler -m pytest -q -p no:cacheprovider tests/gpu/test_conv_gn_lse.py -k bad_region > $R/bad_region.log 2>&1; echo "bad_region rc $?"; tail -2 $R/bad_region.log
timeout 90 python3 -X faulthandler -m pytest -q -p no:cacheprovider tests/gpu/test_autograd_cpp.py -k element_wise_node > $R/pointwise_checks.log 2>&1; echo "pointwise checks rc $?"; tail -2 $R/pointwise_checks.log
for c in groups parameters parameter; do
  timeout 60 python3 .build/diag/param_case.py $c > $R/case_$c.log 2>&1; echo "case $c rc $?"; tail -2 $R/case_$c.log
done
if ! grep -q "raised:" $R/case_parameter.log; then
  timeout 120 cuda-gdb -batch -ex run -ex bt --args python3 .build/diag/param_case.py parameter > $R/gdb_parameter.log 2>&1
  grep -A40 "SIGSEGV" $R/gdb_parameter.log | head -60
fi
echo "total $(( $(date +%s) - T0 )) s"
