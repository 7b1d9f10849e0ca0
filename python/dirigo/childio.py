"""The answer channel of dirigo's child processes (``python -m dirigo.replay`` / ``dirigo.state``).

Their stdout carries only the JSON answer the CLI parses. The programs they run write to it too:
``print`` in user code, and extension builds, whose ninja writes "ninja: no work to do." straight to
file descriptor 1 (an H200 run of ``dirigo check`` turned a reproduced replay into "malformed replay
answer" that way). While the answer channel is open, file descriptor 1 is stderr.
"""
from __future__ import annotations

import contextlib
import os
import sys


@contextlib.contextmanager
def answer_channel():
    """Yields a text stream on the process's original stdout; meanwhile fd 1 (and sys.stdout) go to stderr."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    out = os.fdopen(os.dup(saved), "w")
    try:
        yield out
    finally:
        sys.stdout.flush()
        out.flush()
        out.close()
        os.dup2(saved, 1)
        os.close(saved)
