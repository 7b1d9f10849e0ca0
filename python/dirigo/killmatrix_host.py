"""Launch plans of host-side (launch-parameter) mutants: ceil2floor-grid, launch-grid-minus1,
launch-block-halve, launch-shmem-halve.

A substrate's launch plan comes from its Python mirror `dirigo_launches`; a host mutant edits the
C++ host code instead, so its plan is derived by evaluating the launch configuration of the host
code: `<<<grid, block[, shared]>>>` of each planned kernel, with the integer variables of the host
function (`int n = ...;`, `dim3 g(a, b);`), `#define` constants, the mirror's local integers and the
launch's scalar arguments (matched by position) as bindings. The same evaluation of the ORIGINAL
source must reproduce the mirror's plan exactly, otherwise the mutant gets no plan (a reason
instead): a plan is never guessed.

    python -m dirigo.killmatrix_host DB WORK      # writes mNNNN_<rule>.launch.json beside each host mutant
"""
from __future__ import annotations

import json
import os
import re
import sqlite3
import sys

from . import killmatrix as km

HOST_RULES = ("ceil2floor-grid", "launch-grid-minus1", "launch-block-halve", "launch-shmem-halve")


class HostPlanError(ValueError):
    pass


_TOKEN = re.compile(r"\s*(?:(\d+)[uUlL]*|(\.(?:numel|size|dim|contiguous)\b)|([A-Za-z_]\w*(?:::\w+)*)|(<<|>>|[-+*/%(),]))")
_SIZEOF = {"float": 4, "int": 4, "double": 8, "half": 2, "__half": 2, "int64_t": 8, "float4": 16}


def c_expr(text: str) -> str:
    """A C++ integer expression as Python (`/` -> `//`, std::min/max); raises on anything else."""
    out, at = [], 0
    text = re.sub(r"sizeof\s*\(\s*(\w+)\s*\)", lambda m: str(_SIZEOF.get(m.group(1), f"sizeof_{m.group(1)}")), text.strip())
    while at < len(text):
        m = _TOKEN.match(text, at)
        if not m or m.end() == at:
            raise HostPlanError(f"cannot evaluate {text!r} (at {text[at:at + 10]!r})")
        num, attr, name, op = m.groups()
        if num:
            out.append(num)
        elif attr:
            out.append(attr)
        elif name:
            if name in ("static_cast", "int", "unsigned", "long", "size_t", "int64_t"):
                raise HostPlanError(f"cannot evaluate {text!r} (cast)")
            out.append({"std::min": "min", "std::max": "max"}.get(name, name))
        else:
            out.append("//" if op == "/" else op)
        at = m.end()
    return " ".join(out)


def _eval(text: str, env: dict):
    code = c_expr(text)
    try:
        return eval(code, {"__builtins__": {}, "min": min, "max": max}, dict(env))  # noqa: S307 - integers only
    except Exception as e:  # noqa: BLE001
        raise HostPlanError(f"cannot evaluate {text!r}: {type(e).__name__}: {e}") from None


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts]


def _dims(v) -> list[int]:
    if isinstance(v, tuple):
        d = list(v) + [1] * (3 - len(v))
    elif isinstance(v, int):
        d = [v, 1, 1]
    else:
        raise HostPlanError(f"launch dimension {v!r} is not an integer or dim3")
    return [int(x) for x in d[:3]]


_ASSIGN = re.compile(r"(?:const\s+|constexpr\s+)?(?:int|int64_t|long long|long|unsigned|size_t|auto|uint32_t|int32_t)\s+"
                     r"(\w+\s*=\s*[^;{}]+);")
_DIM3 = re.compile(r"dim3\s+(\w+)\s*\(([^;]*)\)\s*;")
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+([^\n]+)$", re.M)


def launches_in_source(text: str, plan: list[dict], base_env: dict) -> list[dict]:
    """Evaluates grid/block/shared of each planned launch in `text` (the substrate's container)."""
    env = dict(base_env)
    for name, value in _DEFINE.findall(text):
        try:
            env[name] = _eval(value.split("//")[0], env)
        except HostPlanError:
            pass
    for g in re.finditer(r"^(?:static\s+)?(?:constexpr|const)\s+int\s+(\w+)\s*=\s*([^;]+);", text, re.M):
        try:
            env[g.group(1)] = _eval(g.group(2), env)
        except HostPlanError:
            pass
    out, search_from = [], 0
    for L in plan:
        m = re.compile(rf"\b{re.escape(L['kernel'])}\s*(?:<[^<>;]*>)?\s*<<<").search(text, search_from)
        if not m:
            raise HostPlanError(f"no launch of {L['kernel']} in the host code")
        search_from = m.end()
        end = text.find(">>>", m.end())
        config = _split_top(text[m.end():end])
        # the host function: from the closing brace of the previous top-level function
        start = text.rfind("\n}", 0, m.start())
        local = dict(env)
        # scalar arguments of the launch, bound by position to the plan's values
        call_end = text.find(";", end)
        args = _split_top(text[text.find("(", end) + 1:text.rfind(")", end, call_end)])
        if len(args) == len(L["args"]):
            for a, pa in zip(args, L["args"]):
                if "scalar" in pa and re.fullmatch(r"[A-Za-z_]\w*", a) and pa["type"] in ("s32", "s64", "u32", "u64"):
                    local[a] = int(pa["scalar"])
        body = text[start + 1 if start >= 0 else 0:m.start()]
        stmts = sorted([(s.start(), "int", s) for s in _ASSIGN.finditer(body)] +
                       [(s.start(), "dim3", s) for s in _DIM3.finditer(body)], key=lambda t: t[0])
        for _, kind, s in stmts:
            try:
                if kind == "int":  # `int a = e1, b = e2;`
                    for piece in _split_top(s.group(1)):
                        name, _, expr = piece.partition("=")
                        local[name.strip()] = _eval(expr, local)
                else:
                    local[s.group(1)] = tuple(_eval(p, local) for p in _split_top(s.group(2)))
            except HostPlanError:
                pass  # e.g. `int n = x.numel();`: the mirror's or the launch's binding stays
        if len(config) < 2:
            raise HostPlanError(f"launch of {L['kernel']}: cannot read <<<{text[m.end():end]}>>>")

        def dim(e):
            e = e.strip()
            if re.fullmatch(r"[A-Za-z_]\w*", e) and isinstance(local.get(e), tuple):
                return _dims(local[e])
            dm = re.fullmatch(r"dim3\s*\((.*)\)", e, re.S)
            if dm:
                return _dims(tuple(_eval(p, local) for p in _split_top(dm.group(1))))
            return _dims(_eval(e, local))

        out.append({"grid": dim(config[0]), "block": dim(config[1]),
                    "shared_bytes": int(_eval(config[2], local)) if len(config) > 2 else 0})
    return out


