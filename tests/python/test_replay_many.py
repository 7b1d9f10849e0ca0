"""Several witnesses replayed with one load of their programs (python/dirigo/replay.py: replay_many,
group_files, the multi-witness CLI): the answers must be those of lone replays."""
import json
import pathlib
import subprocess
import sys

import pytest

from dirigo import replay as rp

ROOT = pathlib.Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "torch"
SUM = GOLDEN / "sum_wrong_dim"  # reference x.sum(1), candidate x.sum(0), x of shape 6x6

PREFIX_REF = """import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        return torch.exp(x).sum(dim=1)
def get_inputs():
    return [torch.randn(4, 4)]
def get_init_inputs():
    return []
"""
PREFIX_NEW = PREFIX_REF.replace("class Model(", "class ModelNew(").replace("sum(dim=1)", "sum(dim=0)")

BROKEN_NEW = """import torch
class ModelNew(torch.nn.Module):
    def __init__(self, *args):
        super().__init__()
        raise ValueError("cannot build this model")
    def forward(self, x):
        return x
"""


def witness(ref, new, loc, leaves, shape):
    return {"format": "dirigo-witness", "version": 1, "ref": str(ref), "new": str(new), "init_seed": 42,
            "input_seed": None, "tolerance": {"atol": 1e-2, "rtol": 1e-2, "bound": 10},
            "output": {"index": 0, "reference": "out0", "candidate": "out0", "shape": shape},
            "location": loc, "leaves": leaves}


def x_leaf(index, value):
    return {"input": "x", "kind": "input", "index": index, "value": value}


def same_answer(a: dict, b: dict):
    assert a["status"] == b["status"] == "replayed", (a, b)
    for key in ("reference", "candidate", "exceeds"):
        assert a[key] == pytest.approx(b[key], abs=1e-6), key


def test_witnesses_of_one_pair_share_one_load_and_do_not_see_each_other(monkeypatch):
    # A writes x[1,0] = 50; B (same row) writes only x[1,1]: were A's value left in place, B's row sum would show it
    a = witness(SUM / "ref.py", SUM / "new.py", [1], [x_leaf([1, 0], 50.0)], [6])
    b = witness(SUM / "ref.py", SUM / "new.py", [1], [x_leaf([1, 1], -3.0)], [6])
    alone = [rp.replay(w, device="cpu") for w in (a, b)]
    loads = []
    real_init = rp.Programs.__init__

    def counting_init(self, *args, **kw):
        loads.append(args[:2])
        real_init(self, *args, **kw)

    monkeypatch.setattr(rp.Programs, "__init__", counting_init)
    both = rp.replay_many([a, b], device="cpu")
    assert len(loads) == 1
    for got, want in zip(both, alone):
        same_answer(got, want)
        assert got["shared_by"] == 2 and got["load_seconds"] == both[0]["load_seconds"]
    assert alone[0]["reference"] != pytest.approx(alone[1]["reference"])  # the test can tell them apart


def test_carry_back_of_one_witness_is_undone_before_the_next(tmp_path):
    (tmp_path / "ref.py").write_text(PREFIX_REF)
    (tmp_path / "new.py").write_text(PREFIX_NEW)
    trimmed = [{"input": "prefix[0].t1", "kind": "trimmed", "op": 0, "tensor": "t1", "output": 0,
                "aten": "aten::exp", "shape": [4, 4], "index": [1, 1], "value": 9.0}]
    w1 = witness(tmp_path / "ref.py", tmp_path / "new.py", [1], trimmed, [4])
    w2 = witness(tmp_path / "ref.py", tmp_path / "new.py", [1], [x_leaf([0, 0], 0.5)], [4])
    alone = rp.replay(w2, device="cpu")
    first, second = rp.replay_many([w1, w2], device="cpu", steps=100)
    assert first["carried_back"]["changed"] == ["x"]
    same_answer(second, alone)


