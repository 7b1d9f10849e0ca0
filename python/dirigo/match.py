"""Pairing the interfaces of a reference and a candidate program (the bundle's `match` section).

Forward inputs pair by position, outputs by position, captured constants never (program::merge pairs
those by value). Parameters and buffers are treated alike and pair in three steps:

1. by normalized name (`conv.weight` ~ `conv_weight` ~ `Conv_Weight`: case, `_` and `.` ignored),
   when the shapes (size-1 axes squeezed) and dtypes agree;
2. the rest among the same-shaped ones (same squeezed shape and dtype): the only one on each side
   pairs; where there is a choice, evidence breaks the tie (equal recorded values (sha256), the role
   word of the name (weight/gamma, bias/beta, mean, var), the rest of the name with abbreviations
   spelled out, all-zero/all-one values last), then position (a guess, noted as AMBIGUOUS);
3. what is left stays unpaired (a free input of its own program in `dirigo check`).

Recorded values never prevent a pairing: a candidate that initializes a parameter its own way
(KernelBench's "init-only" errors) still computes the same function of it. Pairs whose values differ
are listed in `differing_values` and a note; `dirigo check` compares the functions on equal values
and notes the difference. Every guess (a pairing by order among several same-shaped parameters, a
shape with more parameters on one side) is a note, never silent.

Works on manifest programs (docs/bundle-format.md) alone, so a bundle traced with an older rule can be
re-matched on the CPU: `python3 -m dirigo.bundle rematch BUNDLE`.
"""
from __future__ import annotations

import functools
import hashlib
import re
import struct


def squeezed(shape) -> list:
    """The shape without size-1 axes: (1, 16, 1) and (16,) hold the same elements in the same order."""
    return [d for d in shape if d != 1]


def normalized_name(name: str) -> str:
    return re.sub(r"[._]", "", name).lower()


def _fmt_shape(key) -> str:
    shape, dtype = key
    return f"{list(shape)} {dtype}"


class _Side:
    def __init__(self, prog: dict):
        self.prog = prog
        self.name = prog["name"]
        tensors = {t["id"]: t for t in prog["tensors"]}
        self.meta = {e["name"]: tensors.get(e["tensor"], {}) for e in prog["inputs"] + prog["outputs"]}
        self.forward = [e for e in prog["inputs"] if e["kind"] == "input"]
        self.params = [e for e in prog["inputs"] if e["kind"] != "input" and not e.get("constant")]

    def key(self, e) -> tuple:
        m = self.meta[e["name"]]
        return tuple(squeezed(m.get("shape", []))), m.get("dtype")

    def ref(self, e) -> str:
        return f"{self.name}.{e['name']}"


_ROLES = {"weight": "weight", "gamma": "weight", "bias": "bias", "beta": "bias", "mean": "mean", "var": "var",
          "variance": "var"}

# Elements of the values a parameter often starts at: equal hashes of these say little about which is which.
_ONE = {"float32": struct.pack("<f", 1.0), "float64": struct.pack("<d", 1.0), "float16": struct.pack("<e", 1.0),
        "bfloat16": b"\x80\x3f", "int64": struct.pack("<q", 1), "int32": struct.pack("<i", 1)}
_TRIVIAL_LIMIT = 1 << 22  # elements; larger parameters are not hashed again (their init is rarely constant)


def _role(name: str) -> str | None:
    """What a parameter is for, from the last word of its name that says it: `bn_gamma` and `batch_norm.weight`
    are weights, `bias_linear` a bias, `running_mean` and `bn_mean` means."""
    for word in reversed(re.split(r"[._]", name.lower())):
        role = _ROLES.get(word.rstrip("0123456789"))
        if role:
            return role
    return None


_ABBREVIATIONS = {"bn": "batchnorm", "gn": "groupnorm", "ln": "layernorm", "fc": "linear"}


def _owner(name: str) -> str | None:
    """The rest of a name once its role word is dropped, abbreviations spelled out: `bn_beta` and
    `batch_norm.bias` both belong to "batchnorm"; None when nothing is left (`bias`)."""
    words = [w.rstrip("0123456789") for w in re.split(r"[._]", name.lower())]
    words = [_ABBREVIATIONS.get(w, w) for w in words if w and w not in _ROLES and w != "running"]
    return "".join(words) or None


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


@functools.lru_cache(maxsize=256)
def _trivial_hashes(numel: int, dtype: str) -> frozenset:
    if numel > _TRIVIAL_LIMIT or dtype not in _ONE:
        return frozenset()
    size = len(_ONE[dtype])
    return frozenset(hashlib.sha256(body).hexdigest() for body in (bytes(numel * size), _ONE[dtype] * numel))


