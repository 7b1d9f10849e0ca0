"""Parameter pairing (dirigo.match): names, shapes, values as tie-breaker and as notes, ambiguity, rematch."""
import hashlib
import json
import os
import struct
import subprocess
import sys

import pytest

from dirigo import bundle, match
from tracing import manifest, run, write_program


def prog(name, params, forward=(("x", [4]),), outputs=(("out0", [4]),)):
    """A manifest program reduced to what matching reads. params: (name, shape, sha256 or None[, kind])."""
    inputs, tensors = [], []
    for i, (n, shape) in enumerate(forward):
        inputs.append({"name": n, "kind": "input", "tensor": f"i{i}", "sha256": "in" + n})
        tensors.append({"id": f"i{i}", "shape": shape, "dtype": "float32"})
    for i, p in enumerate(params):
        n, shape, sha = p[:3]
        e = {"name": n, "kind": p[3] if len(p) > 3 else "parameter", "tensor": f"p{i}"}
        if sha:
            e["sha256"] = sha
        inputs.append(e)
        tensors.append({"id": f"p{i}", "shape": shape, "dtype": "float32"})
    outs = []
    for i, (n, shape) in enumerate(outputs):
        outs.append({"name": n, "tensor": f"o{i}"})
        tensors.append({"id": f"o{i}", "shape": shape, "dtype": "float32"})
    return {"name": name, "inputs": inputs, "outputs": outs, "tensors": tensors}


def pairs(m):
    return dict((a.split(".", 1)[1], b.split(".", 1)[1]) for a, b in m["inputs"] if not a.endswith(".x"))


def has(notes, *words):
    return any(all(w in n for w in words) for n in notes)


def zeros(n):
    return hashlib.sha256(bytes(4 * n)).hexdigest()


def ones(n):
    return hashlib.sha256(struct.pack("<f", 1.0) * n).hexdigest()


def test_normalized_names_pair_a_parameter_with_a_buffer_initialized_differently():
    # KernelBench "init-only": the candidate keeps the conv weight as a buffer of its own init
    ref = prog("ref", [("conv.weight", [16, 3, 3], "w-ref"), ("conv.bias", [16], "b")])
    new = prog("new", [("conv_weight", [16, 3, 3], "w-new", "buffer"), ("Conv_Bias", [16], "b", "buffer")])
    m, notes = match.match_programs(ref, new)
    assert pairs(m) == {"conv.weight": "conv_weight", "conv.bias": "Conv_Bias"}
    assert ["ref.x", "new.x"] == m["inputs"][0]
    assert m["differing_values"] == [["ref.conv.weight", "new.conv_weight"]]
    assert has(notes, "initialized differently", "ref.conv.weight ~ new.conv_weight")
    assert not has(notes, "no counterpart") and not has(notes, "AMBIGUOUS")


def test_a_shared_name_with_another_shape_is_not_a_pair_by_name():
    # the candidate's own weight in [out, in] layout of a transposed conv: same name, other shape
    ref = prog("ref", [("weight", [3, 8], "a"), ("bias", [8], "b")])
    new = prog("new", [("weight", [8, 3], "c"), ("bias", [8], "b")])
    m, notes = match.match_programs(ref, new)
    assert pairs(m) == {"bias": "bias"}
    assert has(notes, "weight", "share a name but not a shape")
    assert has(notes, "reference parameter weight has no counterpart")
    assert has(notes, "candidate parameter weight has no counterpart")


def test_the_only_parameter_of_its_shape_pairs_whatever_its_values_and_size_one_axes():
    ref = prog("ref", [("bias", [1, 1, 1], "aa"), ("w", [4, 5], "w1")])
    new = prog("new", [("fc_w", [4, 5], "w2"), ("b", [1], "bb")])
    m, notes = match.match_programs(ref, new)
    assert pairs(m) == {"bias": "b", "w": "fc_w"}
    assert sorted(m["differing_values"]) == [["ref.bias", "new.b"], ["ref.w", "new.fc_w"]]
    assert has(notes, "only ones of their shape", "bias ~ b")
    # other elements ((2, 1) is 2 elements, (1, 3) is 3) never pair
    m, notes = match.match_programs(prog("ref", [("bias", [2, 1], "aa")]), prog("new", [("bias", [1, 3], "aa")]))
    assert pairs(m) == {} and has(notes, "share a name but not a shape")


def test_equal_values_break_the_tie_between_same_shaped_parameters_in_another_order():
    # two biases the candidate declares in the other order, with the reference's values (copied)
    ref = prog("ref", [("b1", [8], "h1"), ("b2", [8], "h2")])
    new = prog("new", [("p", [8], "h2"), ("q", [8], "h1")])
    m, notes = match.match_programs(ref, new)
    assert pairs(m) == {"b1": "q", "b2": "p"}
    assert "differing_values" not in m
    assert has(notes, "equal recorded values", "b1 ~ q") and not has(notes, "AMBIGUOUS")


