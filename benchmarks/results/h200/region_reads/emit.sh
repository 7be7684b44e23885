#!/usr/bin/env bash
# On the CPU machine, from the repository root: each reference emitted by main before the change (BEFORE, a commit)
# and by the working tree, into .devrun/files/{old,new}_NAME.py, which the call then builds and compares.
set -eu
BEFORE=${BEFORE:-2038d46}
git worktree add -f /tmp/kgen_before "$BEFORE" -q
mkdir -p .devrun/files
for n in two_norm_gate_large two_norm_gate_mid vae_decoder_up_large resnet_gn_bottleneck_large unet3d_block_large \
         diffusion_resblock_large audio_encoder_1d_large; do
  kgen emit --ref tests/corpus/$n.py -o .devrun/files/new_$n.py
  (cd /tmp/kgen_before && PYTHONPATH=/tmp/kgen_before python -m kgen.cli emit --ref "$OLDPWD/tests/corpus/$n.py" \
     -o "$OLDPWD/.devrun/files/old_$n.py")
done
