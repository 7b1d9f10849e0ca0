"""Views, layout ops, copies and dtype casts, indexing."""
import numpy as np
import pytest
import torch

from test_aten_harness import rand, rand_shape, run_op, seeded


def test_reshapes():
    rng = seeded("reshape")
    for _ in range(6):
        shape = rand_shape(rng)
        x = rand(rng, *shape)
        n = x.numel()
        run_op("aten.reshape.default", [x, [n]], rng=rng)
        run_op("aten.reshape.default", [x, [-1, shape[-1]]], rng=rng)
        run_op("aten._unsafe_view.default", [x.contiguous(), list(reversed(shape))], rng=rng)
        run_op("aten.view.default", [x.contiguous(), [1, n, 1]], rng=rng)
        run_op("aten.flatten.using_ints", [x, 0, -1], rng=rng)
        run_op("aten.unsqueeze.default", [x, int(rng.integers(-len(shape) - 1, len(shape) + 1))], rng=rng)
        run_op("aten.squeeze.default", [x.reshape(1, *shape, 1)], rng=rng)
        run_op("aten.squeeze.dim", [x.reshape(1, *shape), 0], rng=rng)


def test_permute_transpose_t_expand():
    rng = seeded("permute")
    for _ in range(6):
        shape = rand_shape(rng, min_rank=2)
        x = rand(rng, *shape)
        run_op("aten.permute.default", [x, [int(d) for d in rng.permutation(len(shape))]], rng=rng)
        run_op("aten.transpose.int", [x, 0, -1], rng=rng)
        run_op("aten.t.default", [x.reshape(x.shape[0], -1)], rng=rng)
        small = rand(rng, *[1 if rng.random() < 0.5 else s for s in shape])
        run_op("aten.expand.default", [small, [2, *shape]], rng=rng)
        run_op("aten.clone.default", [x], rng=rng)
        run_op("aten.contiguous.default" if hasattr(torch.ops.aten.contiguous, "default") else "aten.clone.default",
               [x], rng=rng)