def _trivial(sha: str | None, numel: int, dtype: str) -> bool:
    """Whether recorded values are all zeros or all ones (BatchNorm/GroupNorm defaults, zero biases)."""
    return sha is not None and sha in _trivial_hashes(numel, dtype)


def _pair_by_evidence(rs: list, cs: list, evidence: list, chosen: dict, used: set) -> None:
    """Pair same-shaped parameters where one piece of evidence (recorded values, role word, ...) singles out
    exactly one on each side; repeat while that makes progress; then pair, by order, within the classes
    the evidence still leaves with several on both sides (a guess, named as one)."""
    def classes(fn):
        out: dict = {}
        for side, items, taken in ((0, rs, chosen), (1, cs, used)):
            for e in items:
                if e["name"] not in taken and fn(e) is not None:
                    out.setdefault(fn(e), ([], []))[side].append(e)
        return out.values()

    progress = True
    while progress:
        progress = False
        for how, fn in evidence:
            for rr, cc in classes(fn):
                if len(rr) == 1 and len(cc) == 1:
                    chosen[rr[0]["name"]] = (cc[0], how)
                    used.add(cc[0]["name"])
                    progress = True
    for how, fn in evidence:
        for rr, cc in classes(fn):
            for a, b in zip(rr, cc):
                chosen[a["name"]] = (b, how + "+order")
                used.add(b["name"])


def _pair_parameters(r: _Side, c: _Side, notes: list) -> list[tuple[dict, dict, str]]:
    """(reference parameter, candidate parameter, how) for every pair made, in reference order."""
    chosen: dict[str, tuple[dict, str]] = {}  # ref name -> (cand entry, how)
    used: set[str] = set()

    # 1. by normalized name
    for a in r.params:
        same_name = [b for b in c.params if normalized_name(b["name"]) == normalized_name(a["name"])]
        rivals = [x for x in r.params if normalized_name(x["name"]) == normalized_name(a["name"])]
        exact = [b for b in same_name if b["name"] == a["name"]]
        if exact:
            b = exact[0]
        elif len(same_name) == 1 and len(rivals) == 1:
            b = same_name[0]
        else:
            if same_name:
                notes.append(f"reference {a['kind']} {a['name']}: several parameters share its normalized name "
                             f"({', '.join(x['name'] for x in rivals + same_name)}); paired by shape instead")
            continue
        if b["name"] in used:
            continue
        if r.key(a) != c.key(b):
            notes.append(f"reference {a['kind']} {a['name']} ({_fmt_shape(r.key(a))}) and candidate {b['kind']} "
                         f"{b['name']} ({_fmt_shape(c.key(b))}) share a name but not a shape: not paired by name")
            continue
        chosen[a["name"]] = (b, "name")
        used.add(b["name"])

    # 2. among the same-shaped ones: evidence first (recorded values, the role word of the name), then position
    keys = []
    for a in r.params:
        if a["name"] not in chosen and r.key(a) not in keys:
            keys.append(r.key(a))
    for key in keys:
        rs = [a for a in r.params if a["name"] not in chosen and r.key(a) == key]
        cs = [b for b in c.params if b["name"] not in used and c.key(b) == key]
        if not cs:
            continue
        if len(rs) > 1 or len(cs) > 1:  # a choice: let the evidence break the tie
            numel, dtype = _numel(r.meta[rs[0]["name"]].get("shape", [])), key[1]
            evidence = [("value", lambda e: e.get("sha256") if not _trivial(e.get("sha256"), numel, dtype) else None),
                        ("role", lambda e: _role(e["name"])),
                        ("owner", lambda e: _owner(e["name"])),
                        ("trivial value", lambda e: e.get("sha256"))]
            _pair_by_evidence(rs, cs, evidence, chosen, used)
        left_r = [a for a in rs if a["name"] not in chosen]
        left_c = [b for b in cs if b["name"] not in used]
        guessed = len(left_r) > 1 or len(left_c) > 1  # a choice, not forced
        for a, b in zip(left_r, left_c):
            chosen[a["name"]] = (b, "order" if guessed else "shape")
            used.add(b["name"])
        if len(rs) != len(cs):
            fewer = "candidate" if len(cs) < len(rs) else "reference"  # the side with fewer
            notes.append(f"{len(rs)} reference and {len(cs)} candidate parameters of shape {_fmt_shape(key)} have "
                         f"no name in common: the {fewer} may fold several into one (or compute some); which ones "
                         f"pair is a guess, and the other side's extra ones stay free")
    return [(a, chosen[a["name"]][0], chosen[a["name"]][1]) for a in r.params if a["name"] in chosen]


