"""Bundle replay on a GPU (python/dirigo/bundle_run.py CudaLauncher): the traced LayerNorm's op list
with its own PTX, launched through the CUDA driver API, reproduces the traced output; a launch the
recorded grid does not fit (twice the rows) is a crash row, not a silent answer."""
import os
import pathlib
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
BUNDLE = ROOT / "examples" / "execute_bugs" / "layernorm_correct" / "bundle"


@pytest.mark.gpu
def test_cuda_replay_reproduces_the_traced_output():
    import torch
    from dirigo import bundle_run as br
    prog = br.BundleProgram(str(BUNDLE))
    launcher = br.CudaLauncher()
    out = prog.run(prog.traced_bindings("cuda"), launcher, "cuda")[0].cpu()
    rec = prog.prog["outputs"][0]
    traced = np.fromfile(BUNDLE / rec["data"], dtype="<f4").reshape(out.shape)
    assert torch.allclose(out, torch.from_numpy(traced), atol=1e-5)
    with pytest.raises(br.LaunchFailed):
        prog.run(prog.traced_bindings("cuda"), launcher, "cuda", launch_overrides={0: {"grid": [0, 1, 1]}})
