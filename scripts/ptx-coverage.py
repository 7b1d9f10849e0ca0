#!/usr/bin/env python3
"""PTX parse rate of the dev corpus (docs/coverage.md, "## PTX parse rate").

For every program listed in <corpus>/*/index.json (or every --every'th, deterministically):
  1. extract the CUDA source strings (the ones that define a __global__ kernel) from the Python
     file, resolving module-level names, f-strings and .format() where they are constant;
  2. compile each to PTX with nvcc (-arch=sm_90a; default and --use_fast_math) WITHOUT the torch
     headers: host functions that use torch types are cut out, torch/ATen/c10 includes are
     replaced by a tiny stub header (tests/ptx/stub/dirigo_torch_stub.h), and each kernel template
     launched from the removed host code is instantiated explicitly (scalar_t -> float).
     If that fails the program is retried without the instantiations; what still fails is
     reported with the first nvcc error (a full torch-header compile takes ~35 s per source on
     this machine, so it is only done with --full-fallback);
  3. parses every PTX file with build-ptx/tests/ptx/ptx_parse (parse + .func inlining).
PTX is cached under .cache/ptx/ keyed by the hash of (preprocessed source, flags); corpus
derived outputs stay under .cache (never committed).

Usage: scripts/ptx-coverage.py [--every K] [-j 2] [--json OUT] [--cached-only] [--rollup]
       [--emit-jobs DIR]  (compile elsewhere: scripts/gpu/ptxsweep.sh)  [--import-dir DIR]
"""
import argparse
import ast
import collections
import concurrent.futures as cf
import hashlib
import json
import os
import re
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NVCC = "/usr/local/cuda/bin/nvcc"
CACHE = os.path.join(ROOT, ".cache", "ptx")
STUB_DIR = os.path.join(ROOT, "tests", "ptx", "stub")
# The flags torch.utils.cpp_extension adds for CUDA sources.
TORCH_FLAGS = ["-std=c++17", "--expt-relaxed-constexpr", "-D__CUDA_NO_HALF_OPERATORS__",
               "-D__CUDA_NO_HALF_CONVERSIONS__", "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
               "-D__CUDA_NO_HALF2_OPERATORS__"]
VARIANTS = {"default": [], "fast_math": ["--use_fast_math"]}


# ------------------------------------------------------------------ 1. extraction
class Unresolved(Exception):
    pass


