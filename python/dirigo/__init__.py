"""dirigo: does an optimized PyTorch+CUDA program compute the same thing as its reference, for every input?"""
from __future__ import annotations

from .common import __version__  # noqa: F401

try:  # the compiled core; absent only in a source tree that was never built
    from . import _core  # noqa: F401
except ImportError as _e:  # pragma: no cover
    _core = None
    _core_import_error = _e

from .api import Verdict, check, check_bundle  # noqa: E402,F401