def match_programs(ref_prog: dict, cand_prog: dict) -> tuple[dict, list[str]]:
    """The `match` section (inputs, outputs, differing_values) for two manifest programs, and notes on
    everything that is not a plain pairing."""
    notes: list[str] = []
    r, c = _Side(ref_prog), _Side(cand_prog)
    if len(r.forward) != len(c.forward):
        notes.append(f"the reference takes {len(r.forward)} tensor inputs, the candidate {len(c.forward)}")
    pairs = list(zip(r.forward, c.forward))
    param_pairs = _pair_parameters(r, c, notes)
    pairs += [(a, b) for a, b, _ in param_pairs]

    how_text = {"shape": "the only ones of their shape left",
                "value": "equal recorded values among same-shaped ones",
                "role": "the same role word (weight/gamma, bias/beta, mean, var) among same-shaped ones",
                "owner": "the same name once the role word is dropped (bn ~ batch_norm) among same-shaped ones",
                "trivial value": "equal all-zero or all-one values among same-shaped ones"}
    for how in ("shape", "value", "role", "owner", "trivial value"):
        made = [f"{a['name']} ~ {b['name']}" for a, b, h in param_pairs if h == how]
        if made:
            notes.append(f"parameters paired without a common name ({how_text[how]}): {', '.join(made)}")
    guesses = [f"{a['name']} ~ {b['name']}" + (f" (same {h[:-6]})" if h != "order" else "")
               for a, b, h in param_pairs if h.endswith("order")]
    if guesses:
        notes.append("AMBIGUOUS: parameters paired by order among several same-shaped ones that no name, value, "
                     "role word or owner tells apart: " + ", ".join(guesses))

    paired_c = {b["name"] for _, b, _ in param_pairs}
    paired_r = {a["name"] for a, _, _ in param_pairs}
    for a in r.params:
        if a["name"] not in paired_r:
            notes.append(f"reference {a['kind']} {a['name']} has no counterpart in the candidate")
    for b in c.params:
        if b["name"] not in paired_c:
            notes.append(f"candidate {b['kind']} {b['name']} has no counterpart in the reference")

    differing = [[r.ref(a), c.ref(b)] for a, b in pairs
                 if a.get("sha256") and b.get("sha256") and a["sha256"] != b["sha256"]]
    if differing:
        notes.append("parameters initialized differently (paired, but traced with different values; dirigo check "
                     "compares the functions on equal values): " + ", ".join(f"{x} ~ {y}" for x, y in differing))

    outs = [[r.ref(a), c.ref(b)] for a, b in zip(ref_prog["outputs"], cand_prog["outputs"])]
    if len(ref_prog["outputs"]) != len(cand_prog["outputs"]):
        notes.append(f"the reference returns {len(ref_prog['outputs'])} tensors, "
                     f"the candidate {len(cand_prog['outputs'])}")
    for a, b in zip(ref_prog["outputs"], cand_prog["outputs"]):
        sa, sb = r.meta[a["name"]].get("shape"), c.meta[b["name"]].get("shape")
        if sa != sb:
            notes.append(f"output {a['name']}: shape {sa} in the reference, {sb} in the candidate")
    match = {"inputs": [[r.ref(a), c.ref(b)] for a, b in pairs], "outputs": outs}
    if differing:
        match["differing_values"] = differing
    return match, notes


def reference_and_candidate(manifest: dict) -> tuple[dict, dict]:
    """The programs with role reference and candidate (exactly one each), else the first two (as merge)."""
    progs = manifest["programs"]
    refs = [p for p in progs if p.get("role") == "reference"]
    cands = [p for p in progs if p.get("role") == "candidate"]
    if len(refs) == 1 and len(cands) == 1:
        return refs[0], cands[0]
    if len(progs) >= 2:
        return progs[0], progs[1]
    raise ValueError(f"the bundle holds {len(progs)} program(s): nothing to match")


def rematch_manifest(manifest: dict) -> tuple[dict, dict | None]:
    """Recompute `match` of a manifest in place with the current rule; returns (new match, old match)."""
    old = manifest.get("match")
    ref, cand = reference_and_candidate(manifest)
    match, notes = match_programs(ref, cand)
    if notes:
        match["notes"] = notes
    manifest["match"] = match
    return match, old


def same_pairs(a: dict | None, b: dict | None) -> bool:
    """Whether two match sections pair the same inputs and outputs (order and notes aside)."""
    pairs = lambda m, k: sorted(map(tuple, (m or {}).get(k, [])))
    return all(pairs(a, k) == pairs(b, k) for k in ("inputs", "outputs"))
