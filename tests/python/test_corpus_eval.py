"""Tables and statistics of scripts/corpus-eval.py on small synthetic result lists."""
import importlib.util
import os

import pytest

_PATH = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "corpus-eval.py")
_spec = importlib.util.spec_from_file_location("corpus_eval", _PATH)
ce = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ce)


def R(k, label, outcome, **kw):
    return dict(k=k, label=label, outcome=outcome, trace_status="ok", **kw)


def test_percentile_median_even_and_odd():
    assert ce.percentile([3, 1, 2], 50) == 2
    assert ce.percentile([4, 1, 3, 2], 50) == 2.5
    assert ce.percentile([], 50) is None
    assert ce.percentile([None, 5], 50) == 5


def test_percentile_p90_nearest_rank():
    xs = list(range(1, 11))  # 1..10
    assert ce.percentile(xs, 90) == 9
    assert ce.percentile(xs + [11], 90) == 10  # ceil(0.9*11) = 10th value
    assert ce.percentile([7], 90) == 7
    assert ce.percentile(xs, 100) == 10


def test_outcome_table_splits_by_label_and_counts_untraced():
    rs = [R(0, "correct", "CHECKED"), R(1, "correct", "BUG"), R(2, "output_mismatch", "BUG"),
          R(3, "output_mismatch", "UNSUPPORTED"), dict(k=4, label="correct", trace_status="error")]
    t = ce.outcome_table(rs)
    assert t["correct"]["CHECKED"] == 1 and t["correct"]["BUG"] == 1 and t["correct"][ce.NOT_TRACED] == 1
    assert t["output_mismatch"]["BUG"] == 1 and t["output_mismatch"]["UNSUPPORTED"] == 1
    assert sum(t["all"].values()) == 5
    md = ce.markdown_outcome_table(rs)
    lines = md.splitlines()
    assert lines[0].startswith("| KernelBench label | BUG | SUSPECT | CHECKED")
    assert ce.NOT_TRACED in lines[0]
    assert lines[-1].startswith("| all | 2 | 0 | 1 |") and lines[-1].endswith("| 5 |")


def test_final_outcome_overrides_check_outcome():
    rs = [R(0, "output_mismatch", "BUG", final_outcome="SUSPECT")]
    assert ce.outcome_table(rs)["all"]["SUSPECT"] == 1


def test_recall_excludes_unsupported_and_untraced_and_counts_suspect():
    rs = [R(0, "output_mismatch", "BUG"), R(1, "output_mismatch", "SUSPECT"), R(2, "output_mismatch", "CHECKED"),
          R(3, "output_mismatch", "TIMEOUT"), R(4, "output_mismatch", "UNSUPPORTED"),
          dict(k=5, label="output_mismatch", trace_status="error"), R(6, "correct", "BUG")]
    assert ce.recall(rs) == (2, 4)
    assert ce.recall([]) == (0, 0)


def test_reason_group_merges_what_varies():
    a = ce.reason_group("UNSUPPORTED: ptx: opcode 'cvt.rn.f16.f32' in kernel _Z6fusedPfS_i at line 123")
    b = ce.reason_group("UNSUPPORTED: ptx: opcode 'cvt.rn.f16.f32' in kernel _Z3fooPKfPfi at line 77")
    assert a == b
    assert "cvt.rn.f16.f32" in a and "KERNEL" in a
    c = ce.reason_group("bundle: cannot read /tmp/x/y/manifest.json")
    assert "PATH" in c and "/tmp" not in c
    assert ce.reason_group("aten: out0[3, 4] op foo") == ce.reason_group("aten: out0[7, 1] op foo")
    assert ce.reason_group("") == "(no reason)"


def test_group_reasons_ranks_by_count():
    rs = [R(0, "correct", "UNSUPPORTED", reason="aten: op aten::foo not modeled (3 args)"),
          R(1, "correct", "UNSUPPORTED", reason="aten: op aten::foo not modeled (5 args)"),
          R(2, "correct", "UNSUPPORTED", reason="ptx: opcode bar"),
          R(3, "correct", "CHECKED", reason="")]
    g = ce.group_reasons(rs, "UNSUPPORTED")
    assert [n for _, n, _ in g] == [2, 1]
    assert g[0][2] == [0, 1]
    nt = ce.group_reasons([dict(k=9, label="correct", trace_status="error", trace_message="illegal memory access")],
                          ce.NOT_TRACED)
    assert nt == [("illegal memory access", 1, [9])]


def test_time_to_bug_from_report_fields():
    bug = {"outcome": "BUG", "evidence": "fp32-evaluation", "search_seconds": 0.12, "seconds": 0.5, "lower_seconds": 0.3}
    assert ce.time_to_bug(bug) == {"search": 0.12, "check": 0.5}
    ex = {"outcome": "BUG", "evidence": "execute-safety", "search_seconds": 0, "lower_seconds": 0.7, "seconds": 0.7}
    assert ce.time_to_bug(ex)["search"] == 0.7
    sus = {"outcome": "SUSPECT", "first_differ": 1, "search_seconds": 20, "seconds": 21,
           "locations": [{"ms": 100}, {"ms": 250}, {"ms": 9000}]}
    assert ce.time_to_bug(sus)["search"] == pytest.approx(0.35)
    assert ce.time_to_bug({"outcome": "CHECKED", "seconds": 3}) == {}


