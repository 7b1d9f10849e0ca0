"""dirigo's model of each committed example program reproduces what the device computed.

`dirigo reproduce BUNDLE` evaluates both programs' models (ATen equations, Execute write sets,
cuBLAS semantics) at the inputs recorded in the bundle and compares them with the recorded outputs.
The GPU-traced bundles were recorded on an H200, so this is the cross-check of the symbolic pipeline
against real runs that needs no GPU; the `-synth` bundles were synthesized on the CPU and check the
same against PyTorch. A program with an Execute finding (a race, an uninitialized read) has no
deterministic result: its side is skipped, never compared."""
import json
import pathlib
import shutil
import struct
import subprocess

import pytest

from test_fixtures import DIRIGO, EXAMPLES

LOCATIONS = 32
BUNDLES = sorted(p.parent for p in EXAMPLES.glob("**/bundle*/manifest.json") if (p.parent / "data").is_dir())


def reproduce(bundle: pathlib.Path, locations: int = LOCATIONS) -> tuple[int, dict]:
    p = subprocess.run([str(DIRIGO), "reproduce", str(bundle), "--json", "--locations", str(locations)],
                       capture_output=True, text=True, timeout=600)
    assert p.stdout.strip(), f"dirigo reproduce {bundle} printed nothing (exit {p.returncode}): {p.stderr[-2000:]}"
    return p.returncode, json.loads(p.stdout)


def test_there_are_recorded_bundles():
    gpu = [b for b in BUNDLES if "synth" not in b.name]
    assert len(gpu) >= 10, [b.as_posix() for b in BUNDLES]


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda b: b.relative_to(EXAMPLES).as_posix())
def test_model_reproduces_the_recorded_outputs(bundle):
    code, r = reproduce(bundle)
    assert code == 0 and r["reproduced"], json.dumps(r, indent=1)
    for o in r["outputs"]:
        if "skipped" in o:  # only a nondeterministic program or a missing recording may be skipped
            assert o["skipped"].startswith("Execute found") or o["skipped"] == "no recorded data for this output", o
        else:
            assert o["compared"] >= min(LOCATIONS, 16) - 2 and o["mismatched"] == 0, o


def test_a_changed_recorded_value_is_reported_at_its_location(tmp_path):
    src = EXAMPLES / "gelu_linear" / "bundle-gpu-good"
    copy = tmp_path / "bundle"
    shutil.copytree(src, copy)
    out = copy / "data" / "new.out0.bin"
    raw = bytearray(out.read_bytes())
    (value,) = struct.unpack_from("<f", raw, 4 * 17)  # element [1, 1] of the 8x16 output
    struct.pack_into("<f", raw, 4 * 17, value + 0.5)
    out.write_bytes(bytes(raw))
    code, r = reproduce(copy, locations=1000)  # every location
    assert code == 1 and not r["reproduced"]
    cand = next(o for o in r["outputs"] if o["program"] == "candidate")
    ref = next(o for o in r["outputs"] if o["program"] == "reference")
    assert cand["mismatched"] == 1 and cand["worst"]["index"] == [1, 1], cand
    assert abs(cand["worst"]["recorded"] - cand["worst"]["model"]) == pytest.approx(0.5, abs=1e-3)
    assert ref["mismatched"] == 0


def test_a_bundle_without_data_says_so(tmp_path):
    copy = tmp_path / "bundle"
    shutil.copytree(EXAMPLES / "gelu_linear" / "bundle-gpu-good", copy)
    m = json.loads((copy / "manifest.json").read_text())
    for p in m["programs"]:
        for io in p["inputs"] + p["outputs"]:
            io.pop("data", None)
    (copy / "manifest.json").write_text(json.dumps(m))
    shutil.rmtree(copy / "data")
    code, r = reproduce(copy)
    assert code == 4 and not r["reproduced"]
    assert all(o.get("skipped") == "no recorded data for this output" for o in r["outputs"]), r
