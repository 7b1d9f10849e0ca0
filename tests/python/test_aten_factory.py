"""Constants, dropout, the registry's coverage list, and the UNSUPPORTED errors."""
import numpy as np
import pytest
import torch

from dirigo import _core
from test_aten_harness import rand, run_op, seeded, _Describer


def test_constants():
    run_op("aten.zeros.default", [[2, 3]], {"dtype": torch.float64})
    run_op("aten.ones.default", [[4]], {"dtype": torch.int64})
    run_op("aten.full.default", [[2, 2], 3.25], {"dtype": torch.float64})
    run_op("aten.full.default", [[3], 7], {"dtype": torch.int32})
    rng = seeded("like")
    x = rand(rng, 3, 4)
    run_op("aten.zeros_like.default", [x])
    run_op("aten.ones_like.default", [x])
    run_op("aten.full_like.default", [x, -2.5])
    run_op("aten.fill.Scalar", [x, 0.75])
    run_op("aten.fill.Tensor", [x, torch.tensor(1.5, dtype=torch.float64)])
    run_op("aten.arange.default", [7], {"dtype": torch.int64}, n=7)
    run_op("aten.arange.start", [2, 9], {"dtype": torch.float64}, n=7)
    run_op("aten.arange.start_step", [0.5, 3.0, 0.25], {"dtype": torch.float64}, n=10)
    run_op("aten.arange.start_step", [10, -3, -3], {"dtype": torch.int64}, n=10)
    run_op("aten.eye.default", [4], {"dtype": torch.float64}, n=16)
    run_op("aten.scalar_tensor.default", [2.5], {"dtype": torch.float64})


def test_dropout_identity_when_deterministic():
    rng = seeded("dropout")
    x = rand(rng, 3, 4)
    run_op("aten.dropout.default", [x, 0.5, False])
    run_op("aten.dropout.default", [x, 0.0, True])
    run_op("aten.native_dropout.default", [x, 0.3, False])


def _eval(op, args, kwargs, outs, loc):
    d = _Describer()
    return _core.aten_eval(op, d(args), {k: d(v) for k, v in kwargs.items()}, outs, d.storages, 0,
                           np.zeros((1, len(loc)), dtype=np.int64))


def test_unsupported_messages():
    x = torch.ones(2, 2, dtype=torch.float64)
    outs = [{"shape": [2, 2], "dtype": "torch.float64"}]
    with pytest.raises(NotImplementedError, match=r"UNSUPPORTED: aten op dropout \(nondeterministic"):
        _eval("aten.dropout.default", [x, 0.5, True], {}, outs, [0, 0])
    with pytest.raises(NotImplementedError, match=r"UNSUPPORTED: aten op no_such_op \(no per-element semantics"):
        _eval("aten::no_such_op", [x], {}, outs, [0, 0])
    with pytest.raises(NotImplementedError, match=r"UNSUPPORTED: aten op randn \(nondeterministic"):
        _eval("aten.randn.default", [[2, 2]], {}, outs, [0, 0])
    with pytest.raises(NotImplementedError, match=r"gelu approximate='bogus'"):
        _eval("aten.gelu.default", [x], {"approximate": "bogus"}, outs, [0, 0])


def test_malformed_calls_are_errors_not_crashes():
    x = torch.ones(2, 2, dtype=torch.float64)
    outs = [{"shape": [2, 2], "dtype": "torch.float64"}]
    with pytest.raises(ValueError, match="must be a tensor"):
        _eval("aten.mm.default", [3.0, x], {}, outs, [0, 0])
    with pytest.raises(ValueError, match="location has rank"):
        _eval("aten.relu.default", [x], {}, outs, [0])
    with pytest.raises(ValueError, match="missing argument"):
        _eval("aten.pow.Tensor_Scalar", [x], {}, outs, [0, 0])


def test_canonical_names():
    assert _core.aten_canonical_name("aten::add", "Tensor") == "add.Tensor"
    assert _core.aten_canonical_name("aten.relu.default") == "relu"
    assert _core.aten_canonical_name("aten::convolution", "default") == "convolution"


def test_parameter_names_match_torch_schemas():
    """Every registered overload that exists in this torch reads its arguments by the schema's names."""
    checked = 0
    for key in _core.aten_supported_ops():
        base, _, ov = key.partition(".")
        packet = getattr(torch.ops.aten, base, None)
        if packet is None or not hasattr(packet, ov or "default"):
            continue
        schema = getattr(packet, ov or "default")._schema
        names = [a.name for a in schema.arguments if a.name != "out"]
        params = _core.aten_op_parameters(key)
        assert params == names[: len(params)], f"{key}: {params} vs schema {names}"
        checked += 1
    assert checked > 200


def test_uninitialized_memory_is_undef():
    outs = [{"shape": [2, 3], "dtype": "torch.float32"}]
    for op, args in [("aten.empty.memory_format", [[2, 3]]), ("aten.empty_like.default", [torch.ones(2, 3)]),
                     ("aten.empty_strided.default", [[2, 3], [3, 1]]), ("aten.new_empty.default", [torch.ones(1), [2, 3]]),
                     ("aten.new_empty_strided.default", [torch.ones(1), [2, 3], [3, 1]])]:
        d = _Describer()
        got = _core.aten_eval(op, d(args), {}, outs, d.storages, 0, np.array([[1, 2]], dtype=np.int64))
        assert np.isnan(got[0]), op  # the binding reports an Undef value as NaN
