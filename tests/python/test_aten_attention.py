"""Scaled dot-product attention (the fused CPU overload and the composite), masks, causal, GQA."""
import numpy as np
import pytest
import torch

from test_aten_harness import rand, run_op, seeded

TOL = dict(rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("causal", [False, True])
def test_flash_for_cpu(causal):
    rng = seeded("sdpa", causal)
    for _ in range(4):
        b, h, l, s, e = (int(x) for x in rng.integers(1, 5, size=5))
        if causal:
            s = max(s, l)
        # the fused CPU kernel expects the last dim contiguous (the sdpa frontend guarantees it)
        q, k, v = rand(rng, b, h, l, e, noncontig=False), rand(rng, b, h, s, e).contiguous(), rand(rng, b, h, s, e)
        v = v.contiguous()
        scale = None if rng.random() < 0.5 else float(rng.uniform(0.1, 1))
        run_op("aten._scaled_dot_product_flash_attention_for_cpu.default", [q, k, v, 0.0, causal],
               {"scale": scale}, rng=rng, **TOL)


def test_masks_and_gqa():
    rng = seeded("sdpa_mask")
    q, k, v = rand(rng, 2, 4, 3, 5), rand(rng, 2, 4, 6, 5), rand(rng, 2, 4, 6, 5)
    fmask = rand(rng, 3, 6)
    run_op("aten._scaled_dot_product_flash_attention_for_cpu.default", [q.contiguous(), k.contiguous(), v.contiguous()],
           {"attn_mask": fmask},
           rng=rng, outputs=[0], **TOL)
    bmask = torch.from_numpy(rng.random((2, 1, 3, 6)) < 0.7)
    bmask[..., 0] = True  # no fully masked row
    run_op("aten.scaled_dot_product_attention.default", [q, k, v, bmask], rng=rng, **TOL)
    kg, vg = rand(rng, 2, 2, 6, 5), rand(rng, 2, 2, 6, 5)
    run_op("aten.scaled_dot_product_attention.default", [q, kg, vg], {"enable_gqa": True}, rng=rng, **TOL)
