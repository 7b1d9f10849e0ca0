"""The Python bundle validator (dirigo.bundle) mirrors docs/bundle-format.md: it accepts what the tracer
writes and rejects each kind of malformed manifest with the JSON path of the offending field."""
import copy
import os
import subprocess
import tarfile

import pytest

import dirigo
from dirigo import bundle
from tracing import run, write_program

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def good_manifest():
    prog = {
        "name": "ref", "role": "reference", "source": "ref.py",
        "storages": [{"id": "s0", "nbytes": 64, "device": "cpu"}, {"id": "s1", "nbytes": 64, "device": "cpu"}],
        "tensors": [
            {"id": "t0", "storage": "s0", "offset": 0, "shape": [4, 4], "strides": [4, 1], "dtype": "float32"},
            {"id": "t1", "storage": "s1", "offset": 0, "shape": [4, 4], "strides": [4, 1], "dtype": "float32"},
            {"id": "t2", "storage": "s1", "offset": 1, "shape": [4, 3], "strides": [4, 1], "dtype": "float32"},
        ],
        "inputs": [{"name": "x", "tensor": "t0", "kind": "input"}],
        "outputs": [{"name": "out0", "tensor": "t2"}],
        "ops": [
            {"kind": "aten", "name": "aten::clamp", "overload": "default",
             "schema": "clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor",
             "args": [{"tensor": "t0"}, {"scalar": "-inf", "type": "float"}, {"none": True}], "kwargs": {},
             "outputs": ["t1"], "mutates": [], "from": "python"},
            {"kind": "aten", "name": "aten::slice", "overload": "Tensor", "schema": "slice(...)",
             "args": [{"tensor": "t1"}, {"list": [{"scalar": 1, "type": "int"}]}], "kwargs": {},
             "outputs": ["t2"], "mutates": []},
        ],
    }
    new = copy.deepcopy(prog)
    new.update(name="new", role="candidate")
    return {"format": "dirigo-bundle", "version": 1, "modules": [], "programs": [prog, new],
            "match": {"inputs": [["ref.x", "new.x"]], "outputs": [["ref.out0", "new.out0"]]},
            "tolerance": {"atol": 1e-2, "rtol": 1e-2}}


def test_good_manifest_passes():
    bundle.validate_manifest(good_manifest())


@pytest.mark.parametrize("mutate, path, words", [
    (lambda m: m.update(version=2), "version", "knows version 1"),
    (lambda m: m.update(format="other"), "format", "expected \"dirigo-bundle\""),
    (lambda m: m["programs"][1]["ops"][1]["args"].__setitem__(0, {"tensor": "t99"}),
     "programs[1].ops[1].args[0].tensor", "unknown tensor id \"t99\""),
    (lambda m: m["programs"][0]["ops"][1]["args"][1]["list"].__setitem__(0, {"tensor": "t7"}),
     "programs[0].ops[1].args[1].list[0].tensor", "unknown tensor id"),
    (lambda m: m["programs"][0]["tensors"][2].update(offset=5),
     "programs[0].tensors[2]", "does not fit storage s1"),
    (lambda m: m["programs"][0]["tensors"][0].update(strides=[4]), "programs[0].tensors[0].strides", "has 1 entries"),
    (lambda m: m["programs"][0]["tensors"][0].update(dtype="complex64"), "programs[0].tensors[0].dtype",
     "unknown dtype"),
    (lambda m: m["programs"][0]["ops"][0].update(kind="triton"), "programs[0].ops[0].kind", "unknown op kind"),
    (lambda m: m["programs"][0]["ops"][0].update(**{"from": "cuda"}), "programs[0].ops[0].from", "expected"),
    (lambda m: m["programs"][0]["ops"][0]["args"].__setitem__(1, {"scalar": 1.0, "type": "half"}),
     "programs[0].ops[0].args[1].type", "unknown scalar type"),
    (lambda m: m["programs"][0]["ops"][0]["args"].__setitem__(1, {"weird": 1}),
     "programs[0].ops[0].args[1]", "unknown argument form"),
    (lambda m: m["programs"][0]["inputs"][0].update(kind="weight"), "programs[0].inputs[0].kind",
     "unknown input kind"),
    (lambda m: m["programs"][1].update(name="ref"), "programs[1].name", "duplicate program name"),
    (lambda m: m["programs"][0].update(name="a b"), "programs[0].name", "is not [A-Za-z0-9_.-]+"),
    (lambda m: m["match"]["inputs"].append(["ref.y", "new.x"]), "match.inputs[1][0]", "no input named \"y\""),
    (lambda m: m["programs"][0]["ops"].append({"kind": "launch", "module": "m9", "kernel": "k", "grid": [1, 1, 1],
                                               "block": [1, 1, 1], "shared_bytes": 0, "args": []}),
     "programs[0].ops[2].module", "unknown module id \"m9\""),
    (lambda m: m["tolerance"].update(atol=-1), "tolerance.atol", "non-negative"),
    (lambda m: m["programs"][0]["storages"][0].pop("nbytes"), "programs[0].storages[0].nbytes", "missing"),
])
def test_each_defect_is_named(mutate, path, words):
    m = good_manifest()
    mutate(m)
    with pytest.raises(bundle.BundleError) as e:
        bundle.validate_manifest(m)
    assert str(e.value).startswith(f"manifest.json: {path}: "), str(e.value)
    assert words in str(e.value)


