"""Trace bundles (docs/bundle-format.md): a Python validator mirroring the document, and a writer.

The C++ reader in src/bundle/ is the authoritative validator; this one exists so the tracer can check what
it writes without the compiled core, and so tests can assert that a bundle is well formed. Every error
names the file and the JSON path of the offending field, like the C++ reader.
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import os
import re
import shutil
import tarfile
from typing import Any

from .common import DTYPE_SIZES

FORMAT = "dirigo-bundle"
VERSION = 1

SCALAR_TYPES = {"float", "int", "bool", "complex"}
PTX_SCALAR_TYPES = {"u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "f16", "bf16", "f32", "f64", "pred",
                    "b8", "b16", "b32", "b64"}
ROLES = {"reference", "candidate", "other"}
INPUT_KINDS = {"input", "parameter", "buffer"}
OP_KINDS = {"aten", "launch", "library", "copy"}
NAME_RE = re.compile(r"^[A-Za-z0-9_.-]+$")
# Non-finite floats cannot be JSON numbers; the tracer writes them as these strings (see docs/trace.md).
NONFINITE = {"inf", "-inf", "nan"}


class BundleError(ValueError):
    """A bundle that does not follow docs/bundle-format.md; the message names the file and JSON path."""


def _err(path: str, msg: str) -> BundleError:
    return BundleError(f"manifest.json: {path}: {msg}")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool))


def _need(obj: dict, key: str, path: str, check, what: str):
    if not isinstance(obj, dict):
        raise _err(path, "expected an object")
    if key not in obj:
        raise _err(f"{path}.{key}" if path else key, f"missing (expected {what})")
    v = obj[key]
    if not check(v):
        raise _err(f"{path}.{key}" if path else key, f"expected {what}, got {json.dumps(v)[:80]}")
    return v


def _new_id(obj: dict, path: str, seen, kind: str) -> str:
    """obj's "id": a string not yet in `seen`."""
    v = _need(obj, "id", path, _str, f"a {kind} id")
    if v in seen:
        raise _err(f"{path}.id", f"duplicate {kind} id {json.dumps(v)}")
    return v


def _str(v):
    return isinstance(v, str)


def _int_list(v):
    return isinstance(v, list) and all(_is_int(x) for x in v)


def _validate_arg(arg: Any, path: str, tensor_ids: set, launch: bool = False) -> None:
    """ARG of an aten op (or of a launch when launch=True); nested lists walked with an explicit stack."""
    stack = [(arg, path)]
    while stack:
        a, p = stack.pop()
        if not isinstance(a, dict) or not a:
            raise _err(p, "expected an argument object")
        if "tensor" in a:
            if not isinstance(a["tensor"], str) or a["tensor"] not in tensor_ids:
                raise _err(f"{p}.tensor", f"unknown tensor id {json.dumps(a['tensor'])}")
            if launch:
                _need(a, "byte_offset", p, _is_int, "an integer byte offset")
        elif "scalar" in a:
            types = PTX_SCALAR_TYPES if launch else SCALAR_TYPES
            t = _need(a, "type", p, _str, "a scalar type")
            if t not in types:
                raise _err(f"{p}.type", f"unknown scalar type {json.dumps(t)}")
            v = a["scalar"]
            ok = (_is_num(v) or isinstance(v, bool) or (isinstance(v, str) and v in NONFINITE)
                  or (t == "complex" and isinstance(v, list) and len(v) == 2 and all(_is_num(x) for x in v)))
            if not ok:
                raise _err(f"{p}.scalar", f"not a {t} value: {json.dumps(v)[:80]}")
        elif launch and "bytes" in a:
            if not isinstance(a["bytes"], str) or not re.fullmatch(r"(?:[0-9a-fA-F]{2})*", a["bytes"]):
                raise _err(f"{p}.bytes", "expected an even-length hex string")
        elif launch and "pointer" in a:
            if not isinstance(a["pointer"], str) or not re.fullmatch(r"0x[0-9a-fA-F]+", a["pointer"]):
                raise _err(f"{p}.pointer", "expected a hex address like 0x7f00")
        elif not launch and "list" in a:
            if not isinstance(a["list"], list):
                raise _err(f"{p}.list", "expected a list")
            for i in reversed(range(len(a["list"]))):
                stack.append((a["list"][i], f"{p}.list[{i}]"))
        elif not launch and "none" in a:
            if a["none"] is not True:
                raise _err(f"{p}.none", "expected true")
        elif not launch and any(k in a for k in ("string", "dtype", "layout", "device", "memory_format")):
            k = next(k for k in ("string", "dtype", "layout", "device", "memory_format") if k in a)
            if not isinstance(a[k], str):
                raise _err(f"{p}.{k}", "expected a string")
            if k == "dtype" and a[k] not in DTYPE_SIZES:
                raise _err(f"{p}.dtype", f"unknown dtype {json.dumps(a[k])}")
        else:
            raise _err(p, f"unknown argument form with keys {sorted(a)}")


