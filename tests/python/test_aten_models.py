"""Every ATen op that small KernelBench-style models dispatch (training mode, as KernelBench runs
them), with its arguments filled in from the schema exactly as the tracer records them
(python/dirigo/trace.py: positional args in schema order including defaults, kwarg-only ones as
kwargs), checked against PyTorch at random locations."""
import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from test_aten_harness import run_op, seeded

SKIP = {"empty.memory_format", "bernoulli_.float", "detach.default"}  # uninitialized, random, no-op alias


class CheckEveryOp(TorchDispatchMode):
    def __init__(self, rng):
        super().__init__()
        self.rng = rng
        self.checked = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        schema = func._schema
        pos, kw, i = [], {}, 0
        for a in schema.arguments:  # the tracer's filling rule
            if not a.kwarg_only and i < len(args):
                v = args[i]
                i += 1
            elif a.name in kwargs:
                v = kwargs[a.name]
            elif a.has_default_value():
                v = a.default_value
            else:
                v = None
            (kw.__setitem__(a.name, v) if a.kwarg_only else pos.append(v))
        name = f"{schema.name.split('::')[-1]}.{schema.overload_name or 'default'}"
        if name not in SKIP and not any(isinstance(v, torch.Tensor) and v.dtype == torch.int64 and v.dim() == 0
                                        for v in pos):
            run_op(f"aten.{name}", pos, kw, rng=self.rng, n=4, rtol=1e-8, atol=1e-9)
            self.checked.append(name)
        return func(*args, **kwargs)


class ConvBnPool(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        self.bn = nn.BatchNorm2d(6)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(6 * 3 * 3, 5)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn(self.conv(x))))
        return torch.softmax(self.fc(x.flatten(1)), dim=1)


class ConvTGroupNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.ConvTranspose3d(2, 4, 3, stride=2, padding=1, output_padding=1)
        self.gn = nn.GroupNorm(2, 4)
        self.pool = nn.AvgPool3d(2)

    def forward(self, x):
        x = self.pool(F.gelu(self.gn(self.conv(x))))
        x = torch.clamp(x, -0.5, 0.5) * 2.0 + 1
        return torch.logsumexp(x.mean(dim=[2, 3], keepdim=True), dim=1)


class Mixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 6)
        self.ln = nn.LayerNorm(6)
        self.inorm = nn.InstanceNorm2d(3, affine=True)
        self.conv1 = nn.Conv1d(2, 4, 3, groups=2, dilation=2)

    def forward(self, x, img, seq):
        a = F.hardswish(self.ln(self.lin(x)))
        a = F.leaky_relu(a, 0.2) - F.mish(a) + F.softplus(a, beta=2)
        b = self.inorm(img)
        b = F.adaptive_avg_pool2d(b, (2, 3)).sum(dim=-1)
        c = torch.tanh(self.conv1(seq)).max(dim=2)[0]
        return a.sum() + b.mean() + torch.cumsum(c, 1).norm() + torch.sigmoid(a).min(dim=1)[0].sum()


def losses(x, y, t):
    return (F.cross_entropy(x, t) + F.mse_loss(x, y) + F.smooth_l1_loss(x, y) +
            F.kl_div(F.log_softmax(x, 1), F.softmax(y, 1), reduction="batchmean") +
            F.triplet_margin_loss(x, y, x.flip(0)) + F.cosine_similarity(x, y).sum() + F.hardtanh(x).argmax())


@pytest.mark.parametrize("make,inputs", [
    (ConvBnPool, lambda rng: (torch.randn(2, 3, 6, 6, dtype=torch.float64),)),
    (ConvTGroupNorm, lambda rng: (torch.randn(1, 2, 3, 4, 3, dtype=torch.float64),)),
    (Mixed, lambda rng: (torch.randn(3, 8, dtype=torch.float64), torch.randn(2, 3, 4, 5, dtype=torch.float64),
                         torch.randn(2, 2, 9, dtype=torch.float64))),
])
def test_model_ops(make, inputs):
    rng = seeded(make.__name__)
    torch.manual_seed(0)
    model = make().double()
    args = inputs(rng)
    with torch.no_grad(), CheckEveryOp(rng) as mode:
        model(*args)
    assert len(mode.checked) >= 5, mode.checked


def test_loss_ops():
    rng = seeded("losses")
    torch.manual_seed(1)
    x, y = torch.randn(4, 5, dtype=torch.float64), torch.randn(4, 5, dtype=torch.float64)
    t = torch.tensor([0, 3, 1, 4])
    with torch.no_grad(), CheckEveryOp(rng) as mode:
        losses(x, y, t)
    assert {"_log_softmax.default", "nll_loss_forward.default", "xlogy.Tensor"} <= set(mode.checked)
