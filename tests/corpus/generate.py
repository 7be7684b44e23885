"""Writes the corpus: references in KernelBench's format, as people write GroupNorm models (diffusion UNet residual
and attention blocks, a VAE decoder stage, audio and 3-D conv stacks, GroupNorm after a Linear, instance- and
layer-norm-like group counts, three norm blocks, odd shapes), each archetype at three sizes (tiny, mid, large).
kgen has never been tuned on them: `python3 benchmarks/family.py tests/corpus .kb OUT --glob "*.py" --bench`
emits, validates and times them against eager and torch.compile on a GPU.

    python3 tests/corpus/generate.py      # rewrites tests/corpus/<archetype>_<size>.py
"""
from pathlib import Path

HEADER = '''"""{doc}"""
import torch
import torch.nn as nn
import torch.nn.functional as F

'''

ARCHETYPES = {
    "diffusion_resblock": ("A diffusion UNet residual block: GroupNorm, SiLU, 3x3 conv, the time embedding through a "
                           "Linear added per (sample, channel), GroupNorm, SiLU, dropout, 3x3 conv, a 1x1 skip.", '''
class Model(nn.Module):
    def __init__(self, in_channels, out_channels, temb_channels, groups):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, in_channels, eps=1e-6)
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.time_emb_proj = nn.Linear(temb_channels, out_channels)
        self.norm2 = nn.GroupNorm(groups, out_channels, eps=1e-6)
        self.dropout = nn.Dropout(0.0)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1)
        self.skip = nn.Conv2d(in_channels, out_channels, 1)

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.time_emb_proj(F.silu(temb))[:, :, None, None]
        h = self.conv2(self.dropout(F.silu(self.norm2(h))))
        return self.skip(x) + h


def get_inputs():
    return [torch.randn(batch, in_channels, size, size), torch.randn(batch, temb_channels)]


def get_init_inputs():
    return [in_channels, out_channels, temb_channels, groups]
''', {"tiny": dict(batch=2, in_channels=32, out_channels=64, temb_channels=128, groups=8, size=8),
      "mid": dict(batch=8, in_channels=128, out_channels=128, temb_channels=512, groups=32, size=32),
      "large": dict(batch=8, in_channels=320, out_channels=640, temb_channels=1280, groups=32, size=64)}),

    "attention_block": ("A diffusion UNet / VAE attention block: GroupNorm, a 1x1 projection to queries, keys and "
                        "values, one-head scaled-dot-product attention over the pixels, an output projection, the "
                        "residual.", '''
class Model(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels, eps=1e-6)
        self.to_qkv = nn.Conv2d(channels, 3 * channels, 1)
        self.proj_out = nn.Conv2d(channels, channels, 1)

    def forward(self, x):
        n, c, h, w = x.shape
        q, k, v = self.to_qkv(self.norm(x)).reshape(n, 3, c, h * w).transpose(-1, -2).unbind(1)
        a = F.scaled_dot_product_attention(q.unsqueeze(1), k.unsqueeze(1), v.unsqueeze(1)).squeeze(1)
        return x + self.proj_out(a.transpose(-1, -2).reshape(n, c, h, w))


def get_inputs():
    return [torch.randn(batch, channels, size, size)]


def get_init_inputs():
    return [channels, groups]
''', {"tiny": dict(batch=2, channels=64, groups=8, size=8),
      "mid": dict(batch=4, channels=256, groups=32, size=16),
      "large": dict(batch=4, channels=512, groups=32, size=32)}),

    "vae_decoder_up": ("A VAE decoder stage: a residual block (GroupNorm, SiLU, 3x3 conv, twice) then a nearest "
                       "2x upsampling and a 3x3 conv.", '''
class Model(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, channels, eps=1e-6)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.norm2 = nn.GroupNorm(groups, channels, eps=1e-6)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
        self.up_conv = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        h = self.conv1(F.silu(self.norm1(x)))
        h = x + self.conv2(F.silu(self.norm2(h)))
        return self.up_conv(F.interpolate(h, scale_factor=2.0, mode="nearest"))


def get_inputs():
    return [torch.randn(batch, channels, size, size)]


def get_init_inputs():
    return [channels, groups]
''', {"tiny": dict(batch=2, channels=64, groups=8, size=8),
      "mid": dict(batch=4, channels=256, groups=32, size=32),
      "large": dict(batch=2, channels=512, groups=32, size=64)}),

    "audio_encoder_1d": ("A speech encoder's feature extractor: Conv1d with a GroupNorm of one channel per group "
                         "(as wav2vec 2.0's first layer), GELU, then strided Conv1d, GroupNorm, GELU.", '''
class Model(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.conv0 = nn.Conv1d(1, channels, 10, stride=5, bias=False)
        self.norm0 = nn.GroupNorm(channels, channels)
        self.conv1 = nn.Conv1d(channels, channels, 3, stride=2, bias=False)
        self.norm1 = nn.GroupNorm(groups, channels)

    def forward(self, x):
        h = F.gelu(self.norm0(self.conv0(x)))
        return F.gelu(self.norm1(self.conv1(h)))


def get_inputs():
    return [torch.randn(batch, 1, length)]


def get_init_inputs():
    return [channels, groups]
''', {"tiny": dict(batch=2, channels=64, groups=16, length=4000),
      "mid": dict(batch=8, channels=256, groups=32, length=16000),
      "large": dict(batch=8, channels=512, groups=32, length=64000)}),

    "unet3d_block": ("A 3-D segmentation UNet's double conv: Conv3d, GroupNorm, ReLU, twice.", '''
class Model(nn.Module):
    def __init__(self, in_channels, channels, groups):
        super().__init__()
        self.conv1 = nn.Conv3d(in_channels, channels, 3, padding=1)
        self.norm1 = nn.GroupNorm(groups, channels)
        self.conv2 = nn.Conv3d(channels, channels, 3, padding=1)
        self.norm2 = nn.GroupNorm(groups, channels)

    def forward(self, x):
        h = F.relu(self.norm1(self.conv1(x)))
        return F.relu(self.norm2(self.conv2(h)))


def get_inputs():
    return [torch.randn(batch, in_channels, size, size, size)]


def get_init_inputs():
    return [in_channels, channels, groups]
''', {"tiny": dict(batch=2, in_channels=4, channels=16, groups=4, size=8),
      "mid": dict(batch=2, in_channels=16, channels=32, groups=8, size=32),
      "large": dict(batch=2, in_channels=32, channels=64, groups=8, size=64)}),

    "mlp_groupnorm": ("An MLP block on feature vectors: Linear, GroupNorm over the features, SiLU, Linear, the "
                      "residual.", '''
class Model(nn.Module):
    def __init__(self, features, hidden, groups):
        super().__init__()
        self.fc1 = nn.Linear(features, hidden)
        self.norm = nn.GroupNorm(groups, hidden)
        self.fc2 = nn.Linear(hidden, features)

    def forward(self, x):
        return x + self.fc2(F.silu(self.norm(self.fc1(x))))


def get_inputs():
    return [torch.randn(batch, features)]


def get_init_inputs():
    return [features, hidden, groups]
''', {"tiny": dict(batch=16, features=64, hidden=256, groups=8),
      "mid": dict(batch=1024, features=512, hidden=2048, groups=32),
      "large": dict(batch=8192, features=1024, hidden=4096, groups=32)}),

    "resnet_gn_bottleneck": ("A ResNet bottleneck with GroupNorm (Wu and He): 1x1 conv, GroupNorm, ReLU, 3x3 conv, "
                             "GroupNorm, ReLU, 1x1 conv, GroupNorm, the identity, ReLU: three norm blocks.", '''
class Model(nn.Module):
    def __init__(self, channels, width, groups):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, width, 1, bias=False)
        self.gn1 = nn.GroupNorm(groups, width)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.gn2 = nn.GroupNorm(groups, width)
        self.conv3 = nn.Conv2d(width, channels, 1, bias=False)
        self.gn3 = nn.GroupNorm(groups, channels)

    def forward(self, x):
        h = F.relu(self.gn1(self.conv1(x)))
        h = F.relu(self.gn2(self.conv2(h)))
        return F.relu(self.gn3(self.conv3(h)) + x)


def get_inputs():
    return [torch.randn(batch, channels, size, size)]


def get_init_inputs():
    return [channels, width, groups]
''', {"tiny": dict(batch=2, channels=64, width=16, groups=4, size=8),
      "mid": dict(batch=16, channels=256, width=64, groups=32, size=56),
      "large": dict(batch=32, channels=1024, width=256, groups=32, size=28)}),

    "instance_norm_style": ("A style-transfer block with instance normalisation written as GroupNorm with one "
                            "channel per group: reflection padding, conv, GroupNorm(C, C), LeakyReLU.", '''
class Model(nn.Module):
    def __init__(self, in_channels, channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, channels, 3)
        self.norm = nn.GroupNorm(channels, channels)

    def forward(self, x):
        return F.leaky_relu(self.norm(self.conv(F.pad(x, (1, 1, 1, 1), mode="reflect"))), 0.2)


def get_inputs():
    return [torch.randn(batch, in_channels, size, size)]


def get_init_inputs():
    return [in_channels, channels]
''', {"tiny": dict(batch=2, in_channels=3, channels=32, size=16),
      "mid": dict(batch=8, in_channels=64, channels=128, size=64),
      "large": dict(batch=4, in_channels=128, channels=128, size=256)}),

    "poolformer_block": ("A PoolFormer block: GroupNorm with one group (a layer norm over C, H, W), average-pool "
                         "token mixing minus its input, the residual, GroupNorm, a 1x1-conv MLP with GELU, the "
                         "residual.", '''
class Model(nn.Module):
    def __init__(self, channels, hidden):
        super().__init__()
        self.norm1 = nn.GroupNorm(1, channels)
        self.pool = nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False)
        self.norm2 = nn.GroupNorm(1, channels)
        self.fc1 = nn.Conv2d(channels, hidden, 1)
        self.fc2 = nn.Conv2d(hidden, channels, 1)

    def forward(self, x):
        y = self.norm1(x)
        x = x + (self.pool(y) - y)
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


def get_inputs():
    return [torch.randn(batch, channels, size, size)]


def get_init_inputs():
    return [channels, hidden]
''', {"tiny": dict(batch=2, channels=64, hidden=256, size=8),
      "mid": dict(batch=16, channels=128, hidden=512, size=28),
      "large": dict(batch=32, channels=320, hidden=1280, size=14)}),

    "odd_shapes": ("Odd shapes: a 5x5 conv to 96 channels in 3 groups, GroupNorm, Mish, a 3x3 max pool, on planes "
                   "whose sides are primes.", '''
class Model(nn.Module):
    def __init__(self, in_channels, channels, groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, channels, 5)
        self.norm = nn.GroupNorm(groups, channels)
        self.pool = nn.MaxPool2d(3)

    def forward(self, x):
        return self.pool(F.mish(self.norm(self.conv(x))))


def get_inputs():
    return [torch.randn(batch, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, channels, groups]
''', {"tiny": dict(batch=3, in_channels=3, channels=96, groups=3, height=17, width=13),
      "mid": dict(batch=7, in_channels=5, channels=96, groups=3, height=131, width=67),
      "large": dict(batch=13, in_channels=3, channels=96, groups=3, height=257, width=263)}),

    "squeeze_excite_gn": ("A squeeze-and-excitation block after a GroupNorm: GroupNorm, ReLU, global average pool, "
                          "a 1x1 squeeze and excite with ReLU and a sigmoid gate, the gated features.", '''
class Model(nn.Module):
    def __init__(self, channels, reduced, groups):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels)
        self.squeeze = nn.Conv2d(channels, reduced, 1)
        self.excite = nn.Conv2d(reduced, channels, 1)

    def forward(self, x):
        h = F.relu(self.norm(x))
        gate = torch.sigmoid(self.excite(F.relu(self.squeeze(h.mean(dim=(2, 3), keepdim=True)))))
        return h * gate


def get_inputs():
    return [torch.randn(batch, channels, size, size)]


def get_init_inputs():
    return [channels, reduced, groups]
''', {"tiny": dict(batch=2, channels=32, reduced=8, groups=8, size=8),
      "mid": dict(batch=16, channels=256, reduced=16, groups=32, size=28),
      "large": dict(batch=32, channels=512, reduced=32, groups=32, size=28)}),

    "adaptive_groupnorm": ("Adaptive GroupNorm (a diffusion UNet's scale-shift norm): the time embedding through "
                           "SiLU and a Linear gives a scale and a shift per (sample, channel); "
                           "GroupNorm(x) * (1 + scale) + shift, SiLU, 3x3 conv.", '''
class Model(nn.Module):
    def __init__(self, channels, temb_channels, groups):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels, affine=False)
        self.emb = nn.Linear(temb_channels, 2 * channels)
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x, temb):
        scale, shift = self.emb(F.silu(temb))[:, :, None, None].chunk(2, dim=1)
        return self.conv(F.silu(self.norm(x) * (1 + scale) + shift))


def get_inputs():
    return [torch.randn(batch, channels, size, size), torch.randn(batch, temb_channels)]


def get_init_inputs():
    return [channels, temb_channels, groups]
''', {"tiny": dict(batch=2, channels=64, temb_channels=128, groups=8, size=8),
      "mid": dict(batch=8, channels=192, temb_channels=768, groups=32, size=32),
      "large": dict(batch=8, channels=384, temb_channels=1536, groups=32, size=64)}),

    "two_norm_gate": ("Two norm blocks feeding a gate: two GroupNorms of one conv's output (different group "
                      "counts), a tanh branch gated by a sigmoid branch, as a WaveNet-style unit over 1-D "
                      "sequences.", '''
class Model(nn.Module):
    def __init__(self, channels, groups_a, groups_b):
        super().__init__()
        self.conv = nn.Conv1d(channels, 2 * channels, 3, padding=2, dilation=2)
        self.norm_a = nn.GroupNorm(groups_a, channels)
        self.norm_b = nn.GroupNorm(groups_b, channels)
        self.out = nn.Conv1d(channels, channels, 1)

    def forward(self, x):
        a, b = self.conv(x).chunk(2, dim=1)
        return x + self.out(torch.tanh(self.norm_a(a)) * torch.sigmoid(self.norm_b(b)))


def get_inputs():
    return [torch.randn(batch, channels, length)]


def get_init_inputs():
    return [channels, groups_a, groups_b]
''', {"tiny": dict(batch=2, channels=32, groups_a=4, groups_b=8, length=100),
      "mid": dict(batch=8, channels=128, groups_a=16, groups_b=32, length=4096),
      "large": dict(batch=16, channels=256, groups_a=32, groups_b=16, length=16384)}),

    "gan_generator_up": ("A GAN generator's upsampling block: a 4x4 stride-2 ConvTranspose2d, GroupNorm, ReLU.", '''
class Model(nn.Module):
    def __init__(self, in_channels, channels, groups):
        super().__init__()
        self.up = nn.ConvTranspose2d(in_channels, channels, 4, stride=2, padding=1, bias=False)
        self.norm = nn.GroupNorm(groups, channels)

    def forward(self, x):
        return F.relu(self.norm(self.up(x)))


def get_inputs():
    return [torch.randn(batch, in_channels, size, size)]


def get_init_inputs():
    return [in_channels, channels, groups]
''', {"tiny": dict(batch=4, in_channels=64, channels=32, groups=8, size=4),
      "mid": dict(batch=32, in_channels=256, channels=128, groups=32, size=16),
      "large": dict(batch=32, in_channels=128, channels=64, groups=16, size=64)}),
}


def render(doc: str, body: str, sizes: dict) -> str:
    constants = "\n".join(f"{k} = {v}" for k, v in sizes.items())
    return HEADER.format(doc=doc) + body.replace("\n\ndef get_inputs", f"\n\n{constants}\n\n\ndef get_inputs", 1)


def main() -> None:
    here = Path(__file__).parent
    for name, (doc, body, sizes) in ARCHETYPES.items():
        for size, values in sizes.items():
            (here / f"{name}_{size}.py").write_text(render(doc, body, values))


if __name__ == "__main__":
    main()