def test_same_shaped_parameters_nothing_tells_apart_pair_by_order_and_say_so():
    ref = prog("ref", [("b1", [8], "h1"), ("b2", [8], "h2")])
    new = prog("new", [("p", [8], "h3"), ("q", [8], "h4")])
    m, notes = match.match_programs(ref, new)
    assert pairs(m) == {"b1": "p", "b2": "q"}
    assert has(notes, "AMBIGUOUS", "b1 ~ p", "b2 ~ q")
    # without recorded values (a fake-tensor trace) the same
    m, notes = match.match_programs(prog("ref", [("b1", [8], None), ("b2", [8], None)]),
                                    prog("new", [("p", [8], None), ("q", [8], None)]))
    assert pairs(m) == {"b1": "p", "b2": "q"} and has(notes, "AMBIGUOUS") and "differing_values" not in m


def test_role_words_and_owners_pair_norm_parameters_declared_in_another_order():
    # BatchNorm's defaults (ones, zeros) say nothing about which is which: gamma/beta do
    ref = prog("ref", [("lin.bias", [8], "r"), ("bn.weight", [8], ones(8)), ("bn.bias", [8], zeros(8))])
    new = prog("new", [("bn_beta", [8], zeros(8)), ("bn_gamma", [8], ones(8)), ("bias_linear", [8], "c")])
    m, notes = match.match_programs(ref, new)
    assert pairs(m) == {"lin.bias": "bias_linear", "bn.weight": "bn_gamma", "bn.bias": "bn_beta"}
    assert not has(notes, "AMBIGUOUS")
    # two biases: the owner (bn ~ batch_norm) tells them apart, the role word alone cannot
    ref = prog("ref", [("gemm.bias", [8], "g"), ("batch_norm.bias", [8], zeros(8))])
    new = prog("new", [("bias", [8], "h"), ("bn_bias", [8], zeros(8))][::-1])
    m, notes = match.match_programs(ref, new)
    assert pairs(m) == {"gemm.bias": "bias", "batch_norm.bias": "bn_bias"}
    assert has(notes, "role word is dropped", "batch_norm.bias ~ bn_bias")


def test_all_zero_values_are_weak_evidence_against_a_role_word():
    # equal zero values would pair bias ~ running_mean; the role words say otherwise
    ref = prog("ref", [("bn.bias", [8], zeros(8)), ("bn.running_mean", [8], zeros(8), "buffer")])
    new = prog("new", [("mean_buf", [8], zeros(8), "buffer"), ("shift", [8], "s")])
    m, notes = match.match_programs(ref, new)
    assert pairs(m)["bn.running_mean"] == "mean_buf"
    assert pairs(m)["bn.bias"] == "shift"


def test_a_candidate_that_folds_two_parameters_into_one_is_a_named_guess():
    # reference: Linear bias + add_value; candidate: one bias (folded, or one dropped)
    ref = prog("ref", [("lin.weight", [8, 4], "w"), ("lin.bias", [8], "b"), ("add_value", [8], "a")])
    new = prog("new", [("weight", [8, 4], "w"), ("bias", [8], "f")])
    m, notes = match.match_programs(ref, new)
    assert pairs(m) == {"lin.weight": "weight", "lin.bias": "bias"}  # the role word picks lin.bias
    assert has(notes, "2 reference and 1 candidate parameters of shape [8]", "fold")
    assert has(notes, "reference parameter add_value has no counterpart")
    # with no role word to go by it is position, and said to be a guess
    ref = prog("ref", [("scale_a", [8], "a"), ("scale_b", [8], "b")])
    m, notes = match.match_programs(ref, prog("new", [("s", [8], "c")]))
    assert pairs(m) == {"scale_a": "s"} and has(notes, "AMBIGUOUS", "scale_a ~ s") and has(notes, "fold")


def test_forward_inputs_and_outputs_pair_by_position_constants_never():
    ref = prog("ref", [("c", [2], "k")], forward=(("x", [4]), ("y", [4])), outputs=(("out0", [4]), ("out1", [2])))
    ref["inputs"][-1]["constant"] = True
    new = prog("new", [], forward=(("a", [4]),), outputs=(("out0", [4]),))
    m, notes = match.match_programs(ref, new)
    assert m["inputs"] == [["ref.x", "new.a"]] and m["outputs"] == [["ref.out0", "new.out0"]]
    assert has(notes, "takes 2 tensor inputs, the candidate 1") and has(notes, "returns 2 tensors")
    assert not has(notes, "const")


PARAM_REF = """
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
    def forward(self, x):
        return torch.relu(self.conv(x))
"""

