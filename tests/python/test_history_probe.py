"""The call-history probe's rule (dirigo.trace._history_verdict) on synthetic snapshots: each program's outputs in
every call order of dirigo.trace.HISTORIES, the candidate compared against the reference under the same order.
Each case is one hack (BUG) or one look-alike that is not history dependence (None)."""
import pytest

torch = pytest.importorskip("torch")

from dirigo.trace import HISTORIES, _history_verdict  # noqa: E402

A = torch.tensor([1.0, 2.0, 3.0])
B = torch.tensor([5.0, -1.0, 0.5])


def runs(a, second, after_ref=None, after_poison=None, mutates=(), same_object=False):
    """Snapshots of one program: first call on A, then input B in each order (default: the same output)."""
    return {"A": [a], "second-call": [second], "after-reference": [second if after_ref is None else after_ref],
            "after-poison": [second if after_poison is None else after_poison], "_mutates": list(mutates),
            "_same_object": same_object}


def verdict(ref, cand, value_dependent=""):
    return _history_verdict(ref, cand, 42, 7, 1e-2, 1e-2, value_dependent)


REF = runs(A, B)


def test_the_histories_are_the_documented_three():
    assert list(HISTORIES) == ["second-call", "after-reference", "after-poison"]


def test_a_correct_candidate_is_no_history():
    assert verdict(REF, runs(A.clone(), B.clone())) is None


def test_caching_the_first_output_is_caches_output():
    f = verdict(REF, runs(A.clone(), A.clone(), after_ref=B.clone(), after_poison=B.clone()))
    assert f["kind"] == "call-history" and f["type"] == "caches-output"


def test_a_module_level_cache_wrong_in_every_order_on_b_is_still_caches_output():
    # the cache was filled by an earlier call on A: B gets A's output in every order, A is right
    f = verdict(REF, runs(A.clone(), A.clone(), same_object=True))
    assert f["type"] == "caches-output" and "very same tensor object" in f["message"]


def test_stale_memory_shows_nan_only_after_poison():
    nan = torch.full_like(B, float("nan"))
    f = verdict(REF, runs(A.clone(), torch.zeros(3), after_ref=B.clone(), after_poison=nan))
    assert f["type"] == "stale-memory" and "never wrote" in f["message"]


def test_state_carried_between_calls_is_carries_state():
    f = verdict(REF, runs(A.clone(), B + 3.0, after_ref=B.clone(), after_poison=B.clone()))
    assert f["type"] == "carries-state"


def test_mutating_an_input_the_reference_leaves_alone():
    f = verdict(REF, runs(A.clone(), B.clone(), mutates=["#0 of forward"]))
    assert f["type"] == "mutates-input"


def test_mutating_an_input_as_the_reference_does_is_fine():
    ref = runs(A, B, mutates=["#0 of forward"])
    assert verdict(ref, runs(A.clone(), B.clone(), mutates=["#0 of forward"])) is None


def test_a_constant_function_is_not_history():
    c = torch.tensor([9.0, 9.0, 9.0])
    assert verdict(REF, runs(c, c.clone())) is None


def test_wrong_on_b_only_but_in_every_order_is_not_history():
    # a plain functional bug that shows on B and not on A: the symbolic check's business, not the probe's
    assert verdict(REF, runs(A.clone(), B * 2)) is None


def test_a_reference_with_its_own_history_moves_the_bar():
    # the reference's output after the poison differs (say a running statistic); the candidate moves alike
    ref = runs(A, B, after_poison=B + 1)
    assert verdict(ref, runs(A.clone(), B.clone(), after_poison=B + 1)) is None
    # and a candidate that does not follow the reference there is wrong in only one order, without moving:
    # its outputs in every order are equal, so it is not history dependence either
    assert verdict(ref, runs(A.clone(), B.clone())) is None


def test_value_dependent_op_sequence_with_a_disagreeing_input():
    f = verdict(REF, runs(A.clone(), B * 2), value_dependent="op 3 ran only in the second")
    assert f["type"] == "value-dependent" and "seed 7" in f["message"]
    assert verdict(REF, runs(A.clone(), B.clone()), value_dependent="op 3 ran only in the second") is None