def test_programs_are_grouped_by_pair_and_a_failed_load_answers_for_its_group_only(tmp_path):
    (tmp_path / "broken.py").write_text(BROKEN_NEW)
    good = witness(SUM / "ref.py", SUM / "new.py", [2], [x_leaf([2, 0], 9.0)], [6])
    bad1 = witness(SUM / "ref.py", tmp_path / "broken.py", [2], [x_leaf([2, 0], 9.0)], [6])
    bad2 = witness(SUM / "ref.py", tmp_path / "broken.py", [3], [x_leaf([3, 0], 9.0)], [6])
    seen = []
    res = rp.replay_many([bad1, good, bad2, {"format": "nope"}], device="cpu",
                         on_result=lambda i, r: seen.append(i))
    assert [r["status"] for r in res] == ["error", "replayed", "error", "unsupported"]
    assert "cannot build this model" in res[0]["message"] and res[0]["shared_by"] == 2
    assert res[1]["exceeds"] and res[1]["shared_by"] == 1
    assert "not a dirigo witness" in res[3]["message"]
    assert sorted(seen) == [0, 1, 2, 3]


def test_snapshot_restores_inputs_parameters_and_buffers():
    import torch
    progs = rp.Programs(str(SUM / "ref.py"), str(SUM / "new.py"), "cpu", 42, None)
    progs.ref_module.register_buffer("counter", torch.zeros(3))
    before = progs.inputs[0].clone()
    progs.snapshot()
    with torch.no_grad():
        progs.inputs[0].fill_(7.0)
        progs.ref_module.counter += 1
    progs.restore()
    assert torch.equal(progs.inputs[0], before)
    assert torch.equal(progs.ref_module.counter, torch.zeros(3))


def test_group_files_and_the_multi_witness_cli(tmp_path):
    (tmp_path / "ref.py").write_text(PREFIX_REF)
    (tmp_path / "new.py").write_text(PREFIX_NEW)
    files = []
    for name, w in (("a.json", witness(SUM / "ref.py", SUM / "new.py", [1], [x_leaf([1, 0], 9.0)], [6])),
                    ("b.json", witness(tmp_path / "ref.py", tmp_path / "new.py", [1], [x_leaf([1, 0], 2.0)], [4])),
                    ("c.json", witness(SUM / "ref.py", SUM / "new.py", [2], [x_leaf([2, 0], 9.0)], [6]))):
        (tmp_path / name).write_text(json.dumps(w))
        files.append(str(tmp_path / name))
    (tmp_path / "d.json").write_text("{broken")
    files.append(str(tmp_path / "d.json"))
    assert rp.group_files(files) == [[files[0], files[2]], [files[1]], [files[3]]]
    env = {"PYTHONPATH": str(ROOT / "python"), "PATH": "/usr/bin:/bin"}
    p = subprocess.run([sys.executable, "-m", "dirigo.replay", "--list-groups", *files], capture_output=True,
                       text=True, timeout=120, cwd=ROOT, env=env)
    assert p.returncode == 0 and p.stdout.splitlines() == [f"{files[0]} {files[2]}", files[1], files[3]]
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, "-m", "dirigo.replay", *files, "--json", "--device", "cpu",
                        "--out-dir", str(out)], capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    lines = [json.loads(l) for l in p.stdout.splitlines()]
    by = {pathlib.Path(l["witness"]).name: l for l in lines}
    assert sorted(by) == ["a.json", "b.json", "c.json", "d.json"], p.stderr
    assert by["a.json"]["exceeds"] and by["c.json"]["exceeds"] and by["a.json"]["shared_by"] == 2
    assert by["b.json"]["status"] == "replayed" and by["d.json"]["status"] == "unsupported"
    assert p.returncode == rp.EXIT_IMPOSSIBLE  # the worst answer: d.json cannot be read
    assert json.loads((out / "c.json").read_text()) == by["c.json"]
