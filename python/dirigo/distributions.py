"""Input distributions of the kill matrix pool and of the kill-witness search (witness_inputs.py).

Distributions apply to the floating-point tensors of get_inputs(); parameters come from the models
built under the same seed. The pool's (killmatrix.input_plan) and the search's:

  kernelbench_randn  KernelBench's own draw          randn / uniform01 / positive  scale 1
  large / huge       randn x 100 / x 1e4              tiny                          randn x 1e-3
  ties               integers in [-4, 4]              outliers                      1% of entries x 1000
  uniform_pm1        uniform in [-1, 1)               negative                      -|randn|
  sparse             90% zeros, the rest randn        constant                      one value everywhere
  cancellation       +v, -v pairs along the last dim, plus 1e-3 noise (sums near 0)
  offset             100 + randn (large mean, unit spread: variance by subtraction cancels)
  ramp               increasing along the last dim, distinct (argmax/max position, sortedness)
  ramp_down          decreasing along the last dim
"""
from __future__ import annotations

SEARCH_DISTRIBUTIONS = ("ties", "cancellation", "offset", "large", "huge", "outliers", "ramp", "ramp_down",
                        "constant", "sparse", "negative", "uniform_pm1", "tiny", "positive", "uniform01", "randn")
SEARCH_SEEDS = 2  # draws per distribution


def search_plan() -> list[dict]:
    plan = []
    for k in range(SEARCH_SEEDS):
        for j, d in enumerate(SEARCH_DISTRIBUTIONS):
            seed = 1000 + 100 * k + j
            plan.append({"name": f"search/{d}/{seed}", "distribution": d, "seed": seed, "family": "search"})
    return plan


def distribute(t, distribution: str, gen):
    """A floating tensor like t drawn from `distribution` (kernelbench_randn keeps t)."""
    import torch
    if distribution == "kernelbench_randn":
        return t
    shape = t.shape
    randn = lambda: torch.randn(shape, generator=gen)  # noqa: E731
    if distribution == "randn":
        v = randn()
    elif distribution == "uniform01":
        v = torch.rand(shape, generator=gen)
    elif distribution == "uniform_pm1":
        v = torch.rand(shape, generator=gen) * 2 - 1
    elif distribution == "large":
        v = randn() * 100
    elif distribution == "huge":
        v = randn() * 1e4
    elif distribution == "tiny":
        v = randn() * 1e-3
    elif distribution == "positive":
        v = randn().abs()
    elif distribution == "negative":
        v = -randn().abs()
    elif distribution == "ties":
        v = torch.randint(-4, 5, shape, generator=gen).to(torch.float32)
    elif distribution == "outliers":
        v = randn()
        mask = torch.rand(shape, generator=gen) < 0.01
        v = torch.where(mask, v * 1000, v)
    elif distribution == "sparse":
        v = randn() * (torch.rand(shape, generator=gen) < 0.1)
    elif distribution == "constant":
        v = torch.full(shape, float(torch.randn(1, generator=gen)))
    elif distribution == "cancellation":
        v = randn()
        if v.dim() >= 1 and shape[-1] >= 2:
            half = v[..., 0::2]
            v[..., 1::2] = -half[..., : v[..., 1::2].shape[-1]]
        v = v + 1e-3 * torch.randn(shape, generator=gen)
    elif distribution == "offset":
        v = 100 + randn()
    elif distribution in ("ramp", "ramp_down"):
        n = shape[-1] if len(shape) else 1
        base = torch.linspace(-1, 1, n) if n > 1 else torch.zeros(1)
        if distribution == "ramp_down":
            base = base.flip(0)
        v = (base.expand(shape) + 1e-3 * torch.randn(shape, generator=gen)).contiguous() if len(shape) else base[0]
    else:
        raise ValueError(f"unknown input distribution {distribution!r}")
    return v.to(t.dtype)
