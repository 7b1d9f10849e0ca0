"""Cold and warm `dirigo.check()` calls on a small pure-PyTorch pair (docs/perf.md "Warm calls").

    python bench/warm_check.py [--pair examples/gelu_linear/ref.py examples/gelu_linear/bad.py] [--calls 5]

Cold: the first call of a fresh process (it starts the warm worker, which imports torch). Warm: the
calls after it, each end to end (trace both programs, check, replay the witness, state stage). Also
the same pair with warm=False (a new interpreter per child, as before the warm worker). Prints one
JSON line.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))


def main() -> int:
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    ap = argparse.ArgumentParser()
    ap.add_argument("--pair", nargs=2, default=[os.path.join(here, "examples/gelu_linear/ref.py"),
                                                os.path.join(here, "examples/gelu_linear/bad.py")])
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--no-cold-plain", action="store_true", help="skip the warm=False calls")
    a = ap.parse_args()
    t0 = time.monotonic()
    import dirigo  # noqa: F401  (the caller's own import of dirigo and torch is not part of a call)
    import torch  # noqa: F401
    import_s = time.monotonic() - t0
    ref, new = a.pair
    times, outcomes = [], []
    for _ in range(a.calls + 1):
        t = time.monotonic()
        v = dirigo.check(ref, new, device="cpu")
        times.append(time.monotonic() - t)
        outcomes.append(v.outcome)
    plain = []
    if not a.no_cold_plain:
        for _ in range(2):
            t = time.monotonic()
            v = dirigo.check(ref, new, device="cpu", warm=False)
            plain.append(time.monotonic() - t)
            outcomes.append(v.outcome)
    print(json.dumps({"pair": [os.path.relpath(p, here) for p in a.pair], "import_s": round(import_s, 3),
                      "cold_s": round(times[0], 3), "warm_s": [round(x, 3) for x in times[1:]],
                      "warm_median_s": round(statistics.median(times[1:]), 3),
                      "plain_s": [round(x, 3) for x in plain], "outcomes": sorted(set(outcomes)),
                      "cpus": os.cpu_count(), "load_avg": [round(x, 2) for x in os.getloadavg()]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
