"""The `dirigo` console entry point: runs the C++ binary shipped inside this package.

The binary finds this package relative to itself (src/cli/python_child.h); DIRIGO_PYTHON tells it to run
its Python children (tracer, replay, state stage) under the interpreter that launched us, so a venv's
torch is the one used.
"""
from __future__ import annotations

import os
import sys


def binary() -> str | None:
    """The `dirigo` executable: inside the installed package, else the build/ of the source tree."""
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in (os.path.join(here, "bin", "dirigo"),
                 os.path.join(os.path.dirname(os.path.dirname(here)), "build", "dirigo")):
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    exe = binary()
    if exe is None:
        print("dirigo: the compiled `dirigo` binary is missing from this installation "
              "(reinstall with `pip install .`, or run scripts/build.sh in a source tree)", file=sys.stderr)
        return 70
    os.environ.setdefault("DIRIGO_PYTHON", sys.executable)
    sys.stdout.flush()
    os.execv(exe, [exe] + list(argv))
    return 70  # pragma: no cover - execv does not return


if __name__ == "__main__":
    sys.exit(main())
