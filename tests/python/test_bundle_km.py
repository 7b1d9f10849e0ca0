"""The kill matrix without a host mirror (docs/mutation.md): a substrate launched by replaying its
traced bundle on the CPU (concrete interpreter), host mutants re-evaluated from the recorded launch,
a maintainer's harness scored next to the built-in protocols, and the kill-witness search.
Substrate: examples/execute_bugs/layernorm_correct (a correct one-warp-per-row LayerNorm, traced on an H200)."""
import json
import os
import pathlib
import shutil
import sqlite3
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
DIRIGO = pathlib.Path(os.environ.get("DIRIGO_BIN", ROOT / "build" / "dirigo"))
EXAMPLE = ROOT / "examples" / "execute_bugs" / "layernorm_correct"

pytestmark = pytest.mark.skipif(not DIRIGO.exists(), reason="build/dirigo not built (scripts/build.sh)")

from dirigo import bundle_km as bk  # noqa: E402
from dirigo import bundle_run as br  # noqa: E402
from dirigo import harness  # noqa: E402
from dirigo import witness_inputs as wi  # noqa: E402

LIMIT = 14  # mutants per substrate in these tests (the first by ordinal)
MAX_MS = 5000  # interpreter limit per launch: a clean run takes ~50 ms (more on a loaded box); endless loops time out


def _has_nvrtc() -> bool:
    p = subprocess.run([str(DIRIGO), "mutate", "--list-rules"], capture_output=True, text=True)
    return p.returncode == 0


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    os.environ["DIRIGO_BIN"] = str(DIRIGO)
    base = tmp_path_factory.mktemp("bkm")
    sub = base / "substrates" / "layernorm_rows"
    sub.mkdir(parents=True)
    for f in ("ref.py", "new.py"):
        shutil.copy(EXAMPLE / f, sub / f)
    shutil.copytree(EXAMPLE / "bundle", sub / "bundle")
    db, work = str(base / "km.sqlite"), str(base / "work")
    rc = bk.prep(db, work, [str(sub)], str(DIRIGO))
    if rc == 4:
        con = sqlite3.connect(db)
        msg = con.execute("SELECT message FROM substrates").fetchone()
        if msg and "NVRTC" in (msg[0] or ""):
            pytest.skip("no NVRTC here")
    assert rc == 0
    return {"db": db, "work": work, "dir": sub}


def test_source_name_and_entry():
    assert br.source_name("_Z16layernorm_kernelPKfS0_S0_Pfif") == "layernorm_kernel"
    assert br.source_name("plain_kernel") == "plain_kernel"
    ptx = ".visible .entry _Z3fooPf(\n.visible .entry _Z3barPf("
    assert br.find_entry(ptx, "_Z3fooPfi") == "_Z3fooPf"  # same source name, other mangling
    assert br.find_entry(ptx, "baz") is None


def test_replay_reproduces_the_traced_output():
    """The bundle's own op list and PTX on its traced inputs gives its traced output (CPU interpreter)."""
    import torch
    prog = br.BundleProgram(str(EXAMPLE / "bundle"))
    launcher = br.CpuLauncher(str(DIRIGO))
    try:
        out = prog.run(prog.traced_bindings(), launcher)[0]
    finally:
        launcher.close()
    rec = prog.prog["outputs"][0]
    traced = np.fromfile(EXAMPLE / "bundle" / rec["data"], dtype="<f4").reshape(out.shape)
    assert torch.allclose(out, torch.from_numpy(traced), atol=1e-5)


def test_device_metrics_equal_the_numpy_metrics():
    """The GPU runner's metrics (torch, where the output lies) against killmatrix.metrics (numpy)."""
    import torch
    from dirigo import killmatrix as km
    g = torch.Generator().manual_seed(3)
    for case in range(5):
        ref = torch.randn(500, generator=g, dtype=torch.float64) * 10 ** case
        out = ref + 1e-3 * torch.randn(500, generator=g, dtype=torch.float64)
        if case == 1:
            out[3] = float("nan")  # a non-finite output where the reference is finite
        if case == 2:
            ref[5] = out[5] = float("inf")  # non-finite in both: not compared
        ref32 = ref.float().double()
        want = km.metrics(out.numpy(), ref.numpy(), ref32.numpy())
        assert bk.metrics_on_device(out.float(), ref, ref32) == km.metrics(out.float().double().numpy(), ref.numpy(),
                                                                            ref32.numpy())
        assert bk.metrics_on_device(out, ref, ref32) == want
        assert (want["nonfinite_mismatch"] == 1) == (case == 1)


