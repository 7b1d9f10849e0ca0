# Expected verdict: EQUAL — VERIFIED (every location proven equal) — the same kernel with the loop bound fixed.
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _fused import FusedModel, build  # noqa: E402


class ModelNew(FusedModel):
    ext = build("dirigo_example_min_sum_fixed", "s >= 32")
