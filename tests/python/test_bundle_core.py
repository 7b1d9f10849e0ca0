"""The C++ bundle reader through the binding (dirigo._core.validate_bundle), cross-checked against the
Python validator (dirigo.bundle) on the same bundles: both must accept the same good bundle and reject
each broken one, and the C++ message must name the JSON path of the offending field."""
import copy
import json

import pytest

import dirigo
from dirigo import bundle
from test_bundle import good_manifest

core = getattr(dirigo, "_core", None)
pytestmark = pytest.mark.skipif(core is None, reason="the C++ core is not built")


def write(tmp_path, manifest):
    out = tmp_path / "b"
    out.mkdir(exist_ok=True)
    (out / "manifest.json").write_text(json.dumps(manifest))
    return str(out)


def test_core_accepts_what_python_writes(tmp_path):
    out = str(tmp_path / "w")
    bundle.write_bundle(out, good_manifest())
    summary = core.validate_bundle(out)
    assert summary.startswith("2 programs, 4 ops (aten 4)")


BROKEN = [
    (lambda m: m.update(version=2), "manifest.json: version: unsupported version 2"),
    (lambda m: m["programs"][1]["ops"][1]["args"].__setitem__(0, {"tensor": "t99"}),
     'manifest.json: programs[1].ops[1].args[0].tensor: unknown tensor id "t99"'),
    (lambda m: m["programs"][0]["tensors"][2].update(offset=100),
     "manifest.json: programs[0].tensors[2]: view extent"),
    (lambda m: m["programs"][0]["tensors"][0].update(dtype="float8"),
     'manifest.json: programs[0].tensors[0].dtype: unknown dtype "float8"'),
    (lambda m: m["programs"][0]["ops"][0].update(kind="triton"),
     'manifest.json: programs[0].ops[0].kind: unknown op kind "triton"'),
    (lambda m: m["match"]["inputs"][0].__setitem__(1, "new.nope"),
     'manifest.json: match.inputs[0][1]: no input named "new.nope"'),
    (lambda m: m["programs"][1]["storages"].append({"id": "s0", "nbytes": 4, "device": "cpu"}),
     'manifest.json: programs[1].storages[2].id: duplicate storage id "s0"'),
]


@pytest.mark.parametrize("mutate, message", BROKEN)
def test_both_readers_reject_with_the_field_path(tmp_path, mutate, message):
    m = copy.deepcopy(good_manifest())
    mutate(m)
    with pytest.raises(bundle.BundleError):
        bundle.validate_manifest(m)
    with pytest.raises(ValueError) as e:
        core.validate_bundle(write(tmp_path, m))
    assert message in str(e.value)


def test_missing_bundle_is_a_value_error(tmp_path):
    with pytest.raises(ValueError, match="not a bundle directory"):
        core.validate_bundle(str(tmp_path / "missing"))