def _max_index_range(shape, strides):
    lo = hi = 0
    for n, s in zip(shape, strides):
        if n == 0:
            return None  # empty tensor: no element is addressed
        if s >= 0:
            hi += (n - 1) * s
        else:
            lo += (n - 1) * s
    return lo, hi


def _validate_program(prog: Any, path: str, modules: dict) -> None:
    if not isinstance(prog, dict):
        raise _err(path, "expected a program object")
    name = _need(prog, "name", path, _str, "a program name")
    if not NAME_RE.match(name):
        raise _err(f"{path}.name", f"{json.dumps(name)} is not [A-Za-z0-9_.-]+")
    role = _need(prog, "role", path, _str, "a role")
    if role not in ROLES:
        raise _err(f"{path}.role", f"unknown role {json.dumps(role)}")
    storages = _need(prog, "storages", path, lambda v: isinstance(v, list), "a list")
    sizes = {}
    for i, s in enumerate(storages):
        p = f"{path}.storages[{i}]"
        sid = _new_id(s, p, sizes, "storage")
        sizes[sid] = _need(s, "nbytes", p, lambda v: _is_int(v) and v >= 0, "a non-negative integer")
        _need(s, "device", p, _str, "a device string")
    tensors = _need(prog, "tensors", path, lambda v: isinstance(v, list), "a list")
    tids: dict[str, dict] = {}
    for i, t in enumerate(tensors):
        p = f"{path}.tensors[{i}]"
        tid = _new_id(t, p, tids, "tensor")
        sid = _need(t, "storage", p, _str, "a storage id")
        if sid not in sizes:
            raise _err(f"{p}.storage", f"unknown storage id {json.dumps(sid)}")
        off = _need(t, "offset", p, lambda v: _is_int(v) and v >= 0, "a non-negative integer")
        shape = _need(t, "shape", p, _int_list, "a list of integers")
        strides = _need(t, "strides", p, _int_list, "a list of integers")
        if len(shape) != len(strides):
            raise _err(f"{p}.strides", f"has {len(strides)} entries, shape has {len(shape)}")
        if any(n < 0 for n in shape):
            raise _err(f"{p}.shape", "negative extent")
        dtype = _need(t, "dtype", p, _str, "a dtype")
        if dtype not in DTYPE_SIZES:
            raise _err(f"{p}.dtype", f"unknown dtype {json.dumps(dtype)}")
        rng = _max_index_range(shape, strides)
        if rng is not None:
            lo, hi = rng
            if off + lo < 0 or (off + hi + 1) * DTYPE_SIZES[dtype] > sizes[sid]:
                raise _err(p, f"view (offset {off}, shape {shape}, strides {strides}, {dtype}) does not fit "
                              f"storage {sid} of {sizes[sid]} bytes")
        tids[tid] = t
    tid_set = set(tids)
    seen_names = set()
    for key in ("inputs", "outputs"):
        lst = _need(prog, key, path, lambda v: isinstance(v, list), "a list")
        for i, e in enumerate(lst):
            p = f"{path}.{key}[{i}]"
            nm = _need(e, "name", p, _str, "a name")
            if (key, nm) in seen_names:
                raise _err(f"{p}.name", f"duplicate {key[:-1]} name {json.dumps(nm)}")
            seen_names.add((key, nm))
            tid = _need(e, "tensor", p, _str, "a tensor id")
            if tid not in tid_set:
                raise _err(f"{p}.tensor", f"unknown tensor id {json.dumps(tid)}")
            if key == "inputs":
                k = _need(e, "kind", p, _str, "an input kind")
                if k not in INPUT_KINDS:
                    raise _err(f"{p}.kind", f"unknown input kind {json.dumps(k)}")
    ops = _need(prog, "ops", path, lambda v: isinstance(v, list), "a list")
    for i, op in enumerate(ops):
        p = f"{path}.ops[{i}]"
        kind = _need(op, "kind", p, _str, "an op kind")
        if kind not in OP_KINDS:
            raise _err(f"{p}.kind", f"unknown op kind {json.dumps(kind)}")
        if kind == "aten":
            _need(op, "name", p, _str, "an operator name")
            _need(op, "overload", p, _str, "an overload name")
            _need(op, "schema", p, _str, "a schema string")
            args = _need(op, "args", p, lambda v: isinstance(v, list), "a list")
            for j, a in enumerate(args):
                _validate_arg(a, f"{p}.args[{j}]", tid_set)
            kwargs = op.get("kwargs", {})
            if not isinstance(kwargs, dict):
                raise _err(f"{p}.kwargs", "expected an object")
            for k, a in kwargs.items():
                _validate_arg(a, f"{p}.kwargs.{k}", tid_set)
            for key in ("outputs", "mutates"):
                lst = op.get(key, [])
                if not isinstance(lst, list):
                    raise _err(f"{p}.{key}", "expected a list")
                for j, tid in enumerate(lst):
                    if tid not in tid_set:
                        raise _err(f"{p}.{key}[{j}]", f"unknown tensor id {json.dumps(tid)}")
            frm = op.get("from", "python")
            if frm not in ("python", "extension"):
                raise _err(f"{p}.from", f"expected \"python\" or \"extension\", got {json.dumps(frm)}")
        elif kind == "launch":
            mid = _need(op, "module", p, _str, "a module id")
            if mid not in modules:
                raise _err(f"{p}.module", f"unknown module id {json.dumps(mid)}")
            _need(op, "kernel", p, _str, "a kernel name")
            for key in ("grid", "block"):  # a launch the GPU refuses (zero grid, 2048 threads) is still recorded
                _need(op, key, p, lambda v: _int_list(v) and len(v) == 3 and all(0 <= x < 1 << 32 for x in v),
                      "three integers in [0, 2^32)")
            _need(op, "shared_bytes", p, lambda v: _is_int(v) and v >= 0, "a non-negative integer")
            args = _need(op, "args", p, lambda v: isinstance(v, list), "a list")
            for j, a in enumerate(args):
                _validate_arg(a, f"{p}.args[{j}]", tid_set, launch=True)
        elif kind == "library":
            _need(op, "library", p, _str, "a library name")
            _need(op, "name", p, _str, "a function name")
            _need(op, "args", p, lambda v: isinstance(v, dict), "an object")
            for j, tid in enumerate(op.get("writes", [])):
                if tid not in tid_set:
                    raise _err(f"{p}.writes[{j}]", f"unknown tensor id {json.dumps(tid)}")
        else:  # copy
            for key in ("dst", "src"):
                ref = _need(op, key, p, lambda v: isinstance(v, dict), "a tensor reference")
                _validate_arg(ref, f"{p}.{key}", tid_set, launch=True)
                if "tensor" not in ref:
                    raise _err(f"{p}.{key}", "expected {\"tensor\": ..., \"byte_offset\": ...}")
            _need(op, "nbytes", p, lambda v: _is_int(v) and v >= 0, "a non-negative integer")


