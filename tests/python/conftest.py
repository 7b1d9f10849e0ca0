"""Shared pytest set-up: GPU-only tests (@pytest.mark.gpu) are skipped where CUDA is not usable, and the
package is importable from the source tree."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

# The shared corpus sits beside the checkout (../shared/corpus); DIRIGO_CORPUS points elsewhere.
CORPUS = os.environ.get("DIRIGO_CORPUS") or os.path.normpath(os.path.join(ROOT, "..", "shared", "corpus"))


def _cuda_available() -> bool:
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


@pytest.fixture(scope="session", autouse=True)
def warm_children():
    """Every tracer, replay and state child of the session is a fork of one warm worker (dirigo.worker)
    instead of a new interpreter that imports torch again; tests of the cold path pass warm=False.
    DIRIGO_WARM=0 runs the suite cold."""
    from dirigo import worker
    with worker.warm(True):
        yield
    worker.shutdown()


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: compiles a C++ extension (minutes when not cached); "
                                       "runs when DIRIGO_SLOW_TESTS=1 or its build is cached")


def pytest_collection_modifyitems(config, items):
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (torch.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