def test_a_fault_in_the_launch_is_a_crash_row(tmp_path):
    prog = br.BundleProgram(str(EXAMPLE / "bundle"))
    launcher = br.CpuLauncher(str(DIRIGO))
    try:
        with pytest.raises(br.LaunchFailed) as e:  # twice the grid: rows 16..31 read past x
            prog.run(prog.traced_bindings(), launcher, launch_overrides={0: {"grid": [32, 1, 1]}})
    finally:
        launcher.close()
    assert e.value.status == "crash" and "out-of-bounds" in e.value.detail


def test_prep_registers_mutants_inputs_and_host_plans(store):
    con = sqlite3.connect(store["db"])
    sid, module = con.execute("SELECT substrate_id, module FROM substrate_bundle").fetchone()
    assert module == "new_m0"
    assert con.execute("SELECT COUNT(*) FROM inputs WHERE substrate_id = ?", (sid,)).fetchone()[0] == 31
    n = con.execute("SELECT COUNT(*) FROM mutants WHERE substrate_id = ? AND status = 'unique'", (sid,)).fetchone()[0]
    assert n > 50
    # the host code `layernorm_kernel<<<rows, 32>>>` with rows = x.size(0) bound from the traced launch argument
    mid, src = con.execute("SELECT id, source_path FROM mutants WHERE substrate_id = ? AND rule = 'launch-block-halve' "
                           "AND status = 'unique'", (sid,)).fetchone()
    plan = json.load(open(os.path.splitext(src)[0] + ".launch.json"))
    assert plan["launches"]["0"] == {"grid": [16, 1, 1], "block": [16, 1, 1], "shared_bytes": 0}
    assert con.execute("SELECT runnable FROM mutant_class WHERE mutant_id = ?", (mid,)).fetchone()[0] == 1


def test_host_plan_refuses_a_host_code_that_does_not_give_the_recorded_launch(tmp_path):
    prog = br.BundleProgram(str(EXAMPLE / "bundle"))
    wrong = tmp_path / "w.py"
    wrong.write_text(open(EXAMPLE / "new.py").read().replace("<<<rows, 32>>>", "<<<rows, 64>>>"))
    from dirigo import killmatrix_host as kh
    with pytest.raises(kh.HostPlanError):
        bk.host_plan(str(wrong), str(wrong), prog)


def test_kill_matrix_by_replay(store):
    bk.run(store["db"], store["work"], "cpu", limit=LIMIT, max_inputs=3, max_ms=MAX_MS)
    con = sqlite3.connect(store["db"])
    sub = con.execute("SELECT status, t_eq FROM runs WHERE mutant_id IS NULL AND source = 'cpu'").fetchall()
    assert len(sub) == 3 and all(s == "ok" and t < 1e-5 for s, t in sub)
    rows = con.execute("SELECT mutant_id, status, t_eq FROM runs WHERE mutant_id IS NOT NULL").fetchall()
    assert len(rows) == 3 * LIMIT
    assert any(s == "ok" and t > 1e-2 for _, s, t in rows)  # some mutant is killed
    # resume: nothing is run twice
    assert bk.run(store["db"], store["work"], "cpu", limit=LIMIT, max_inputs=3, max_ms=MAX_MS) == {}


def test_host_mutant_runs_with_its_plan(store):
    con = sqlite3.connect(store["db"])
    mid = con.execute("SELECT id FROM mutants WHERE rule = 'launch-block-halve' AND status = 'unique'").fetchone()[0]
    sub = bk.Substrate(con, con.execute("SELECT substrate_id FROM substrate_bundle").fetchone()[0])
    prog = next(p for p in bk.programs_of(con, sub, store["work"]) if p["mutant_id"] == mid)
    assert prog["overrides"] == {0: {"grid": [16, 1, 1], "block": [16, 1, 1], "shared_bytes": 0}}
    case = bk.make_case(sub, "kernelbench_randn", 0, "cpu")
    r = bk.run_one(sub, prog, case, br.CpuLauncher(str(DIRIGO)), "cpu")
    # 16 lanes: the shuffle butterflies read lanes that do not exist -> the interpreter reports it
    assert r["status"] in ("crash", "ok")
    if r["status"] == "ok":
        assert r["t_eq"] > 1e-2