def validate_manifest(manifest: Any, files: dict[str, bytes] | None = None) -> None:
    """Raise BundleError naming the first offending field. `files` maps bundle-relative paths to their
    contents (for checking module paths and hashes); None skips those checks."""
    if not isinstance(manifest, dict):
        raise _err("$", "expected a JSON object")
    fmt = _need(manifest, "format", "", _str, f"\"{FORMAT}\"")
    if fmt != FORMAT:
        raise _err("format", f"expected \"{FORMAT}\", got {json.dumps(fmt)}")
    ver = _need(manifest, "version", "", _is_int, "an integer")
    if ver != VERSION:
        raise _err("version", f"this reader knows version {VERSION}, the bundle has version {ver}")
    modules: dict[str, dict] = {}
    for i, m in enumerate(manifest.get("modules", [])):
        p = f"modules[{i}]"
        mid = _new_id(m, p, modules, "module")
        mpath = _need(m, "path", p, _str, "a path inside the bundle")
        if files is not None:
            if mpath not in files:
                raise _err(f"{p}.path", f"file {json.dumps(mpath)} is not in the bundle")
            if "sha256" in m and hashlib.sha256(files[mpath]).hexdigest() != m["sha256"]:
                raise _err(f"{p}.sha256", f"does not match the contents of {mpath}")
        modules[mid] = m
    programs = _need(manifest, "programs", "", lambda v: isinstance(v, list), "a list of programs")
    names: dict[str, dict] = {}
    for i, prog in enumerate(programs):
        _validate_program(prog, f"programs[{i}]", modules)
        if prog["name"] in names:
            raise _err(f"programs[{i}].name", f"duplicate program name {json.dumps(prog['name'])}")
        names[prog["name"]] = prog
    for i, prog in enumerate(programs):  # launches must name kernels their module defines
        for j, op in enumerate(prog["ops"]):
            if op["kind"] == "launch" and files is not None:
                ptx = files.get(modules[op["module"]]["path"], b"").decode("utf-8", "replace")
                if not re.search(r"\.entry\s+" + re.escape(op["kernel"]) + r"\s*\(", ptx):
                    raise _err(f"programs[{i}].ops[{j}].kernel",
                               f"no .entry {op['kernel']} in {modules[op['module']]['path']}")
    match = manifest.get("match")
    if match is not None:
        if not isinstance(match, dict):
            raise _err("match", "expected an object")
        for key, side in (("inputs", "inputs"), ("outputs", "outputs")):
            pairs = match.get(key, [])
            if not isinstance(pairs, list):
                raise _err(f"match.{key}", "expected a list of pairs")
            for j, pair in enumerate(pairs):
                if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
                    raise _err(f"match.{key}[{j}]", "expected a pair of \"<program>.<name>\" strings")
                for k, ref in enumerate(pair):
                    prog_name, _, item = ref.partition(".")
                    if prog_name not in names:
                        raise _err(f"match.{key}[{j}][{k}]", f"unknown program {json.dumps(prog_name)}")
                    if item not in {e["name"] for e in names[prog_name][side]}:
                        raise _err(f"match.{key}[{j}][{k}]",
                                   f"program {prog_name} has no {side[:-1]} named {json.dumps(item)}")
    tol = manifest.get("tolerance")
    if tol is not None:
        for key in ("atol", "rtol"):
            _need(tol, key, "tolerance", lambda v: _is_num(v) and v >= 0 and math.isfinite(v),
                  "a non-negative number")