# the same function, with the weight as a buffer of its own initialization (KernelBench "init-only")
OWN_INIT = """
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("conv_weight", torch.randn(4, 3, 3, 3))
        self.conv_bias = nn.Parameter(torch.zeros(4))
    def forward(self, x):
        return torch.relu(F.conv2d(x, self.conv_weight, self.conv_bias))
"""


@pytest.fixture
def own_init_bundle(tmp_path):
    ref = write_program(tmp_path, "ref.py", PARAM_REF)
    new = write_program(tmp_path, "new.py", OWN_INIT)
    r, out = run(tmp_path, ref, new)
    assert r.status == "ok", r.message
    return out


def test_trace_pairs_differently_initialized_parameters(own_init_bundle):
    m, _ = manifest(own_init_bundle)
    assert sorted(map(tuple, m["match"]["inputs"])) == [
        ("ref.conv.bias", "new.conv_bias"), ("ref.conv.weight", "new.conv_weight"), ("ref.x", "new.x")]
    assert sorted(map(tuple, m["match"]["differing_values"])) == [
        ("ref.conv.bias", "new.conv_bias"), ("ref.conv.weight", "new.conv_weight")]


def _as_old_trace(path):
    """Rewrite the bundle's match as the earlier rule left it: the differently initialized weight unpaired."""
    mpath = os.path.join(path, "manifest.json")
    m = json.load(open(mpath))
    m["match"] = {"inputs": [["ref.x", "new.x"]], "outputs": [["ref.out0", "new.out0"]],
                  "notes": ["reference parameter conv.weight has no counterpart in the candidate"]}
    json.dump(m, open(mpath, "w"))
    return m


def test_rematch_recomputes_match_into_a_copy(own_init_bundle, tmp_path):
    old = _as_old_trace(own_init_bundle)
    copy = str(tmp_path / "copy")
    r = bundle.rematch_bundle(own_init_bundle, copy)
    assert r["changed"] and r["out"] == copy and r["old"]["inputs"] == old["match"]["inputs"]
    new_m, _ = manifest(copy)  # validates
    assert ["ref.conv.weight", "new.conv_weight"] in new_m["match"]["inputs"]
    assert new_m["programs"] == old["programs"]
    assert json.load(open(os.path.join(own_init_bundle, "manifest.json")))["match"] == old["match"]  # untouched
    assert bundle.rematch_bundle(copy, None)["changed"] is False  # rematching twice changes nothing


def test_rematch_cli_in_place(own_init_bundle):
    _as_old_trace(own_init_bundle)
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(__file__), "..", "..", "python"))
    p = subprocess.run([sys.executable, "-m", "dirigo.bundle", "rematch", own_init_bundle], capture_output=True,
                       text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "match changed (1 -> 3 input pairs)" in p.stdout and "initialized differently" in p.stdout
    m, _ = manifest(own_init_bundle)
    assert ["ref.conv.weight", "new.conv_weight"] in m["match"]["inputs"]
    p = subprocess.run([sys.executable, "-m", "dirigo.bundle", "rematch", own_init_bundle + "-missing"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 2 and "no such bundle" in p.stderr


def test_check_compares_the_function_and_notes_the_initialization(own_init_bundle):
    dirigo = os.environ.get("DIRIGO_BIN", os.path.join(os.path.dirname(__file__), "..", "..", "build", "dirigo"))
    if not os.path.exists(dirigo):
        pytest.skip("build/dirigo not built")
    p = subprocess.run([dirigo, "check", own_init_bundle, "--json", "--budget", "60"], capture_output=True,
                       text=True, timeout=300)
    rep = json.loads(p.stdout)
    assert rep["outcome"] in ("VERIFIED", "CHECKED"), rep.get("reason")
    assert any("conv.weight" in n and "different values" in n for n in rep["notes"])
    # the earlier pairing left the weight free on each side: a difference of parameters, not of function
    _as_old_trace(own_init_bundle)
    p = subprocess.run([dirigo, "check", own_init_bundle, "--json", "--budget", "60"], capture_output=True,
                       text=True, timeout=300)
    assert json.loads(p.stdout)["outcome"] in ("BUG", "SUSPECT")


def test_corpus_eval_checks_rematched_copies(own_init_bundle, tmp_path):
    import importlib.util
    path = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "corpus-eval.py")
    spec = importlib.util.spec_from_file_location("corpus_eval", path)
    ce = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ce)
    _as_old_trace(own_init_bundle)
    r = ce.rematch_copy(own_init_bundle, str(tmp_path / "rematched" / "007"))
    assert r["changed"] and os.path.isfile(os.path.join(r["out"], "manifest.json"))
    assert ["ref.conv.weight", "new.conv_weight"] in manifest(r["out"])[0]["match"]["inputs"]
