"""dirigo._core.IrContext: the canonical expression DAG from Python."""
import pytest

core = pytest.importorskip("dirigo._core")


def test_equal_by_construction_is_same_node():
    c = core.IrContext()
    x, y = c.var("x"), c.var("y")
    a = (x + y) * c.real(2.0)
    b = y * c.real(2.0) + c.real(2.0) * x
    assert a.same(b) and a == b and hash(a) == hash(b)
    assert (x - x).same(c.real(0.0))
    assert not (x + y).same(x - y)
    assert str(c.min([x, y, x])) in ("min(x, y)", "min(y, x)")


def test_affine_index_and_bounds():
    c = core.IrContext()
    tid = c.var("tid.x", "bv32", 0, 255)
    assert (tid * c.bv("bv32", 4) + tid).same(c.bv("bv32", 5) * tid)
    assert tid.sort == "bv32"


def test_evaluate_fp32_vs_fp64():
    c = core.IrContext()
    s = c.var("x") + c.var("y")
    v = {"x": 0.1, "y": 0.2}
    assert c.evaluate(s, v) == 0.1 + 0.2
    assert c.evaluate(s, v, f32=True) != c.evaluate(s, v)
    with pytest.raises(ValueError, match="no value for variable"):
        c.evaluate(s, {"x": 1.0})


def test_errors_name_the_problem():
    c = core.IrContext()
    with pytest.raises(ValueError, match="unknown sort"):
        c.var("x", "float7")
    with pytest.raises(ValueError, match="unknown function"):
        c.call("frobnicate", c.var("x"))
    with pytest.raises(ValueError):
        c.var("x") + c.var("a", "bv32")


def test_smtlib_has_declarations():
    c = core.IrContext()
    x = c.var("x")
    text = c.to_smtlib(c.call("exp", x), x)
    assert "(declare-const |x| Real)" in text and "(assert (distinct" in text