def test_harness_specs():
    assert harness.parse_spec("dirigo.harness:kernelbench_check") == ("kernelbench_check", "dirigo.harness:kernelbench_check")
    assert harness.parse_spec("mine=dirigo.harness:kernelbench_check")[0] == "mine"
    assert harness.parse_spec("cmd:./check.sh --strict")[0] == "check"
    with pytest.raises(ValueError):
        harness.parse_spec("not_a_spec")


def test_bring_your_own_harness(store, tmp_path):
    """KernelBench's check as a module:function and a command harness, run on every mutant through
    the CPU replay; dirigo score puts both next to the built-in protocols."""
    res = harness.run(store["db"], store["work"], "dirigo.harness:kernelbench_check", "cpu", limit=LIMIT,
                      max_ms=MAX_MS)
    assert res["substrate accept"] == 1 and res.get("mutant reject", 0) >= 1
    script = tmp_path / "always.sh"
    script.write_text("#!/bin/sh\n[ -f \"$1\" ] && [ -f \"$2\" ] && exit 0\nexit 2\n")
    script.chmod(0o755)
    res = harness.run(store["db"], store["work"], f"lenient=cmd:{script}", "cpu", limit=3, max_ms=MAX_MS)
    assert res == {"protocol": "lenient", "substrate accept": 1, "mutant accept": 3}
    con = sqlite3.connect(store["db"])
    # the harness agrees with the kill matrix where it rejects: a rejected mutant is one some input kills
    rejected = {m for (m,) in con.execute("SELECT mutant_id FROM harness_runs WHERE protocol = 'kernelbench_check' "
                                          "AND verdict = 'reject'")}
    killed = {m for (m,) in con.execute("SELECT DISTINCT mutant_id FROM runs WHERE status = 'ok' AND t_eq > 1e-2")}
    quarantined = {m for (m,) in con.execute("SELECT DISTINCT mutant_id FROM runs WHERE status IN ('crash', 'timeout')")}
    assert rejected and rejected <= killed | quarantined
    p = subprocess.run([str(DIRIGO), "score", "--store", store["db"], "--json", "-q"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    names = [q["name"] for q in json.loads(p.stdout)["protocols"]]
    assert {"kernelbench_check", "lenient", "kernelbench_verified", "kernelbench_v0"} <= set(names)


def test_score_runs_a_harness_given_by_protocol(store, tmp_path):
    script = tmp_path / "strict.sh"
    script.write_text("#!/bin/sh\ngrep -q m0 \"$2\" && exit 1\nexit 0\n")  # rejects every mutant, accepts the original
    script.chmod(0o755)
    p = subprocess.run([str(DIRIGO), "score", "--store", store["db"], "--work", store["work"], "--json", "-q",
                        "--protocol", f"strict=cmd:{script}", "--harness-limit", "2", "--only", "strict,kernelbench_v0"],
                       capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT / "python")))
    assert p.returncode == 0, p.stderr
    j = json.loads(p.stdout)
    assert [q["name"] for q in j["protocols"]] == ["strict", "kernelbench_v0"]
    p = subprocess.run([str(DIRIGO), "score", "--store", store["db"], "--work", store["work"], "-q",
                        "--protocol", "no.such.module:fn"], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(ROOT / "python")))
    assert p.returncode == 2 and "could not be run" in p.stderr


def test_distributions_are_deterministic_and_shaped():
    import torch
    t = torch.zeros(4, 6)
    for d in wi.SEARCH_DISTRIBUTIONS:
        a = wi.distribute(t, d, torch.Generator().manual_seed(3))
        b = wi.distribute(t, d, torch.Generator().manual_seed(3))
        assert a.shape == t.shape and a.dtype == t.dtype and torch.equal(a, b), d
    c = wi.distribute(t, "cancellation", torch.Generator().manual_seed(0))
    assert c.sum(dim=-1).abs().max() < 0.05  # pairs cancel
    r = wi.distribute(t, "ramp", torch.Generator().manual_seed(0))
    assert bool((r[:, 1:] > r[:, :-1]).all())
    with pytest.raises(ValueError):
        wi.distribute(t, "nope", torch.Generator())