def test_fold_replay_decides_bug_or_suspect():
    rs = [R(0, "output_mismatch", "BUG", evidence="fp32-evaluation"),
          R(1, "correct", "BUG", evidence="fp32-evaluation"),
          R(2, "correct", "BUG", evidence="fp32-evaluation"),
          R(3, "output_mismatch", "BUG", evidence="execute-safety"),
          R(4, "output_mismatch", "SUSPECT", evidence=""),
          R(5, "correct", "CHECKED", final_outcome="BUG")]
    ok = dict(status="replayed", evidence="replay-gpu")
    replays = {0: dict(ok, exceeds=True), 1: dict(ok, exceeds=False), 4: dict(ok, exceeds=True),
               2: {"status": "unsupported", "message": "no GPU"}, 3: dict(ok, exceeds=False)}
    ce.fold(rs, replays)
    # 2: replay impossible -> the fp32 evidence stands, labelled; 3: Execute findings need no replay
    assert [r.get("final_outcome") for r in rs] == ["BUG", "SUSPECT", "BUG", "BUG", "BUG", None]
    assert rs[2]["final_evidence"].startswith("fp32-evaluation")
    assert rs[0]["final_evidence"] == "replay-gpu"
    assert "did not reproduce" in rs[1]["final_evidence"]


def test_replay_confirms_reads_dirigo_replay_answers():
    assert ce.replay_confirms({}) is None
    assert ce.replay_confirms({"status": "replayed", "exceeds": True}) is True
    assert ce.replay_confirms({"status": "replayed", "exceeds": False}) is False
    assert ce.replay_confirms({"status": "error", "exceeds": True}) is None
    assert ce.replay_confirms({"status": "unsupported", "message": "x"}) is None


def test_load_replays_by_file_name(tmp_path):
    import json
    d = tmp_path / "replay" / "replay"
    d.mkdir(parents=True)
    (d / "007.json").write_text(json.dumps({"status": "replayed", "exceeds": True}))
    (d / "summary.json").write_text(json.dumps({"counts": {}, "replays": {}}))
    (d / "012.json").write_text("{broken")
    got = ce.load_replays(str(tmp_path / "replay"))
    assert list(got) == [7] and got[7]["exceeds"] is True


def test_find_trace_results_and_bundles(tmp_path):
    import json
    d = tmp_path / "call1" / "sweep"
    (d / "bundles" / "003").mkdir(parents=True)
    (d / "bundles" / "003" / "manifest.json").write_text("{}")
    (d / "results.json").write_text(json.dumps([{"k": 3, "status": "ok"}, {"k": 5, "status": "error"}]))
    entries, bundles = ce.find_trace_results(str(tmp_path / "call1"))
    assert [e["k"] for e in entries] == [3, 5]
    assert bundles == {3: str(d / "bundles" / "003")}


def test_timeout_grouped_by_why_locations_stayed_undecided():
    rs = [R(0, "correct", "TIMEOUT", reason="0 locations decided equal, 2 undecided within 20.0 s (at least 5 needed)",
            location_reasons={"z3: timeout": 2}),
          R(1, "correct", "TIMEOUT", reason="1 locations decided equal, 1 undecided within 20.0 s (at least 5 needed)",
            location_reasons={"z3: timeout": 1, "other": 1}),
          R(2, "correct", "TIMEOUT", reason="0 locations decided equal, 1 undecided within 20.0 s (at least 5 needed)",
            location_reasons={"building the location's expression ran past the budget": 1}),
          R(3, "correct", "TIMEOUT", reason="UNSUPPORTED: kernel K: time limit (20000 ms) reached")]
    g = {text: ks for text, _, ks in ce.group_reasons(rs, "TIMEOUT")}
    assert g["search: z3: timeout"] == [0, 1]
    assert g["search: building the location's expression ran past the budget"] == [2]
    assert any("time limit" in t for t in g)


def test_find_trace_results_later_dir_replaces_a_pair(tmp_path):
    import json
    for name, status in (("old", "error"), ("retrace", "ok")):
        d = tmp_path / name
        (d / "bundles" / "016").mkdir(parents=True)
        (d / "bundles" / "016" / "manifest.json").write_text("{}")
        (d / "results.json").write_text(json.dumps([{"k": 16, "status": status}] +
                                                   ([{"k": 2, "status": "ok"}] if name == "old" else [])))
    entries, bundles = ce.find_trace_results([str(tmp_path / "old"), str(tmp_path / "retrace")])
    assert [(e["k"], e["status"]) for e in entries] == [(2, "ok"), (16, "ok")]
    assert bundles[16] == str(tmp_path / "retrace" / "bundles" / "016")


