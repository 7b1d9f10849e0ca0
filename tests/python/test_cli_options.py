"""The option specs (src/cli/options/*.json) as the built binary declares them: every option a spec names is
in its command's --help, a value or a count a spec does not allow is refused by name, and a spec that does not
parse stops the build step that embeds it. Their binding is tested in tests/cli/test_option_spec.cpp."""
import functools
import json
import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DIRIGO = pathlib.Path(os.environ.get("DIRIGO_BIN", ROOT / "build" / "dirigo"))
OPTIONS = ROOT / "src" / "cli" / "options"

pytestmark = pytest.mark.skipif(not DIRIGO.exists(), reason="build/dirigo not built (scripts/build.sh)")

COMMANDS = sorted(p.stem for p in OPTIONS.glob("*.json") if p.stem != "shared")


def spec(command):
    return json.loads((OPTIONS / f"{command}.json").read_text())


def declared(command):
    """(words after `dirigo`, option) for every option of the command's spec, its groups filled in."""
    s = spec(command)
    groups = {**spec("shared")["groups"], **s.get("groups", {})}
    parts = [([command], s.get("options", []))]
    parts += [([command, sub["name"]], sub.get("options", [])) for sub in s.get("subcommands", [])]
    return [(words, option) for words, entries in parts for entry in entries
            for option in (groups[entry["group"]] if "group" in entry else [entry])]


@functools.lru_cache(maxsize=None)
def run(*args):
    return subprocess.run([str(DIRIGO), *args], capture_output=True, text=True, timeout=60)


def test_every_command_with_options_has_a_spec():
    listed = run("--help").stdout
    assert all(f"  {command} " in listed for command in COMMANDS), listed


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_of_a_spec_is_in_its_help(command):
    for words, option in declared(command):
        help_text = run(*words, "--help").stdout
        for name in option["names"].split(","):
            assert name.lstrip("!") in help_text, f"{' '.join(words)} --help lacks {name}"


CHECKED = [(words, option) for command in COMMANDS for words, option in declared(command) if "check" in option]
REQUIRED = [(words, option) for command in COMMANDS for words, option in declared(command) if option.get("required")]


@pytest.mark.parametrize("words, option", CHECKED, ids=[o["names"] for _, o in CHECKED])
def test_a_value_outside_the_check_is_refused_naming_the_option(words, option):
    name = option["names"].split(",")[0]
    p = run(*words, name, "nonesuch")
    assert p.returncode == 64
    assert f"{name}: nonesuch not in {{{','.join(option['check'])}}}" in p.stderr, p.stderr


@pytest.mark.parametrize("words, option", REQUIRED, ids=[" ".join(w) for w, _ in REQUIRED])
def test_a_required_option_left_out_is_refused_naming_it(words, option):
    p = run(*words)
    assert p.returncode == 64
    assert f"{option['names'].split(',')[0]} is required" in p.stderr, p.stderr


def test_check_takes_one_or_two_inputs():
    p = run("check", "a", "b", "c")
    assert p.returncode == 64 and "inputs: At Most 2 required but received 3" in p.stderr, p.stderr


@pytest.mark.skipif(shutil.which("cmake") is None, reason="no cmake")
def test_a_spec_that_does_not_parse_stops_the_embedding(tmp_path):
    (tmp_path / "good.json").write_text((OPTIONS / "execute.json").read_text())
    (tmp_path / "bad.json").write_text('{"options": [{"names": "--x"}')
    p = subprocess.run(["cmake", f"-DDIR={tmp_path}", f"-DOUT={tmp_path / 'specs.inc'}", "-P",
                        str(ROOT / "src" / "cli" / "embed_specs.cmake")], capture_output=True, text=True, timeout=60)
    assert p.returncode != 0
    assert f"option spec {tmp_path / 'bad.json'} is not JSON" in " ".join(p.stderr.split()), p.stderr  # CMake wraps it
