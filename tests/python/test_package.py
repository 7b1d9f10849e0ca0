import dirigo


def test_core_extension_loads():
    # The compiled core must be importable from the source tree after scripts/build.sh.
    assert dirigo._core is not None, getattr(dirigo, "_core_import_error", None)
    assert dirigo._core.__version__ == dirigo.__version__


def test_exit_codes_come_from_the_core():
    # the CLI's exit statuses (docs/cli.md), one table in C++ (check::exit_code) exported to Python
    assert dirigo._core.EXIT_CODES == {"BUG": 1, "SUSPECT": 2, "CHECKED": 0, "VERIFIED": 0, "TIMEOUT": 3,
                                       "UNSUPPORTED": 4}
    assert dirigo.api.EXIT_CODES == dirigo._core.EXIT_CODES
