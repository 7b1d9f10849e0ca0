"""Launch plans of host-side mutants (python/dirigo/killmatrix_host.py): the host code's launch
configuration evaluated with the mirror's bindings, refused when it does not reproduce the plan."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))

from dirigo import killmatrix_host as kh  # noqa: E402

HOST = """
#define TILE 16
constexpr int BT = 32;
__global__ void k(const float* x, float* y, int n) { int i = blockIdx.x * 4; if (i < n) y[i] = x[i]; }
torch::Tensor run(torch::Tensor x) {
    int n = x.numel();
    const int threads = 128;
    int blocks = std::min((n + threads - 1) / threads, 4);
    k<<<blocks, threads, 2 * threads * sizeof(float)>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""
PLAN = [{"kernel": "k", "grid": [3, 1, 1], "block": [128, 1, 1], "shared_bytes": 1024,
         "args": [{"tensor": 0}, {"tensor": 1}, {"scalar": 300, "type": "s32"}]}]


def test_c_expr_translates_integer_division_and_min():
    assert kh.c_expr("std::min((n + t - 1) / t, 4)") == "min ( ( n + t - 1 ) // t , 4 )"
    with pytest.raises(kh.HostPlanError):
        kh.c_expr("static_cast<int>(x)")
    with pytest.raises(kh.HostPlanError):
        kh.c_expr("a ? b : c")


def test_original_launch_reproduces_the_plan_with_the_launch_argument_binding():
    # n comes from the launch's scalar argument (position 2 of the plan), sizeof(float) is 4
    got = kh.launches_in_source(HOST, PLAN, {})
    assert got == [{"grid": [3, 1, 1], "block": [128, 1, 1], "shared_bytes": 1024}]


def test_ceil2floor_and_block_halve_change_the_plan():
    floor = HOST.replace("(n + threads - 1) / threads", "(n) / threads")
    assert kh.launches_in_source(floor, PLAN, {})[0]["grid"] == [2, 1, 1]
    halve = HOST.replace("<<<blocks, threads,", "<<<blocks, threads / 2,")
    assert kh.launches_in_source(halve, PLAN, {})[0]["block"] == [64, 1, 1]
    minus = HOST.replace("<<<blocks,", "<<<blocks - 1,")
    assert kh.launches_in_source(minus, PLAN, {})[0]["grid"] == [2, 1, 1]
    shmem = HOST.replace("2 * threads * sizeof(float)", "2 * threads * sizeof(float) / 2")
    assert kh.launches_in_source(shmem, PLAN, {})[0]["shared_bytes"] == 512


def test_dim3_grid_and_defines():
    text = """
#define TILE 16
torch::Tensor run(torch::Tensor x) {
    int rows = x.size(0), cols = x.size(1);
    dim3 block(TILE, TILE);
    dim3 grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
    k<<<grid, block>>>(x.data_ptr<float>(), rows, cols);
}
"""
    plan = [{"kernel": "k", "grid": [2, 3, 1], "block": [16, 16, 1], "shared_bytes": 0,
             "args": [{"tensor": 0}, {"scalar": 40, "type": "s32"}, {"scalar": 20, "type": "s32"}]}]
    assert kh.launches_in_source(text, plan, {})[0]["grid"] == [2, 3, 1]
    mutant = text.replace("(rows + TILE - 1) / TILE", "(rows) / TILE")
    assert kh.launches_in_source(mutant, plan, {})[0]["grid"] == [2, 2, 1]


def test_plan_is_refused_when_the_original_does_not_evaluate_to_the_mirror(tmp_path):
    sub = tmp_path / "s.py"
    sub.write_text(HOST)
    mut = tmp_path / "m.py"
    mut.write_text(HOST.replace("<<<blocks,", "<<<blocks - 1,"))
    wrong = [dict(PLAN[0], grid=[4, 1, 1])]
    with pytest.raises(kh.HostPlanError, match="mirror"):
        kh.derive(str(sub), str(mut), wrong, env={})
    ok = kh.derive(str(sub), str(mut), PLAN, env={})
    assert ok["launches"][0]["grid"] == [2, 1, 1] and not ok["same_as_original"]


def test_unknown_names_give_a_reason_not_a_guess():
    text = HOST.replace("(x.data_ptr<float>(), y.data_ptr<float>(), n)", "(x.data_ptr<float>(), y.data_ptr<float>(), m)")
    text = text.replace("int n = x.numel();", "int n = x.numel() * q.size(0);")
    with pytest.raises(kh.HostPlanError, match="cannot evaluate"):
        kh.launches_in_source(text, PLAN, {})
