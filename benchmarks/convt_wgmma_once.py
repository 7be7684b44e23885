"""One call of kgen's wgmma ConvTranspose2d (+ moments) at L2-19's layer with a given batch: for ncu."""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.gpu import convt_wgmma_harness as H  # noqa: E402

batch = int(sys.argv[1]) if len(sys.argv) > 1 else 16
ext = H.build_extension()
x = torch.rand(batch, 64, 256, 256, device="cuda")
weight = torch.randn(64, 64, 3, 3, device="cuda") * 0.04
bias = torch.randn(64, device="cuda")
for _ in range(2):
    ext.convt_wgmma_forward(x, weight, bias, 8, 1e-5, [0, 0], 0)
torch.cuda.synchronize()