def test_slice_select_narrow():
    rng = seeded("slice")
    for _ in range(6):
        shape = rand_shape(rng, max_dim=7)
        x = rand(rng, *shape)
        d = int(rng.integers(0, len(shape)))
        start = int(rng.integers(-shape[d], shape[d]))
        run_op("aten.slice.Tensor", [x, d, start, None, int(rng.integers(1, 3))], rng=rng)
        run_op("aten.slice.Tensor", [x, d, 0, shape[d] + 5], rng=rng)  # end past the end
        run_op("aten.select.int", [x, d, int(rng.integers(-shape[d], shape[d]))], rng=rng)
        run_op("aten.narrow.default", [x, d, 0, max(1, shape[d] // 2)], rng=rng)


def test_cat_stack_split():
    rng = seeded("cat")
    for _ in range(5):
        shape = list(rand_shape(rng))
        d = int(rng.integers(0, len(shape)))
        parts = []
        for _ in range(int(rng.integers(1, 4))):
            s = list(shape)
            s[d] = int(rng.integers(1, 4))
            parts.append(rand(rng, *s))
        run_op("aten.cat.default", [parts, d - len(shape) if rng.random() < 0.3 else d], rng=rng, n=10)
        same = [rand(rng, *shape) for _ in range(3)]
        run_op("aten.stack.default", [same, int(rng.integers(0, len(shape) + 1))], rng=rng, n=10)
        x = torch.cat(parts, d)
        run_op("aten.split.Tensor", [x, 2, d], rng=rng)
        run_op("aten.split_with_sizes.default", [x, [p.shape[d] for p in parts], d], rng=rng)
        run_op("aten.chunk.default", [x, 2, d], rng=rng)
        run_op("aten.unbind.int", [x, d], rng=rng)


def test_pad_tril_triu_diag():
    rng = seeded("pad")
    for _ in range(5):
        shape = rand_shape(rng, min_rank=2)
        x = rand(rng, *shape)
        pad = [int(p) for p in rng.integers(-1, 3, size=2 * int(rng.integers(1, len(shape) + 1)))]
        pad = [max(p, -1) for p in pad]
        try:
            torch.ops.aten.constant_pad_nd(x, pad, 0.5)
        except RuntimeError:
            continue
        run_op("aten.constant_pad_nd.default", [x, pad, 0.5], rng=rng, n=10)
        k = int(rng.integers(-2, 3))
        run_op("aten.tril.default", [x, k], rng=rng, n=10)
        run_op("aten.triu.default", [x, k], rng=rng, n=10)
        run_op("aten.diagonal.default", [x, k, 0, -1], rng=rng)
    v = rand(rng, 4)
    for k in [-1, 0, 2]:
        run_op("aten.diag.default", [v, k], rng=rng, n=12)
        run_op("aten.diag.default", [rand(rng, 4, 5), k], rng=rng)
        run_op("aten.diag_embed.default", [rand(rng, 2, 3), k, 0, 2], rng=rng, n=12)


def test_flip_roll_repeat():
    rng = seeded("flip")
    x = rand(rng, 3, 4, 5)
    run_op("aten.flip.default", [x, [0, 2]], rng=rng)
    run_op("aten.roll.default", [x, [2, -1], [1, 2]], rng=rng)
    run_op("aten.roll.default", [x, [7]], rng=rng)
    run_op("aten.repeat.default", [x, [2, 1, 1, 2]], rng=rng)


def test_dtype_casts():
    rng = seeded("cast")
    x = rand(rng, 4, 5, lo=-9, hi=9)
    run_op("aten._to_copy.default", [x], {"dtype": torch.int64}, rng=rng, n=20)  # rounds toward zero
    run_op("aten._to_copy.default", [x], {"dtype": torch.int32}, rng=rng, n=20)
    run_op("aten._to_copy.default", [torch.round(x) * (x > 0)], {"dtype": torch.bool}, rng=rng, n=20)
    run_op("aten._to_copy.default", [x], {"dtype": torch.float32}, rng=rng, rtol=1e-6)  # reals: no rounding modelled
    i = torch.from_numpy(rng.integers(-50, 50, size=(3, 4)))
    run_op("aten._to_copy.default", [i], {"dtype": torch.float64}, rng=rng)
    run_op("aten._to_copy.default", [i], {"dtype": torch.int8}, rng=rng)
    u = torch.from_numpy(rng.integers(0, 256, size=(3, 4)).astype(np.uint8))
    run_op("aten._to_copy.default", [u], {"dtype": torch.float64}, rng=rng)
    run_op("aten._to_copy.default", [u], {"dtype": torch.int64}, rng=rng)


def test_copy_():
    rng = seeded("copy")
    dst = torch.zeros(3, 4, dtype=torch.float64)
    run_op("aten.copy_.default", [dst, rand(rng, 4)], rng=rng)
    run_op("aten.copy.default", [torch.zeros(3, 4, dtype=torch.float64), rand(rng, 3, 4)], rng=rng)


def test_as_strided():
    rng = seeded("as_strided")
    x = rand(rng, 20, noncontig=False)
    run_op("aten.as_strided.default", [x, [3, 3], [4, 1], 2], rng=rng)
    run_op("aten.as_strided.default", [x, [2, 4], [1, 3]], rng=rng)


def test_data_dependent_indexing():
    rng = seeded("index")
    x = rand(rng, 5, 6)
    idx = torch.from_numpy(rng.integers(0, 6, size=4))
    run_op("aten.index_select.default", [x, 1, idx], rng=rng, n=12)
    run_op("aten.index_select.default", [x, 0, idx % 5], rng=rng, n=12)
    g = torch.from_numpy(rng.integers(0, 5, size=(3, 6)))
    run_op("aten.gather.default", [x, 0, g], rng=rng, n=12)
    run_op("aten.embedding.default", [x, torch.from_numpy(rng.integers(0, 5, size=(2, 3)))], rng=rng, n=12)


def test_advanced_index_unfold_unsafe_split():
    rng = seeded("index_tensor")
    x = rand(rng, 4, 5, 6)
    i = torch.from_numpy(rng.integers(-4, 4, size=(2, 3)))
    j = torch.from_numpy(rng.integers(0, 6, size=(3,)))
    run_op("aten.index.Tensor", [x, [i]], rng=rng, n=12)
    run_op("aten.index.Tensor", [x, [None, j % 5]], rng=rng, n=12)
    run_op("aten.index.Tensor", [x, [i, None, j]], rng=rng, n=12)  # not adjacent: broadcast dims first
    run_op("aten.index.Tensor", [x, [None, i % 5, j]], rng=rng, n=12)
    run_op("aten.unfold.default", [x, 2, 3, 2], rng=rng, n=12)
    run_op("aten.unfold.default", [x, 0, 2, 1], rng=rng, n=12)
    run_op("aten.unsafe_split.Tensor", [x, 2, 1], rng=rng)