def read_bundle(path: str) -> tuple[dict, dict[str, bytes]]:
    """Read a bundle directory, .tar or .tar.gz; return (manifest, {relative path: bytes}), validated."""
    files: dict[str, bytes] = {}
    sizes: dict[str, int] = {}
    if os.path.isdir(path):
        for root, _, fnames in os.walk(path):
            for f in fnames:
                full = os.path.join(root, f)
                rel = os.path.relpath(full, path).replace(os.sep, "/")
                if rel == "manifest.json" or rel.startswith("ptx/"):
                    with open(full, "rb") as fh:
                        files[rel] = fh.read()
                elif rel.startswith("data/"):
                    sizes[rel] = os.path.getsize(full)  # contents read on demand by whoever needs them
    elif os.path.isfile(path):
        try:
            with tarfile.open(path) as tar:
                members = [m for m in tar.getmembers() if m.isfile()]
                # archives may hold the bundle at the top or inside one folder
                prefix = os.path.commonpath([m.name for m in members]) if len(members) > 1 else ""
                if prefix and any(m.name == prefix for m in members):
                    prefix = ""
                for m in members:
                    rel = m.name[len(prefix):].lstrip("/") if prefix else m.name
                    files[rel] = tar.extractfile(m).read()
                    sizes[rel] = len(files[rel])
        except tarfile.TarError as e:
            raise BundleError(f"{path}: not a bundle directory or tar archive ({e})") from None
    else:
        raise BundleError(f"{path}: no such bundle")
    if "manifest.json" not in files:
        raise BundleError(f"{path}: manifest.json is missing")
    try:
        manifest = json.loads(files["manifest.json"].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BundleError(f"manifest.json: not valid JSON ({e})") from None
    validate_manifest(manifest, files)
    for i, prog in enumerate(manifest["programs"]):  # data files hold numel x element size bytes
        tensors = {t["id"]: t for t in prog["tensors"]}
        for key in ("inputs", "outputs"):
            for j, e in enumerate(prog[key]):
                rel = e.get("data")
                if rel is None:
                    continue
                where = f"programs[{i}].{key}[{j}].data"
                if not isinstance(rel, str) or rel.startswith("/") or ".." in rel.split("/"):
                    raise _err(where, f"path {json.dumps(rel)} must be relative and stay inside the bundle")
                if rel not in sizes:
                    raise _err(where, f"file {json.dumps(rel)} not found in the bundle")
                t = tensors[e["tensor"]]
                want = math.prod(t["shape"]) * DTYPE_SIZES[t["dtype"]]
                if sizes[rel] != want:
                    raise _err(where, f"file {json.dumps(rel)} has {sizes[rel]} bytes, the tensor needs {want}")
    return manifest, files


def write_bundle(out_dir: str, manifest: dict, ptx: dict[str, str] | None = None,
                 data: dict[str, bytes] | None = None) -> None:
    """Write manifest.json, ptx/<id>.ptx and data/<file>; fills module sha256 and validates first."""
    ptx = ptx or {}
    files = {f"ptx/{mid}.ptx": text.encode() for mid, text in ptx.items()}
    for m in manifest.get("modules", []):
        body = files.get(m["path"])
        if body is not None:
            m["sha256"] = hashlib.sha256(body).hexdigest()
    validate_manifest(manifest, files)
    os.makedirs(os.path.join(out_dir, "ptx"), exist_ok=True)
    for rel, body in files.items():
        with open(os.path.join(out_dir, rel), "wb") as fh:
            fh.write(body)
    if data:
        os.makedirs(os.path.join(out_dir, "data"), exist_ok=True)
        for rel, body in data.items():
            with open(os.path.join(out_dir, rel), "wb") as fh:
                fh.write(body)
    _write_manifest(out_dir, manifest)


def _write_manifest(out_dir: str, manifest: dict) -> None:
    buf = io.StringIO()
    json.dump(manifest, buf, indent=1, allow_nan=False)
    tmp = os.path.join(out_dir, "manifest.json.tmp")
    with open(tmp, "w") as fh:
        fh.write(buf.getvalue() + "\n")
    os.replace(tmp, os.path.join(out_dir, "manifest.json"))  # never a half-written manifest


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)  # data files can be large; a bundle is never modified in place but for its manifest
    except OSError:
        shutil.copy2(src, dst)


