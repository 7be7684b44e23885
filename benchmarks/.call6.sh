export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
python3 benchmarks/diagnose_fast_mode.py accuracy 2>&1 | grep -v Warn | tee $OUT/diagnose_fast_accuracy.log
PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool initcheck --target-processes application-only python3 benchmarks/diagnose_fast_mode.py initcheck > $OUT/diagnose_initcheck_pytorch_only.log 2>&1
grep -c "Uninitialized" $OUT/diagnose_initcheck_pytorch_only.log; grep -m2 -A3 "Uninitialized" $OUT/diagnose_initcheck_pytorch_only.log | cut -c1-180; tail -3 $OUT/diagnose_initcheck_pytorch_only.log
