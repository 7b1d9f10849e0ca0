"""Helpers for the tracer tests: write small programs of our own and trace them."""
import textwrap

from dirigo import bundle, trace

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def write_program(tmp_path, name, body, inputs="[torch.rand(2, 3, 8, 8)]", init="[]"):
    src = HEADER + textwrap.dedent(body) + (
        f"\n\ndef get_inputs():\n    return {inputs}\n\ndef get_init_inputs():\n    return {init}\n")
    path = tmp_path / name
    path.write_text(src)
    return str(path)


def run(tmp_path, ref, new=None, **kw):
    out = str(tmp_path / "bundle")
    kw.setdefault("timeout", 90)
    return trace.trace(ref, new, out, **kw), out


def manifest(out):
    m, files = bundle.read_bundle(out)  # validates
    return m, files


def ops(prog):
    return [f"{op['name']}.{op['overload']}" for op in prog["ops"]]


def tensor(prog, tid):
    return next(t for t in prog["tensors"] if t["id"] == tid)


def by_name(prog, name, key="inputs"):
    return next(e for e in prog[key] if e["name"] == name)