def rematch_bundle(path: str, out: str | None = None) -> dict:
    """Recompute the bundle's `match` with the current rule (dirigo.match) from its manifest alone: names,
    kinds, shapes, dtypes and the sha256 of recorded values are all there, so no re-trace is needed.
    Writes the bundle to `out` (a directory; data and ptx files hard-linked where possible), or rewrites
    the manifest of a bundle directory in place. Returns {"bundle", "out", "changed", "old", "new"}."""
    from . import match as match_mod
    manifest, files = read_bundle(path)
    old_match = json.loads(json.dumps(manifest.get("match")))
    new_match, _ = match_mod.rematch_manifest(manifest)
    validate_manifest(manifest, files)
    target = _write_copy(path, out, manifest, files)
    return {"bundle": path, "out": target, "changed": not match_mod.same_pairs(old_match, new_match),
            "old": old_match, "new": new_match}


def annotate_state(manifest: dict, answer: dict) -> dict:
    """Put a dirigo-state answer into a manifest: each compared input gets the sha256 and statistics of its
    values as constructed (where the trace had none), `match.differing_values` lists the pairs whose values
    differ, and `match.state` keeps the answer's verdict, reason, evidence and pairs. Returns match.state."""
    from . import match as match_mod
    ref, cand = match_mod.reference_and_candidate(manifest)
    entries = {(p["name"], e["name"]): e for p in (ref, cand) for e in p["inputs"]}
    for pr in answer.get("pairs", []):
        for prog, name, side in ((ref, pr["reference"], "reference"), (cand, pr["candidate"], "candidate")):
            e = entries.get((prog["name"], name))
            if e is None:
                continue
            e.setdefault("sha256", pr.get(f"{side}_sha256"))
            e.setdefault("stats", pr.get(f"{side}_stats"))
    match = manifest.setdefault("match", {"inputs": [], "outputs": []})
    differing = [[f"{ref['name']}.{a}", f"{cand['name']}.{b}"] for a, b in answer.get("differing", [])]
    if differing:
        match["differing_values"] = differing
    else:
        match.pop("differing_values", None)
    keep = ("format", "version", "verdict", "evidence", "reason", "init_seed", "paired_by", "differing", "pairs",
            "outputs", "tolerance", "rounding")
    match["state"] = {k: answer[k] for k in keep if k in answer}
    return match["state"]