def test_choose_pairs_meets_quotas_excludes_and_prefers_new_problems():
    entries = [dict(file=f"f{i}", label="output_mismatch" if i % 3 else "correct", problem_id=i % 5)
               for i in range(30)]
    got = ce.choose_pairs(entries, {"output_mismatch": 6, "correct": 3}, {"f1", "f2"}, seed=7)
    labels = [e["label"] for e in got]
    assert labels == ["output_mismatch"] * 6 + ["correct"] * 3  # the incorrect ones first
    assert not {"f1", "f2"} & {e["file"] for e in got}
    assert len({e["file"] for e in got}) == 9
    assert len({e["problem_id"] for e in got}) == 5  # every problem before any repeats
    assert got == ce.choose_pairs(entries, {"output_mismatch": 6, "correct": 3}, {"f1", "f2"}, seed=7)


def test_stage_witnesses_and_fold_by_tag(tmp_path):
    import json
    run = tmp_path / "eval-x"
    (run / "witnesses").mkdir(parents=True)
    rs = [R(1, "output_mismatch", "BUG", evidence="fp32-evaluation", witness_file=str(run / "witnesses" / "001.json")),
          R(2, "correct", "SUSPECT", evidence="", witness_file=str(run / "witnesses" / "002.json")),
          R(3, "correct", "BUG", evidence="execute-safety", witness_file=None),
          R(4, "correct", "CHECKED", witness_file=None)]
    for k in (1, 2):
        (run / "witnesses" / f"{k:03d}.json").write_text(json.dumps({"k": k}))
    (run / "results.json").write_text(json.dumps(rs))
    files = ce.stage_witnesses([(str(run), "x")], str(tmp_path / "staged"))
    assert sorted(os.path.basename(f) for f in files) == ["001-x.json", "002-x.json"]
    rep = tmp_path / "replay"
    rep.mkdir()
    (rep / "001-x.json").write_text(json.dumps({"status": "replayed", "exceeds": True}))
    (rep / "002-old.json").write_text(json.dumps({"status": "replayed", "exceeds": True}))
    assert list(ce.load_replays(str(rep), "x")) == [1]
    assert sorted(ce.load_replays(str(rep))) == [1, 2]


def test_merge_and_recall_without_same_function_pairs(tmp_path, capsys):
    import argparse
    import json
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps([R(1, "output_mismatch", "TIMEOUT"), R(2, "output_mismatch", "BUG", time_to_bug={})]))
    b.write_text(json.dumps([R(1, "output_mismatch", "SUSPECT"), R(3, "output_mismatch", "CHECKED")]))
    out = tmp_path / "m" / "results.json"
    ce.cmd_merge(argparse.Namespace(inputs=[str(a), str(b)], out=str(out)))
    merged = json.load(open(out))
    assert [(r["k"], r["outcome"]) for r in merged] == [(1, "SUSPECT"), (2, "BUG"), (3, "CHECKED")]
    nf = tmp_path / "nf.txt"
    nf.write_text("# comment\n3 rounding-only\n")
    ce.cmd_table(argparse.Namespace(results=str(out), not_function=str(nf)))
    text = capsys.readouterr().out
    assert "supported: 2/3" in text and "(without 1 init-/rounding-only pairs): 2/2 = 100.0%" in text


def test_harness_tolerance_follows_the_collection():
    assert ce.harness_tolerance("dev/yenhao_runs/runs/x/level_2_problem_14_sample_0_kernel.py") == 1e-4
    assert ce.harness_tolerance("dev/technoabsurdist_runs/runs/y/problem_46_kernel.py") == 1e-2
    assert ce.harness_tolerance("tests/golden/torch/x/new.py") is None


def test_state_answers_folded_from_a_directory(tmp_path):
    import argparse
    import json
    results = [R(5, "output_mismatch", "TIMEOUT", bundle="b5"), R(7, "correct", "CHECKED", bundle="b7")]
    res = tmp_path / "results.json"
    res.write_text(json.dumps(results))
    ans = tmp_path / "answers"
    ans.mkdir()
    (ans / "a005.json").write_text(json.dumps({"format": "dirigo-state", "verdict": "BUG", "evidence": "observed-gpu",
                                               "reason": "1 vs 2 at output 0[0]", "differing": []}))
    (ans / "b007.json").write_text("")  # the stage did not finish
    ce.cmd_state(argparse.Namespace(results=str(res), out=str(tmp_path / "out"), only=None, resume=False, jobs=1,
                                    answers=str(ans), device="cpu", timeout=1))
    out = {r["k"]: r for r in json.loads((tmp_path / "out" / "results.json").read_text())}
    assert ce.outcome_of(out[5]) == "BUG" and out[5]["stage"] == "observe" and out[5]["function_outcome"] == "TIMEOUT"
    assert ce.outcome_of(out[7]) == "CHECKED" and out[7]["state_verdict"] == "UNKNOWN"
