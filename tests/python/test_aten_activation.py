"""Activation functions: every parameterization KernelBench uses and random others."""
import numpy as np
import pytest

from test_aten_harness import rand, rand_shape, run_op, seeded

CASES = [
    ("relu", [], {}), ("relu6", [], {}), ("leaky_relu", [], {}), ("leaky_relu", [0.2], {}),
    ("leaky_relu", [-1.5], {}), ("elu", [], {}), ("elu", [0.5], {}), ("elu", [1.3, 1.1, 0.7], {}),
    ("selu", [], {}), ("celu", [], {}), ("celu", [0.7], {}), ("gelu", [], {}), ("gelu", [], {"approximate": "tanh"}),
    ("silu", [], {}), ("mish", [], {}), ("sigmoid", [], {}), ("tanh", [], {}), ("hardsigmoid", [], {}),
    ("hardswish", [], {}), ("hardtanh", [], {}), ("hardtanh", [-0.3, 2.5], {}), ("softplus", [], {}),
    ("softplus", [2.0, 1.0], {}), ("softplus", [0.5, 3.0], {}), ("hardshrink", [], {}), ("hardshrink", [1.1], {}),
    ("softshrink", [], {}), ("softshrink", [0.9], {}), ("threshold", [0.3, -2.0], {}), ("log_sigmoid", [], {}),
    ("log_sigmoid_forward", [], {}),
]


@pytest.mark.parametrize("name,args,kwargs", CASES)
def test_activation(name, args, kwargs):
    rng = seeded(name, args, kwargs)
    for _ in range(4):
        x = rand(rng, *rand_shape(rng), lo=-5.0, hi=5.0)
        # include the kinks exactly: 0, the thresholds, the hard ranges' ends
        flat = x.view(-1) if x.is_contiguous() else None
        if flat is not None and flat.numel() >= 4:
            flat[:4] = flat.new_tensor([0.0, 3.0, -3.0, 0.5])[: flat.numel()]
        run_op(f"aten.{name}.default", [x, *args], kwargs, rng=rng, outputs=[0], n=8)


def test_rrelu_eval_is_leaky_with_mean_slope():
    rng = seeded("rrelu")
    run_op("aten.rrelu.default", [rand(rng, 4, 5), 0.1, 0.3, False], rng=rng, n=20)


def test_prelu():
    rng = seeded("prelu")
    for channels in [1, 3]:
        x, w = rand(rng, 2, 3, 4), rand(rng, channels)
        run_op("aten.prelu.default", [x, w], rng=rng, n=12)
        run_op("aten._prelu_kernel.default", [x, w.reshape(channels, 1)], rng=rng, n=12)


def test_glu():
    rng = seeded("glu")
    for dim in [-1, 0, 1]:
        x = rand(rng, 4, 6, 2)
        run_op("aten.glu.default", [x, dim], rng=rng)
