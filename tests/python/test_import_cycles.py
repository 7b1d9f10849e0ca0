"""The dirigo package's modules import each other without a cycle: every import counts, also the ones inside
functions (a function-local import only postpones a cycle to the first call, it does not remove it)."""
import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, "python", "dirigo")
# compiled modules of the package (nanobind, python/src): `from . import _core` imports them, not the package
EXTENSIONS = {"dirigo._core"}


def modules(package_dir: str, package: str) -> dict[str, str]:
    """dotted module name -> file, for every .py file below package_dir (a package's __init__.py is the
    package itself)."""
    out = {}
    for dirpath, _, files in os.walk(package_dir):
        rel = os.path.relpath(dirpath, package_dir)
        prefix = package if rel == "." else package + "." + rel.replace(os.sep, ".")
        for f in files:
            if f.endswith(".py"):
                out[prefix if f == "__init__.py" else f"{prefix}.{f[:-3]}"] = os.path.join(dirpath, f)
    return out


def imports(name: str, path: str, known: set[str], extensions: frozenset = frozenset()) -> set[str]:
    """The modules of `known` that module `name` imports anywhere in its body (imports of `extensions`,
    compiled modules, are no edges)."""
    is_package = os.path.basename(path) == "__init__.py"
    parts = name.split(".") if is_package else name.split(".")[:-1]
    found = set()
    with open(path) as fh:
        tree = ast.parse(fh.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in known:
                    found.add(a.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = parts[:len(parts) - node.level + 1] if node.level > 1 else parts
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for a in node.names:
                sub = f"{base}.{a.name}"
                if sub in extensions:
                    continue
                if sub in known:
                    found.add(sub)  # `from . import trace`: the submodule
                elif base in known:
                    found.add(base)  # `from .common import x`, `from . import __version__`: the module itself
    found.discard(name)
    return found


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (its modules, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                return path[path.index(n):] + [n]
            if n not in state:
                c = visit(n)
                if c:
                    return c
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            c = visit(m)
            if c:
                return c
    return None


def import_graph(package_dir: str, package: str, extensions: frozenset = frozenset()) -> dict[str, set[str]]:
    mods = modules(package_dir, package)
    return {m: imports(m, p, set(mods), extensions) for m, p in mods.items()}


def test_dirigo_has_no_import_cycle():
    graph = import_graph(PACKAGE, "dirigo", frozenset(EXTENSIONS))
    assert "dirigo.trace" in graph and "dirigo.common" in graph
    assert "dirigo.load" in graph["dirigo.trace"]  # the parser sees imports (a graph of no edges has no cycle)
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_common_imports_no_dirigo_module():
    assert import_graph(PACKAGE, "dirigo", frozenset(EXTENSIONS))["dirigo.common"] == set()


def test_a_function_local_cycle_is_found(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .a import f\n")
    (pkg / "a.py").write_text("from . import b\n\ndef f():\n    return b.g()\n")
    (pkg / "b.py").write_text("def g():\n    from .c import h\n    return h()\n")
    (pkg / "c.py").write_text("def h():\n    from . import a\n    return a\n")
    cycle = find_cycle(import_graph(str(pkg), "pkg"))
    assert cycle is not None and set(cycle) == {"pkg.a", "pkg.b", "pkg.c"}
    (pkg / "c.py").write_text("def h():\n    return 1\n")
    assert find_cycle(import_graph(str(pkg), "pkg")) is None


def test_standalone_modules_import_no_dirigo_module():
    # killmatrix_gpu.py runs by path on a GPU machine and loads killmatrix.py by path: no package there
    graph = import_graph(PACKAGE, "dirigo", frozenset(EXTENSIONS))
    assert graph["dirigo.killmatrix_gpu"] == set() and graph["dirigo.killmatrix"] == set()
