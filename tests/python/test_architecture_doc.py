"""docs/architecture.md's module table is the build's module graph: the same modules in the order of
src/CMakeLists.txt, each with the dirigo_* dependencies its CMakeLists.txt names."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def build_modules(src: str) -> list[tuple[str, list[str]]]:
    """(module, its dirigo_* dependencies) in the order src/CMakeLists.txt adds them."""
    order = re.findall(r"^add_subdirectory\((\w+)\)", open(os.path.join(src, "CMakeLists.txt")).read(), re.M)
    out = []
    for m in order:
        text = open(os.path.join(src, m, "CMakeLists.txt")).read()
        call = re.search(r"dirigo_module\(\s*\w+\s+DEPS([^)]*)\)", text) or \
            re.search(r"target_link_libraries\(\s*\w+\s+PRIVATE([^)]*)\)", text)
        assert call, f"src/{m}/CMakeLists.txt: no dirigo_module(...) or target_link_libraries(...)"
        deps = [d[len("dirigo_"):] for d in call.group(1).split() if d.startswith("dirigo_")]
        out.append((m, [d for d in deps if d not in ("gmp", "z3")]))  # imported third-party targets
    return out


def doc_modules(doc: str) -> list[tuple[str, list[str]]]:
    """(module, depends-on) rows of the table whose header is `| module | depends on | owns |`."""
    lines = open(doc).read().splitlines()
    start = next(i for i, l in enumerate(lines) if re.match(r"\|\s*module\s*\|\s*depends on\s*\|", l))
    rows = []
    for l in lines[start + 2:]:
        if not l.startswith("|"):
            break
        cells = [c.strip() for c in l.strip("|").split("|")]
        deps = [] if cells[1] in ("—", "-", "") else [d.strip() for d in cells[1].split(",")]
        rows.append((cells[0].strip("`"), deps))
    return rows


def test_module_table_matches_cmake():
    build = build_modules(os.path.join(ROOT, "src"))
    doc = doc_modules(os.path.join(ROOT, "docs", "architecture.md"))
    assert [m for m, _ in doc] == [m for m, _ in build], "module list or order differs from src/CMakeLists.txt"
    for (m, want), (_, got) in zip(build, doc):
        assert sorted(got) == sorted(want), f"{m}: docs say {got}, src/{m}/CMakeLists.txt says {want}"


def test_the_check_can_fail(tmp_path):
    # a doc row with a missing dependency is caught
    src = tmp_path / "src"
    (src / "a").mkdir(parents=True)
    (src / "b").mkdir()
    (src / "CMakeLists.txt").write_text("add_subdirectory(a)\nadd_subdirectory(b)\n")
    (src / "a" / "CMakeLists.txt").write_text("dirigo_module(a DEPS fmt::fmt)\n")
    (src / "b" / "CMakeLists.txt").write_text("dirigo_module(b DEPS dirigo_a dirigo_z3)\n")
    assert build_modules(str(src)) == [("a", []), ("b", ["a"])]
    doc = tmp_path / "arch.md"
    doc.write_text("| module | depends on | owns |\n|---|---|---|\n| `a` | — | x |\n| `b` | — | y |\n\ntext\n")
    assert doc_modules(str(doc)) == [("a", []), ("b", [])]