def test_witness_search_kills_survivors_only_with_valid_inputs(store):
    con = sqlite3.connect(store["db"])
    sid = con.execute("SELECT substrate_id FROM substrate_bundle").fetchone()[0]
    before = wi.survivors(con, sid, 1e-2, "cpu")
    res = wi.search(store["db"], store["work"], "cpu", tol=1e-2, per_mutant=4, max_ms=MAX_MS)
    assert res["survivors"] == len(before) and res["candidates"] >= 1
    after = wi.survivors(con, sid, 1e-2, "cpu")
    assert len(after) == len(before) - res["killed"] or len(after) < len(before)
    # every search input that kills passes the gate: the correct substrate is within tol on it
    for (iid,) in con.execute("SELECT DISTINCT r.input_id FROM runs r JOIN inputs i ON i.id = r.input_id WHERE "
                              "i.family = 'search' AND r.mutant_id IS NOT NULL AND r.status = 'ok' AND r.t_eq > 1e-2"):
        s = con.execute("SELECT status, t_eq FROM runs WHERE input_id = ? AND mutant_id IS NULL", (iid,)).fetchone()
        assert s[0] == "ok" and s[1] <= 1e-2


def test_jsonl_rows_resume_and_import(store, tmp_path):
    """The GPU's row format: a dangling start line (a killed process) becomes a timeout row on resume."""
    con = sqlite3.connect(store["db"])
    sid = con.execute("SELECT substrate_id FROM substrate_bundle").fetchone()[0]
    path = con.execute("SELECT path FROM substrates WHERE id = ?", (sid,)).fetchone()[0]
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"substrate": path, "ordinal": None, "input": "kernelbench_randn/3", "start": True,
                                "source": "cpu"}) + "\n")
    bk.run(store["db"], store["work"], "cpu", limit=1, max_inputs=4, jsonl=str(rows), max_ms=MAX_MS)
    got = [json.loads(l) for l in open(rows)]
    hung = [j for j in got if not j.get("start") and j["input"] == "kernelbench_randn/3" and j["ordinal"] is None]
    assert hung and hung[0]["status"] == "timeout"
    fresh = tmp_path / "copy.sqlite"
    shutil.copy(store["db"], fresh)
    c2 = sqlite3.connect(fresh)
    c2.execute("DELETE FROM runs")
    c2.commit()
    counts = bk.import_rows(str(fresh), str(rows))
    assert counts["unknown"] == 0 and counts["imported"] == len([j for j in got if not j.get("start")])
    assert c2.execute("SELECT status FROM runs WHERE mutant_id IS NULL AND input_id = (SELECT id FROM inputs WHERE "
                      "name = 'kernelbench_randn/3')").fetchone()[0] == "timeout"


def test_dirigo_witness_is_a_valid_killing_input(store):
    """dirigo check on a mutant's bundle (the substrate's with the mutant's PTX): its BUG witness,
    written into the kernelbench_randn/0 draw, passes the gate and kills the mutant."""
    con = sqlite3.connect(store["db"])
    sid = con.execute("SELECT substrate_id FROM substrate_bundle").fetchone()[0]
    mid = con.execute("SELECT r.mutant_id FROM runs r JOIN mutants m ON m.id = r.mutant_id WHERE r.substrate_id = ? AND "
                      "r.status = 'ok' AND r.t_eq > 0.1 AND m.family = 'arithmetic' ORDER BY m.ordinal LIMIT 1",
                      (sid,)).fetchone()[0]
    sub = bk.Substrate(con, sid)
    progs = {p["mutant_id"]: p for p in bk.programs_of(con, sub, store["work"])}
    leaves, why = wi.dirigo_witness(sub, progs[mid], str(DIRIGO), budget=10)
    assert leaves, why
    assert all(l["kind"] in ("input", "parameter", "buffer") for l in leaves)
    case = bk.make_case(sub, "kernelbench_randn", 0, "cpu", witness=leaves)
    launcher = br.CpuLauncher(str(DIRIGO), MAX_MS)
    try:
        s = bk.run_one(sub, progs[None], case, launcher, "cpu")
        m = bk.run_one(sub, progs[mid], case, launcher, "cpu")
    finally:
        launcher.close()
    assert s["status"] == "ok" and s["t_eq"] <= 1e-2
    assert m["status"] == "ok" and m["t_eq"] > 1e-2
    with pytest.raises(ValueError):
        bk.apply_witness(sub, None, None, [], [{"kind": "trimmed", "index": [0], "value": 1.0, "input": "t"}])
