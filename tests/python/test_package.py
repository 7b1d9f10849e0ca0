import dirigo


def test_core_extension_loads():
    # The compiled core must be importable from the source tree after scripts/build.sh.
    assert dirigo._core is not None, getattr(dirigo, "_core_import_error", None)
    assert dirigo._core.__version__ == dirigo.__version__