def evaluate(node, env):
    """Constant-folds the string/number expressions KernelBench files build sources with."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        raise Unresolved(f"name {node.id}")
    if isinstance(node, ast.JoinedStr):
        out = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                out.append(str(v.value))
            else:
                val = evaluate(v.value, env)
                spec = evaluate(v.format_spec, env) if v.format_spec else ""
                out.append(format(val, spec))
        return "".join(out)
    if isinstance(node, ast.BinOp):
        a, b = evaluate(node.left, env), evaluate(node.right, env)
        if isinstance(node.op, ast.Add):
            return a + b
        if isinstance(node.op, ast.Mult):
            return a * b
        if isinstance(node.op, ast.Mod) and isinstance(a, str):
            return a % b
        if isinstance(node.op, ast.Sub):
            return a - b
        if isinstance(node.op, ast.FloorDiv):
            return a // b
        raise Unresolved("binary operator")
    if isinstance(node, ast.Tuple):
        return tuple(evaluate(e, env) for e in node.elts)
    if isinstance(node, ast.List):
        return [evaluate(e, env) for e in node.elts]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -evaluate(node.operand, env)
    if isinstance(node, ast.Call):
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr in ("format", "replace", "strip", "join"):
            base = evaluate(f.value, env)
            args = [evaluate(a, env) for a in node.args]
            kwargs = {k.arg: evaluate(k.value, env) for k in node.keywords}
            return getattr(base, f.attr)(*args, **kwargs)
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        if name == "dedent" and node.args:
            import textwrap
            return textwrap.dedent(evaluate(node.args[0], env))
        if name == "str" and node.args:
            return str(evaluate(node.args[0], env))
        raise Unresolved(f"call {name}")
    raise Unresolved(type(node).__name__)


def extract_sources(py_text):
    """Returns (list of CUDA source strings, reason when none)."""
    try:
        tree = ast.parse(py_text)
    except SyntaxError as e:
        return [], f"python syntax error: {e.msg}"
    env, sources, unresolved = {}, [], []
    # Module-level constants first (in order), so f-strings can refer to them.
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            try:
                env[stmt.targets[0].id] = evaluate(stmt.value, env)
            except Exception:
                pass
    seen = set()
    for node in ast.walk(tree):
        value = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            value = node.value
        elif isinstance(node, (ast.JoinedStr, ast.BinOp)):
            try:
                value = evaluate(node, env)
            except Exception as e:
                if any(isinstance(c, ast.Constant) and isinstance(c.value, str) and "__global__" in c.value
                       for c in ast.walk(node)):
                    unresolved.append(str(e))
                continue
        if isinstance(value, str) and "__global__" in value and value not in seen:
            seen.add(value)
            sources.append(value)
    # Drop fragments contained in a larger source (a BinOp and its constant parts).
    sources = [s for s in sources if not any(s != t and s in t for t in sources)]
    if sources:
        return sources, None
    if unresolved:
        return [], "CUDA source built from non-constant parts (" + unresolved[0] + ")"
    if "load_inline" in py_text or "cpp_extension" in py_text:
        return [], "load_inline without a __global__ kernel in a string"
    if "triton" in py_text:
        return [], "no CUDA source (Triton)"
    return [], "no CUDA source"


# ------------------------------------------------------------------ 2. device-only translation unit
# Host-only headers: torch and the host libraries (cuBLAS, cuDNN, ...) that this toolkit lacks.
TORCH_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]((torch|ATen|c10|pybind11|THC)/[^>"]*|(cublas|cudnn|cusparse|cufft|cusolver)\w*\.h)[>"].*$', re.M)
TORCH_WORDS = re.compile(r"\b(torch|at|c10|pybind11|py)::|\bTensor\b|\bPYBIND11_MODULE\b|\bTORCH_|\bAT_|\b(cublas|cudnn|cusparse|cufft)\w*")
DEVICE_WORDS = re.compile(r"__global__|__device__|__constant__|__shared__")
LAUNCH = re.compile(r"\b([A-Za-z_]\w*)\s*<((?:[^<>;()]|<[^<>;()]*>)*)>\s*<<<")


def split_top_level(src):
    """Splits C++ text into top-level chunks: preprocessor lines, `;`-terminated declarations,
    and brace-terminated definitions. Strings, chars and comments are skipped over."""
    chunks, i, n, start, depth = [], 0, len(src), 0, 0
    while i < n:
        c = src[i]
        if depth == 0 and c == "#" and src[src.rfind("\n", 0, i) + 1:i].strip() == "":
            if src[start:i].strip():  # a comment before the directive belongs to no chunk
                chunks.append(("decl", src[start:i]))
            j = i
            while True:  # preprocessor line with continuations
                k = src.find("\n", j)
                if k < 0:
                    k = n
                if src[k - 1:k] == "\\":
                    j = k + 1
                    continue
                break
            chunks.append(("pp", src[i:k]))
            i = start = k
            continue
        if src.startswith("//", i):
            k = src.find("\n", i)
            i = n if k < 0 else k
            continue
        if src.startswith("/*", i):
            k = src.find("*/", i + 2)
            i = n if k < 0 else k + 2
            continue
        if c in "\"'":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            i = j + 1
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                head = src[start:src.index("{", start)]
                i += 1
                # `struct X {...} x;` and `T a[] = {...};` end at the following `;`
                if re.match(r"\s*(template\s*<.*>\s*)?(typedef\s+)?(struct|class|union|enum)\b", head, re.S) or ("=" in head and "(" not in head):
                    m = re.match(r"\s*[\w\s,*&]*;", src[i:])
                    if m:
                        i += m.end()
                chunks.append(("def", src[start:i]))
                start = i
                continue
        elif c == ";" and depth == 0:
            chunks.append(("decl", src[start:i + 1]))
            start = i + 1
        i += 1
    if src[start:].strip():
        chunks.append(("decl", src[start:]))
    return chunks


def device_only(src):
    """Keeps device code, type definitions and plain constants; drops host code using torch."""
    out = []
    for kind, text in split_top_level(src):
        if kind == "pp":
            if TORCH_INCLUDE.match(text):
                continue
            out.append(text)
            continue
        head = text.split("{", 1)[0]
        if kind == "def":
            if re.match(r'\s*((inline\s+)?namespace\b|extern\s+"C")', head):
                body = text[text.index("{") + 1:text.rindex("}")]
                out.append(head + "{\n" + device_only(body) + "\n}")
                continue
            if TORCH_WORDS.search(head if DEVICE_WORDS.search(head) else text):
                continue  # host code (or a device signature naming torch types)
            is_type = re.match(r"\s*(template\s*<.*>\s*)?(typedef\s+)?(struct|class|union|enum)\b", head, re.S)
            if DEVICE_WORDS.search(head) or is_type or ("=" in head and "(" not in head):
                out.append(text)
            continue
        # declarations
        if re.match(r"\s*extern\s+\"C\"", text) or TORCH_WORDS.search(text):
            continue
        if "<<<" in text:
            continue
        out.append(text)
    return "\n".join(out)


def instantiations(src):
    """`(void*)&k<args>` for each templated kernel launch in the original host code."""
    refs = []
    for name, args in LAUNCH.findall(src):
        args = re.sub(r"\bscalar_t\b", "float", args)
        ref = f"(void*)&{name}<{args}>"
        if ref not in refs:
            refs.append(ref)
    return refs


def translation_unit(src, with_refs):
    tu = '#include "dirigo_torch_stub.h"\n' + device_only(src)
    refs = instantiations(src) if with_refs else []
    if refs:
        tu += "\nstatic void* dirigo_kernel_refs[] = {" + ", ".join(refs) + "};\n"
    return tu


# ------------------------------------------------------------------ compile (cached)
def torch_include_flags():
    import sysconfig
    try:
        import torch.utils.cpp_extension as ext
        incs = ext.include_paths()
    except Exception:
        return []
    full_stub = os.path.join(STUB_DIR, "full")  # c10/cuda/impl/cuda_cmake_macros.h, absent from CPU wheels
    return [f"-I{d}" for d in incs + [sysconfig.get_paths()["include"], full_stub]]


CACHED_ONLY = False  # --cached-only: report what .cache/ptx holds, compile nothing
EMIT_DIR = None  # --emit-jobs DIR: write each uncached job as DIR/<key>.cu + <key>.flags for a bigger machine


class NotCached(Exception):
    pass


def compile_ptx(tu, variant, timeout=180, extra=()):
    flags = TORCH_FLAGS + VARIANTS[variant] + ["-arch=sm_90a"] + list(extra)
    # The key covers the translation unit and flags, not the stub header: after editing
    # tests/ptx/stub/dirigo_torch_stub.h delete .cache/ptx/*.err (and *.ptx for exactness).
    key = hashlib.sha256((tu + "\0" + " ".join(flags)).encode()).hexdigest()[:24]
    ptx, err = os.path.join(CACHE, key + ".ptx"), os.path.join(CACHE, key + ".err")
    with _key_lock(key):  # identical sources (copies across runs) compile once
        if os.path.exists(ptx):
            return ptx, None, True
        if os.path.exists(err):
            return None, open(err).read(), True
        if EMIT_DIR:  # compiled elsewhere (scripts/gpu/ptxsweep.sh); --import-dir brings the results back
            with open(os.path.join(EMIT_DIR, key + ".cu"), "w") as f:
                f.write(tu)
            with open(os.path.join(EMIT_DIR, key + ".flags"), "w") as f:
                f.write("\n".join(flags) + "\n")
            raise NotCached(key)
        if CACHED_ONLY:
            raise NotCached(key)
        cu = os.path.join(CACHE, key + ".cu")
        with open(cu, "w") as f:
            f.write(tu)
        try:
            r = subprocess.run([NVCC, "-ptx", *flags, "-I", STUB_DIR, cu, "-o", ptx + ".tmp"],
                               capture_output=True, text=True, timeout=timeout)
            ok, msg = r.returncode == 0, r.stderr
        except subprocess.TimeoutExpired:
            ok, msg = False, f"nvcc timeout after {timeout}s"
        if ok:
            os.replace(ptx + ".tmp", ptx)
            os.remove(cu)
            return ptx, None, False
        with open(err, "w") as f:
            f.write(msg)
        return None, msg, False


_locks, _locks_guard = {}, threading.Lock()


def _key_lock(key):
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


def first_error(msg):
    for line in msg.splitlines():
        m = re.search(r"error[^:]*:\s*(.*)", line)
        if m:
            return m.group(1).strip()
    return msg.strip().splitlines()[0] if msg.strip() else "unknown"


def error_class(msg):
    e = first_error(msg)
    e = re.sub(r'"[^"]*"', '"…"', e)
    e = re.sub(r"\b\d+\b", "N", e)
    return e[:110]


def global_count(src):
    """__global__ function definitions in a source (templates count once)."""
    return len(re.findall(r"__global__[^;{]*\)\s*\{", re.sub(r"//[^\n]*|/\*.*?\*/", "", src, flags=re.S)))


def compile_source(src, variant, mode="stub"):
    """Device-only compile with instantiations, then without; returns (ptx path | None, reason).
    mode "full": the source as written, against the real torch headers (slow; for comparison)."""
    if mode == "full":
        ptx, err, _ = compile_ptx(src, variant, timeout=1500, extra=torch_include_flags())
        return ptx, err
    if EMIT_DIR:  # the fallback unit is only compiled when the first fails: emit both
        for with_refs in (True, False):
            try:
                compile_ptx(translation_unit(src, with_refs), variant)
            except NotCached:
                pass
    ptx, err, _ = compile_ptx(translation_unit(src, True), variant)
    if ptx:
        return ptx, None
    ptx2, err2, _ = compile_ptx(translation_unit(src, False), variant)
    if ptx2:
        return ptx2, "fallback: " + first_error(err)
    return None, err


# ------------------------------------------------------------------ what Execute would refuse
def exec_opcodes():
    """Opcode ids (opcodes.def first column) that src/exec mentions anywhere: a superset of what
    it executes. An opcode it never mentions is certainly refused."""
    ids = set()
    exec_dir = os.path.join(ROOT, "src", "exec")
    for fn in os.listdir(exec_dir):
        if fn.endswith((".cpp", ".h")):
            ids |= set(re.findall(r"Opcode::(\w+)", open(os.path.join(exec_dir, fn)).read()))
    names = dict(re.findall(r'PTX_OP\((\w+),\s*"([^"]+)"', open(os.path.join(ROOT, "src", "ptx", "opcodes.def")).read()))
    return {names[i] for i in ids if i in names}


def refusal_stats(parsed, parse):
    """Per unit and per program: kernels with integer work on float bits that no idiom absorbed
    (ptx::unmatched_float_bits) or an opcode src/exec never mentions."""
    known = exec_opcodes()
    kernels = refused_bits = refused_op = refused_any = 0
    ops_missing, idioms = collections.Counter(), collections.Counter()
    programs_with_refusal, programs_all = set(), set()
    bits_examples = []
    for r in parsed:
        programs_all.add((r[0], r[2]))
        for k in parse[r[3]].get("kernel_info", []):
            kernels += 1
            idioms.update(k["idioms"])
            missing = sorted(set(k["opcodes"]) - known)
            ops_missing.update(missing)
            bad = False
            if k["float_bits"]:
                refused_bits += 1
                bad = True
                if len(bits_examples) < 12:
                    bits_examples.append(f"{r[0]} ({r[2]}): {k['float_bits_first']}")
            if missing:
                refused_op += 1
                bad = True
            if bad:
                refused_any += 1
                programs_with_refusal.add((r[0], r[2]))
    return {"kernels": kernels, "float_bits": refused_bits, "opcode_not_in_exec": refused_op, "any": refused_any,
            "program_variants": len(programs_all), "program_variants_with_a_refused_kernel": len(programs_with_refusal),
            "missing_opcodes": ops_missing.most_common(), "idioms": idioms.most_common(),
            "float_bits_examples": bits_examples}


# ------------------------------------------------------------------ driver
def programs(corpus):
    out = []
    for ds in sorted(os.listdir(corpus)):
        idx = os.path.join(corpus, ds, "index.json")
        if not os.path.exists(idx):
            continue
        for e in json.load(open(idx)):
            out.append((ds, e))
    return out


def markdown(s, args):
    """The "## PTX parse rate" section of docs/coverage.md."""
    sample = "every program" if s["every"] == 1 else f"every {s['every']}th program (deterministic: positions 0, {s['every']}, {2 * s['every']}, … of the index order)"
    pct = lambda a, b: f"{100.0 * a / b:.1f}%" if b else "n/a"
    L = ["## PTX parse rate", "",
         f"Produced by `python3 scripts/ptx-coverage.py --every {s['every']} -j {args.j} --mode {args.mode} --variants {args.variants}` "
         f"({s['wall_s']:.0f} s wall on the shared 2-core machine). Corpus: `{s['corpus']}` "
         f"({s['programs_in_index']} programs in `*/index.json`), measured: {sample}.", "",
         "| step | count |", "|---|---|",
         f"| programs measured | {s['programs_measured']} |",
         f"| programs with CUDA source extracted | {s['programs_with_cuda_source']} |",
         f"| CUDA translation units (a program may have several) | {s['cuda_sources']} |",
         f"| compile jobs (units × {{default, --use_fast_math}}, sm_90a) | {s['compile_jobs']} |",
         f"| compiled to PTX | {s['compiled']} ({pct(s['compiled'], s['compile_jobs'])}) |",
         f"| … of which compiled only without the template instantiations | {s['compiled_without_instantiations']} |",
         f"| **PTX parsed and inlined** | **{s['parsed']} of {s['compiled']} ({pct(s['parsed'], s['compiled'])})** |",
         f"| kernels in parsed PTX / instructions | {s['kernels_parsed']} / {s['instructions_parsed']} |",
         f"| parsed units with fewer `.entry` kernels than `__global__` definitions in the source | {s['units_with_fewer_entries_than_global_definitions']} |", ""]
    for v, d in s["by_variant"].items():
        L.append(f"- `{v}`: {d['compiled']} of {d['attempted']} compiled, {d['parsed']} parsed.")
    L += ["", "Programs without an extracted CUDA source:", ""]
    L += [f"- {n} × {why}" for why, n in s["no_source"].items()] or ["- none"]
    L += ["", "Compile failures (first nvcc error, numbers and names masked):", ""]
    L += [f"- {n} × `{why}`" for why, n in s["compile_failures"].items()] or ["- none"]
    if s.get("not_cached"):
        L += ["", f"**Partial sweep**: {s['not_cached']} compile jobs were not yet in `.cache/ptx` when this report was "
                  "made (`--cached-only`); they are counted in neither compiled nor failed."]
    L += ["", "Parse failures (grouped by reason):", ""]
    L += [f"- {len(items)} × {why} — e.g. `{items[0]}`" for why, items in s["parse_failures"].items()] or ["- none"]
    rf = s.get("refusal")
    if rf:
        L += ["", "### What Execute would refuse after parsing", "",
              f"Of {rf['kernels']} kernels in parsed PTX, **{rf['any']}** ({pct(rf['any'], rf['kernels'])}) have something "
              f"Execute refuses statically: {rf['float_bits']} integer work on float bits that no math idiom absorbed "
              f"(`ptx::unmatched_float_bits`), {rf['opcode_not_in_exec']} an opcode `src/exec` never mentions. "
              f"Program × variant pairs with at least one such kernel: {rf['program_variants_with_a_refused_kernel']} "
              f"of {rf['program_variants']}.", "",
              "Opcodes src/exec never mentions (kernels using them): " +
              (", ".join(f"`{o}` {n}" for o, n in rf["missing_opcodes"]) or "none") + ".", "",
              "Math idioms rolled up (kernels × occurrences): " +
              (", ".join(f"{i} {n}" for i, n in rf["idioms"]) or "none") + ".", "",
              "Examples of unmatched float-bit manipulation:", ""]
        L += [f"- {e}" for e in rf["float_bits_examples"]] or ["- none"]
    return "\n".join(L) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default="/work/shared/corpus/dev")
    ap.add_argument("--every", type=int, default=1, help="measure every K-th program (deterministic)")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--mode", choices=["stub", "full"], default="stub",
                    help="stub: device code only against a stub header (default); full: real torch headers")
    ap.add_argument("--variants", default="default,fast_math")
    ap.add_argument("--parser", default=os.path.join(ROOT, "build-ptx", "tests", "ptx", "ptx_parse"))
    ap.add_argument("--json", default=os.path.join(ROOT, ".cache", "ptx-coverage.json"))
    ap.add_argument("--cached-only", action="store_true",
                    help="use only PTX already in .cache/ptx (a partial sweep); uncached units are counted, not compiled")
    ap.add_argument("--rollup", action="store_true",
                    help="also count kernels Execute would refuse after parsing (needs a ptx_parse with --rollup)")
    ap.add_argument("--emit-jobs", metavar="DIR",
                    help="write the uncached compile jobs to DIR (<key>.cu, <key>.flags) instead of compiling them")
    ap.add_argument("--import-dir", metavar="DIR",
                    help="first copy <key>.ptx / <key>.err compiled elsewhere from DIR into the cache")
    args = ap.parse_args()
    global CACHED_ONLY, EMIT_DIR
    CACHED_ONLY = args.cached_only
    if args.emit_jobs:
        EMIT_DIR = args.emit_jobs
        os.makedirs(EMIT_DIR, exist_ok=True)
    if args.import_dir:
        n = 0
        for name in os.listdir(args.import_dir):
            if name.endswith((".ptx", ".err")) and not os.path.exists(os.path.join(CACHE, name)):
                os.makedirs(CACHE, exist_ok=True)
                with open(os.path.join(args.import_dir, name), "rb") as src, open(os.path.join(CACHE, name), "wb") as dst:
                    dst.write(src.read())
                n += 1
        print(f"imported {n} compiled units from {args.import_dir}", file=sys.stderr)
    os.makedirs(CACHE, exist_ok=True)
    t0 = time.time()
    progs = programs(args.corpus)
    sample = progs[::args.every]
    stats = collections.Counter()
    no_source = collections.Counter()
    compile_fail = collections.Counter()
    jobs = []  # (program id, source index, variant, source)
    for ds, e in sample:
        path = os.path.join(args.corpus, ds, e["file"])
        stats["programs"] += 1
        if not os.path.exists(path):
            no_source["file listed in index.json is missing"] += 1
            continue
        srcs, why = extract_sources(open(path, encoding="utf-8", errors="replace").read())
        if not srcs:
            no_source[why] += 1
            continue
        stats["programs_with_source"] += 1
        stats["sources"] += len(srcs)
        for k, s in enumerate(srcs):
            for v in args.variants.split(","):
                jobs.append((f"{ds}/{e['file']}", k, v, s))
    results = []
    with cf.ThreadPoolExecutor(args.j) as pool:
        futs = {pool.submit(compile_source, s, v, args.mode): (pid, k, v) for pid, k, v, s in jobs}
        for n, fut in enumerate(cf.as_completed(futs), 1):
            pid, k, v = futs[fut]
            try:
                ptx, err = fut.result()
            except NotCached:
                stats["not_cached"] += 1
                continue
            src = next(s for p2, k2, v2, s in jobs if (p2, k2, v2) == (pid, k, v))
            results.append((pid, k, v, ptx, err, global_count(src)))
            if n % 50 == 0:
                print(f"  compiled {n}/{len(jobs)} ({time.time() - t0:.0f}s)", file=sys.stderr, flush=True)
    compiled = [r for r in results if r[3]]
    fallback = [r for r in compiled if r[4]]
    for r in results:
        if not r[3]:
            compile_fail[error_class(r[4])] += 1
    # 3. parse
    parse = {}
    if compiled:
        p = subprocess.run([args.parser, *(["--rollup"] if args.rollup else []), "-"], input="\n".join(sorted({r[3] for r in compiled})),
                           capture_output=True, text=True)
        for line in p.stdout.splitlines():
            j = json.loads(line)
            parse[j["file"]] = j
    parsed = [r for r in compiled if parse.get(r[3], {}).get("ok")]
    parse_fail = collections.defaultdict(list)
    for r in compiled:
        j = parse.get(r[3], {"reason": "parser produced no result"})
        if not j.get("ok"):
            parse_fail[j.get("reason", "?")].append(f"{r[0]}#{r[1]} {r[2]}: {j.get('line')}:{j.get('col')} '{j.get('token', '')}'")
    by_variant = {v: {"compiled": sum(1 for r in compiled if r[2] == v),
                      "attempted": sum(1 for r in results if r[2] == v),
                      "parsed": sum(1 for r in parsed if r[2] == v)} for v in args.variants.split(",")}
    refusal = refusal_stats(parsed, parse) if args.rollup else None
    summary = {
        "not_cached": stats["not_cached"], "refusal": refusal,
        "corpus": args.corpus, "every": args.every, "mode": args.mode, "programs_in_index": len(progs),
        "programs_measured": stats["programs"], "programs_with_cuda_source": stats["programs_with_source"],
        "cuda_sources": stats["sources"], "compile_jobs": len(jobs), "compiled": len(compiled),
        "parsed": len(parsed), "by_variant": by_variant,
        "compiled_without_instantiations": len(fallback),
        "units_with_fewer_entries_than_global_definitions": sum(
            1 for r in parsed if parse[r[3]].get("kernels", 0) < r[5]),
        "kernels_parsed": sum(parse[r[3]].get("kernels", 0) for r in parsed),
        "instructions_parsed": sum(parse[r[3]].get("parsed_instructions", 0) for r in parsed),
        "no_source": dict(no_source.most_common()), "compile_failures": dict(compile_fail.most_common()),
        "parse_failures": {k: v for k, v in sorted(parse_fail.items(), key=lambda kv: -len(kv[1]))},
        "wall_s": round(time.time() - t0, 1),
    }
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    json.dump(summary, open(args.json, "w"), indent=1)
    with open(os.path.splitext(args.json)[0] + ".md", "w") as f:
        f.write(markdown(summary, args))
    print(json.dumps({k: v for k, v in summary.items() if k != "parse_failures"}, indent=1))
    print("parse failures:")
    for reason, items in summary["parse_failures"].items():
        print(f"  {len(items):4d}  {reason}   e.g. {items[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
