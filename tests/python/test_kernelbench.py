"""dirigo.kernelbench: KernelBench's eval_kernel_against_ref with dirigo's verdict as correctness."""
import inspect
import pathlib

from dirigo import kernelbench

ROOT = pathlib.Path(__file__).resolve().parents[2]
GELU = ROOT / "examples" / "gelu_linear"


def src(name):
    return (GELU / name).read_text()


def test_signature_is_kernelbenchs():
    params = list(inspect.signature(kernelbench.eval_kernel_against_ref).parameters)
    assert params[:13] == ["original_model_src", "custom_model_src", "seed_num", "num_correct_trials",
                           "num_perf_trials", "measure_performance", "timing_method", "verbose", "build_dir",
                           "device", "backend", "precision", "check_for_excessive_speedup"]
    fields = kernelbench.KernelExecResult().model_dump()
    assert list(fields) == ["compiled", "correctness", "metadata", "runtime", "runtime_stats", "ref_runtime",
                            "ref_runtime_stats"]


def test_a_wrong_candidate_fails_with_location_witness_and_values():
    r = kernelbench.eval_kernel_against_ref(src("ref.py"), src("bad.py"), device="cpu")
    assert r.compiled and not r.correctness
    m = r.metadata
    assert m["dirigo_outcome"] == "BUG" and m["correctness_issue"] == "Output mismatch"
    assert m["evidence"] == "replay-cpu" and m["reward"] == -1.0
    assert m["location"]["output"] and m["location"]["index"] is not None
    assert m["witness"]["format"] == "dirigo-witness"
    assert m["reference_value"] and m["candidate_value"] and m["reference_value"] != m["candidate_value"]
    assert float(m["max_difference"][0]) > 0.01


def test_an_equal_candidate_is_correct():
    r = kernelbench.eval_kernel_against_ref(src("ref.py"), src("good.py"), device="cpu", measure_performance=True)
    assert r.compiled and r.correctness, r.metadata
    assert r.metadata["dirigo_outcome"] in ("CHECKED", "VERIFIED")
    assert r.runtime == -1.0 and any("does not time" in n for n in r.metadata["dirigo_notes"])


def test_a_candidate_that_does_not_load_did_not_compile():
    r = kernelbench.eval_kernel_against_ref(src("ref.py"), "import torch\nclass ModelNew(torch.nn.Module:\n", device="cpu")
    assert not r.compiled and not r.correctness
    # it fails to load where the reference runs: dirigo's BUG (evidence exception), KernelBench's compile error
    assert "compilation_error" in r.metadata and r.metadata["dirigo_outcome"] == "BUG"
    assert r.metadata["evidence"] == "exception" and "SyntaxError" in r.metadata["compilation_error"]


def test_a_candidate_that_raises_in_forward_compiled_but_is_not_correct():
    bad = ("import torch\nclass ModelNew(torch.nn.Module):\n    def __init__(self, a, b):\n        super().__init__()\n"
           "    def forward(self, x):\n        raise ValueError('boom')\n")
    r = kernelbench.eval_kernel_against_ref(src("ref.py"), bad, device="cpu")
    assert r.compiled and not r.correctness
    assert "boom" in r.metadata.get("runtime_error", ""), r.metadata
