"""Seconds to replay a witness of many trimmed leaves on the CPU (carry-back through a convolution
prefix): `python3 bench/replay_carry_back.py [LEAVES] [STEPS]`. Prints one JSON line."""
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import importlib  # noqa: E402

REF = """import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(8, 16, 3)
    def forward(self, x):
        return torch.relu(self.conv(x)).sum(dim=1)
def get_inputs():
    return [torch.randn(4, 8, 34, 34)]
def get_init_inputs():
    return []
"""
NEW = REF.replace("class Model(", "class ModelNew(").replace(".sum(dim=1)", ".mean(dim=1)")


def main():
    leaves_n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    module = os.environ.get("REPLAY_MODULE", "dirigo.replay")
    replay = importlib.import_module(module)
    d = tempfile.mkdtemp()
    for name, text in (("ref.py", REF), ("new.py", NEW)):
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    shape = [4, 16, 32, 32]
    leaves = []
    for k in range(leaves_n):
        idx, r = [], k * 7919 % (4 * 16 * 32 * 32)
        for n in reversed(shape):
            idx.append(r % n)
            r //= n
        leaves.append({"input": "prefix[0].t1", "kind": "trimmed", "op": 0, "tensor": None, "output": 0,
                       "aten": "aten::convolution", "index": idx[::-1], "shape": shape, "value": 0.5})
    w = {"format": "dirigo-witness", "version": 1, "ref": os.path.join(d, "ref.py"), "new": os.path.join(d, "new.py"),
         "init_seed": 42, "input_seed": None, "location": [0, 0, 0], "flat": 0, "leaves": leaves,
         "output": {"index": 0, "reference": "out0", "candidate": "out0", "shape": [4, 32, 32]},
         "tolerance": {"atol": 0.01, "rtol": 0.01, "bound": 10.0}}
    # the convolution's result tensor id as the tracer records it
    progs = replay._Programs(w["ref"], w["new"], "cpu", 42, None)
    rec = replay._record_reference(progs)
    conv = next(op for op in rec.ops if op["name"] == "aten::convolution")
    for l in leaves:
        l["tensor"], l["op"] = conv["outputs"][0], rec.ops.index(conv)
    t0 = time.monotonic()
    res = replay.replay(w, device="cpu", steps=steps)
    print(json.dumps({"module": module, "leaves": leaves_n, "steps": steps, "status": res.get("status"),
                      "message": res.get("message"), "seconds": round(time.monotonic() - t0, 2),
                      "carry_seconds": (res.get("carried_back") or {}).get("seconds")}))


if __name__ == "__main__":
    main()