def state_bundle(path: str, ref_file: str, new_file: str, out: str | None = None, device: str = "cpu",
                 report: str | None = None, outputs: bool = True, timeout: float = 600.0,
                 observe: bool = False) -> dict:
    """Construct both programs (in a child process: user code) under KernelBench's protocol and annotate
    the bundle with what their matched parameters hold (annotate_state). Writes the manifest like
    rematch_bundle (in place for a directory, or a copy at `out`). Returns the dirigo-state answer."""
    import subprocess
    import sys
    manifest, files = read_bundle(path)
    cmd = [sys.executable, "-m", "dirigo.state", ref_file, new_file, "--bundle", path, "--json", "--device", device]
    if report:
        cmd += ["--report", report]
    if not outputs:
        cmd.append("--no-outputs")
    if observe:
        cmd.append("--observe")
    env = dict(os.environ)
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = pkg + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        answer = json.loads(p.stdout)
    except subprocess.TimeoutExpired:
        raise BundleError(f"{path}: the state stage did not finish within {timeout:.0f} s") from None
    except json.JSONDecodeError:
        raise BundleError(f"{path}: the state stage did not answer (exit status {p.returncode}): "
                          f"{p.stderr.strip()[-300:]}") from None
    annotate_state(manifest, answer)
    validate_manifest(manifest, files)
    _write_copy(path, out, manifest, files)
    return answer


