# Expected verdict: BUG — the shared-memory loop stops at s > 32 instead of s >= 32, so the
# warp phase sums only 32 of the 64 partial minima (the paper's running example).
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _fused import FusedModel, build  # noqa: E402


class ModelNew(FusedModel):
    ext = build("dirigo_example_min_sum_buggy", "s > 32")
