"""Two calls of kgen's wgmma ConvTranspose2d (+ moments) at L2-19's layer, for ncu: batch (16), variant (0; the
harness's timing-only parts are 10, 11, 13)."""
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
for _ in range(2):
    ext.convt_wgmma_forward(x, weight, bias, 8, 1e-5, [0, 0], variant)
torch.cuda.synchronize()