def state_text(ans: dict) -> str:
    """A dirigo-state answer (the one annotate_state records) as text."""
    lines = [f"state: {ans['verdict']}" + (f" ({ans['evidence']})" if ans.get("evidence") else ""),
             f"  {ans['reason']}"]
    for p in ans.get("pairs", []):
        if p.get("equal"):
            continue
        lines.append(f"  {p['reference']} ~ {p['candidate']} {p['shape']}: max |diff| {p.get('max_abs_diff')}, "
                     f"{p.get('elements_differing')} of {p['reference_stats'].get('numel')} elements differ")
        lines.append(f"    reference samples {p['reference_stats'].get('samples')}, "
                     f"candidate samples {p['candidate_stats'].get('samples')}")
        if p.get("likely_cause"):
            lines.append(f"    likely cause: {p['likely_cause']}")
    return "\n".join(lines) + "\n"


def _write_copy(path: str, out: str | None, manifest: dict, files: dict) -> str:
    """Write `manifest` for the bundle at `path`: in place (a directory), or as a copy at `out` (data and
    ptx files hard-linked where possible)."""
    target = out or path
    if os.path.isdir(path):
        if out and os.path.abspath(out) != os.path.abspath(path):
            if os.path.exists(out):
                shutil.rmtree(out)
            shutil.copytree(path, out, copy_function=_link_or_copy)
            os.remove(os.path.join(out, "manifest.json"))  # a link to the original: never write through it
    elif out:
        os.makedirs(out, exist_ok=True)
        for rel, body in files.items():
            if rel == "manifest.json":
                continue
            os.makedirs(os.path.dirname(os.path.join(out, rel)) or out, exist_ok=True)
            with open(os.path.join(out, rel), "wb") as fh:
                fh.write(body)
    else:
        raise BundleError(f"{path}: an archive is not rewritten in place; give --out DIR")
    _write_manifest(target, manifest)
    return target


def main(argv: list[str] | None = None) -> int:
    import argparse
    import sys
    ap = argparse.ArgumentParser(prog="python -m dirigo.bundle", description="Trace bundle tools.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("validate", help="validate a bundle (directory or tar archive)")
    v.add_argument("bundle")
    rm = sub.add_parser("rematch", help="recompute a bundle's `match` (parameter pairing) from its manifest")
    rm.add_argument("bundle")
    rm.add_argument("--out", help="write the rematched bundle here (default: rewrite the manifest in place)")
    rm.add_argument("--json", action="store_true", help="print old and new match as JSON")
    st = sub.add_parser("state", help="construct both programs (KernelBench's protocol) and record what their "
                                      "matched parameters hold (match.state, docs/check.md \"State\")")
    st.add_argument("bundle")
    st.add_argument("--ref-file", required=True, help="the reference program the bundle was traced from")
    st.add_argument("--new-file", required=True, help="the candidate program")
    st.add_argument("--out", help="write the annotated bundle here (default: rewrite the manifest in place)")
    st.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    st.add_argument("--report", help="dirigo check --json report (its proven-equal locations back the evidence)")
    st.add_argument("--no-outputs", action="store_true", help="compare values only (no forward runs)")
    st.add_argument("--observe", action="store_true",
                    help="also run both real programs when their state is equal and record what KernelBench's "
                         "check sees (docs/check.md \"Observe\"; needs a GPU for a CUDA candidate)")
    st.add_argument("--json", action="store_true", help="print the dirigo-state answer as JSON")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "state":
            r = state_bundle(a.bundle, a.ref_file, a.new_file, a.out, a.device, a.report, not a.no_outputs,
                             observe=a.observe)
        elif a.cmd == "validate":
            read_bundle(a.bundle)
            print(f"{a.bundle}: valid")
            return 0
        else:
            r = rematch_bundle(a.bundle, a.out)
    except BundleError as e:
        print(f"ERROR: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(r, indent=1))
    elif a.cmd == "state":
        print(f"{a.out or a.bundle}: match.state written")
        sys.stdout.write(state_text(r))
    else:
        print(f"{r['out']}: match {'changed' if r['changed'] else 'unchanged'} "
              f"({len((r['old'] or {}).get('inputs', []))} -> {len(r['new']['inputs'])} input pairs)")
        for n in r["new"].get("notes", []):
            print(f"  note: {n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