def test_launch_kernel_must_be_in_its_module(tmp_path):
    m = good_manifest()
    m["modules"] = [{"id": "m0", "path": "ptx/m0.ptx"}]
    m["programs"][1]["ops"].append({"kind": "launch", "module": "m0", "kernel": "_Z3fooPf", "grid": [2, 1, 1],
                                    "block": [32, 1, 1], "shared_bytes": 0, "stream": 0,
                                    "args": [{"tensor": "t0", "byte_offset": 0}, {"scalar": 3, "type": "s32"},
                                             {"bytes": "00ff"}, {"pointer": "0x10", "unbound": True}]})
    ptx = ".visible .entry _Z3fooPf(\n.param .u64 p0\n)\n{ ret; }\n"
    out = str(tmp_path / "b")
    bundle.write_bundle(out, m, {"m0": ptx})
    got, files = bundle.read_bundle(out)
    assert got["modules"][0]["sha256"] and files["ptx/m0.ptx"].decode() == ptx
    m["programs"][1]["ops"][-1]["kernel"] = "_Z3barPf"
    with pytest.raises(bundle.BundleError, match=r"programs\[1\]\.ops\[2\]\.kernel: no \.entry _Z3barPf"):
        bundle.write_bundle(str(tmp_path / "c"), m, {"m0": ptx})
    # a PTX file edited after writing no longer matches its hash
    with open(os.path.join(out, "ptx", "m0.ptx"), "a") as fh:
        fh.write("// edited\n")
    with pytest.raises(bundle.BundleError, match=r"modules\[0\]\.sha256: does not match"):
        bundle.read_bundle(out)


def test_traced_bundle_passes_both_validators_and_reads_from_tar(tmp_path):
    ref = write_program(tmp_path, "ref.py", """
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(6)
    def forward(self, x):
        return F.gelu(self.bn(x)).clamp(max=float("inf")).sum(dim=0)
""", inputs="[torch.rand(8, 6)]")
    r, out = run(tmp_path, ref, ref)
    assert r.status == "ok", r.message
    m, files = bundle.read_bundle(out)
    # training-mode BatchNorm writes its running statistics in place: those buffers are inputs
    kinds = {i["name"]: i["kind"] for i in m["programs"][0]["inputs"]}
    assert kinds["bn.running_mean"] == "buffer" and kinds["bn.weight"] == "parameter"
    assert any(op["mutates"] for op in m["programs"][0]["ops"])
    tar_path = str(tmp_path / "b.tar.gz")
    with tarfile.open(tar_path, "w:gz") as tar:
        tar.add(out, arcname="bundle")
    m2, _ = bundle.read_bundle(tar_path)
    assert m2 == m
    # a data file of the wrong size is named
    data = m["programs"][0]["inputs"][0]["data"]
    with open(os.path.join(out, data), "ab") as fh:
        fh.write(b"\0")
    with pytest.raises(bundle.BundleError, match=r"programs\[0\]\.inputs\[0\]\.data: .* has 193 bytes, the tensor needs 192"):
        bundle.read_bundle(out)
    with open(os.path.join(out, data), "rb+") as fh:
        fh.truncate(192)
    core_validate = getattr(getattr(dirigo, "_core", None), "validate_bundle", None)
    if core_validate is not None:  # the authoritative C++ reader, when built
        core_validate(out)
    cli = os.environ.get("DIRIGO_CLI", os.path.join(ROOT, "build", "dirigo"))
    if os.access(cli, os.X_OK):  # the C++ CLI of scripts/build.sh, when it has the bundle command
        h = subprocess.run([cli, "--help"], capture_output=True, text=True, timeout=60)
        has_cmd = "bundle" in h.stdout  # a build older than the bundle command lists no subcommands
        if has_cmd:
            p = subprocess.run([cli, "bundle", "validate", out], capture_output=True, text=True, timeout=60)
            assert p.returncode == 0 and p.stdout.startswith("OK"), p.stdout + p.stderr


def test_unreadable_inputs_are_errors_not_crashes(tmp_path):
    with pytest.raises(bundle.BundleError, match="no such bundle"):
        bundle.read_bundle(str(tmp_path / "missing"))
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "manifest.json").write_text("{not json")
    with pytest.raises(bundle.BundleError, match="manifest.json: not valid JSON"):
        bundle.read_bundle(str(tmp_path / "d"))
    (tmp_path / "junk.tar").write_bytes(b"\x00garbage" * 10)
    with pytest.raises(bundle.BundleError):
        bundle.read_bundle(str(tmp_path / "junk.tar"))
    with pytest.raises(bundle.BundleError, match=r"manifest.json: \$: expected a JSON object"):
        bundle.validate_manifest([1, 2])