def mirror_locals(substrate: str) -> dict:
    """The integer and tensor locals of `dirigo_launches` (captured at its return; its parameters are
    named like the host function's in our substrates) for the first KernelBench draw."""
    import torch
    ns = km.load_substrate(substrate)
    model, inputs = km.draw(ns, "kernelbench_randn", 0)
    captured = {}

    def prof(frame, event, arg):
        if event == "return" and frame.f_code is ns["dirigo_launches"].__code__:
            captured.update({k: v for k, v in frame.f_locals.items()
                             if (isinstance(v, int) and not isinstance(v, bool)) or isinstance(v, torch.Tensor)})

    old = sys.getprofile()
    sys.setprofile(prof)
    try:
        ns["dirigo_launches"](model, *inputs)
    finally:
        sys.setprofile(old)
    return captured


def derive(substrate: str, mutant_source: str, plan: list[dict], env: dict | None = None) -> dict:
    """{"launches": [...]} for the mutant: the spec's launches with grid/block/shared re-evaluated."""
    env = mirror_locals(substrate) if env is None else env
    original = launches_in_source(open(substrate).read(), plan, env)
    for o, L in zip(original, plan):
        if (o["grid"], o["block"], o["shared_bytes"]) != (L["grid"], L["block"], L["shared_bytes"]):
            raise HostPlanError(f"the host code evaluates to {o} for {L['kernel']}, the mirror's plan is "
                                f"grid {L['grid']} block {L['block']} shared {L['shared_bytes']}")
    mutated = launches_in_source(open(mutant_source).read(), plan, env)
    launches = []
    for L, m in zip(plan, mutated):
        launches.append(dict(L, grid=m["grid"], block=m["block"], shared_bytes=m["shared_bytes"]))
    same = all((m["grid"], m["block"], m["shared_bytes"]) == (L["grid"], L["block"], L["shared_bytes"])
               for L, m in zip(plan, mutated))
    return {"launches": launches, "same_as_original": same}


def derive_store(db: str, work: str) -> dict:
    """Writes `<mutant>.launch.json` for every host mutant of the store whose plan evaluates; marks the
    others' reason in mutant_class. Returns counts."""
    con = sqlite3.connect(db, timeout=120)
    counts = {"planned": 0, "same_as_original": 0, "no_plan": 0}
    subs = con.execute("SELECT id, path FROM substrates WHERE status = 'ok' ORDER BY path").fetchall()
    for sid, path in subs:
        stem = os.path.splitext(os.path.basename(path))[0]
        spec_path = os.path.join(work, "inputs", stem, "spec.json")
        rows = con.execute("SELECT m.id, m.rule, m.source_path FROM mutants m JOIN mutant_class c ON c.mutant_id = m.id "
                           "WHERE m.substrate_id = ? AND c.runnable = 0", (sid,)).fetchall()
        if not rows or not os.path.exists(spec_path):
            continue
        plan = json.load(open(spec_path))["launches"]
        try:
            env = mirror_locals(path)
        except Exception as e:  # noqa: BLE001
            env, why = None, f"mirror: {type(e).__name__}: {e}"
        for mid, rule, src in rows:
            out = os.path.splitext(src)[0] + ".launch.json"
            try:
                if env is None:
                    raise HostPlanError(why)
                res = derive(path, src, plan, env)
            except (HostPlanError, OSError) as e:
                if os.path.exists(out):
                    os.remove(out)
                reason = f"host-side launch mutant without a plan: {e}"
                counts["no_plan"] += 1
            else:
                res.update({"rule": rule, "substrate": path})
                with open(out, "w") as f:
                    json.dump(res, f, indent=1)
                reason = ("host-side launch mutant: plan " + json.dumps([[L["grid"], L["block"], L["shared_bytes"]]
                                                                          for L in res["launches"]])
                          + (" (same as the original's at these shapes)" if res["same_as_original"] else ""))
                counts["planned"] += 1
                counts["same_as_original"] += int(res["same_as_original"])
            with con:
                con.execute("UPDATE mutant_class SET reason = ? WHERE mutant_id = ?", (reason[:500], mid))
            print(f"{stem} {rule}: {reason[:160]}", flush=True)
    return counts


def main(argv: list[str]) -> int:
    if len(argv) == 2:
        print(derive_store(argv[0], argv[1]))
        return 0
    print(__doc__, file=sys.stderr)
    return 64


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
