"""Which dev-corpus programs call cuBLAS (docs/blas.md): per level and label, programs that mention cublas,
include its header, and call a cublas*( function; the functions called. With --pairs, copies the level-2
callers with their KernelBench references to .cache/cublas/pairs (git-ignored, corpus data) for
scripts/gpu/cublas_corpus.sh.   python3 examples/cublas/corpus_census.py [--pairs]"""
import collections
import glob
import importlib.util
import json
import os
import re
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEV = "/work/shared/corpus/dev"
CALL = re.compile(r"\b(cublas(?:Lt)?[A-Z]\w*)\s*\(")


def main():
    rows = []
    for idx in glob.glob(os.path.join(DEV, "*", "index.json")):
        for e in json.load(open(idx)):
            rows.append(dict(e, path=os.path.join(os.path.dirname(idx), e["file"])))
    funcs, callers = collections.Counter(), []
    for lvl in (1, 2, 3):
        mention, include, call = collections.Counter(), 0, collections.Counter()
        for r in rows:
            if r["level"] != lvl:
                continue
            text = open(r["path"], errors="replace").read()
            if "cublas" not in text.lower():
                continue
            mention[r["label"]] += 1
            include += "cublas_v2.h" in text or "cublasLt.h" in text
            called = sorted(set(CALL.findall(text)))
            if called:
                call[r["label"]] += 1
                funcs.update(called)
                if lvl == 2:
                    callers.append((r, called))
        print(f"level {lvl}: mention {sum(mention.values())} {dict(mention)}, include {include}, "
              f"call {sum(call.values())} {dict(call)}")
    print("functions:", funcs.most_common())
    if "--pairs" in sys.argv:
        spec = importlib.util.spec_from_file_location("ts", os.path.join(ROOT, "scripts", "trace-sweep.py"))
        ts = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(ts)
        base = os.path.join(ROOT, ".cache", "cublas", "pairs")
        shutil.rmtree(base, ignore_errors=True)
        meta = []
        for i, (r, called) in enumerate(callers):
            d = os.path.join(base, f"l2_{i:02d}")
            os.makedirs(d)
            ref = ts.pick_reference(2, r["problem_id"], open(r["path"]).read())
            shutil.copy(r["path"], os.path.join(d, "new.py"))
            shutil.copy(ref, os.path.join(d, "ref.py"))
            meta.append({"dir": os.path.relpath(d, ROOT), "label": r["label"], "candidate": r["file"], "reference": ref,
                         "calls": called, "problem": r["problem_id"]})
        json.dump(meta, open(os.path.join(base, "pairs.json"), "w"), indent=1)
        print(f"{len(meta)} level-2 pairs in {base}")


if __name__ == "__main__":
    main()
