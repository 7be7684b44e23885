"""Two calls of kgen's wgmma ConvTranspose2d (+ moments) at L2-19's layer, for ncu: batch (16), variant (0; the
harness's timing-only parts are 10, 11, 13; 100 + v: the input gradient's variant v, from a channels-last grad_z)."""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.gpu import convt_wgmma_harness as H  # noqa: E402

batch = int(sys.argv[1]) if len(sys.argv) > 1 else 16
variant = int(sys.argv[2]) if len(sys.argv) > 2 else 0
ext = H.build_extension()
x = torch.rand(batch, 64, 256, 256, device="cuda")
weight = torch.randn(64, 64, 3, 3, device="cuda") * 0.04
bias = torch.randn(64, device="cuda")
grad_z = torch.randn(batch, 64, 258, 258, device="cuda").contiguous(memory_format=torch.channels_last)
for _ in range(2):
    if variant >= 100:
        ext.convt_wgmma_input_grad(grad_z, weight, [0, 0], variant - 100)
    else:
        ext.convt_wgmma_forward(x, weight, bias, 8, 1e-5, [0, 0], variant)
torch.cuda.synchronize()
