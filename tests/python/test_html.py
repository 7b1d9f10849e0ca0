"""`dirigo check --html OUT`: the page renders in a headless Chromium, and its picture of the output's
locations is not blank (proven-equal locations green, the differing one red)."""
import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DIRIGO = pathlib.Path(os.environ.get("DIRIGO_BIN", ROOT / "build" / "dirigo"))
RUNNING = ROOT / "examples" / "running_example"

pytestmark = pytest.mark.skipif(not DIRIGO.exists(), reason="build/dirigo not built (scripts/build.sh)")

GREEN, RED, GREY = (0x2E, 0x9E, 0x44), (0xD7, 0x26, 0x3D), (0xD9, 0xD9, 0xD9)


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        if shutil.which(name):
            return shutil.which(name)
    if os.environ.get("CI"):  # CI installs it (scripts/install-deps.sh): missing there is a failure
        pytest.fail("no chromium on PATH: scripts/install-deps.sh installs it")
    pytest.skip("no chromium on PATH (scripts/install-deps.sh installs it)")


def screenshot(html, png):
    subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=1100,1400", f"--screenshot={png}", f"file://{html}"],
                   capture_output=True, timeout=180, check=True)
    from PIL import Image
    img = Image.open(png).convert("RGB")
    counts = {}
    w, h = img.size
    px = img.load()
    for y in range(h):
        for x in range(w):
            c = px[x, y]
            counts[c] = counts.get(c, 0) + 1
    return counts


def near(counts, color, tol=4):  # the legend's swatches are paler: only the picture counts
    return sum(n for c, n in counts.items() if all(abs(a - b) <= tol for a, b in zip(c, color)))


def test_verified_bundle_shows_every_location_green(tmp_path):
    html = tmp_path / "fixed.html"
    p = subprocess.run([str(DIRIGO), "check", str(RUNNING / "bundle-gpu-fixed"), "--full", "--html", str(html)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0 and p.stdout.startswith("VERIFIED"), p.stdout + p.stderr
    page = html.read_text()
    assert "<canvas" in page and "Time by stage" in page and "search" in page
    counts = screenshot(html, tmp_path / "fixed.png")
    # 256 locations at several pixels each: far more green than the legend's swatch
    assert near(counts, GREEN) > 5000, sorted(counts.items(), key=lambda x: -x[1])[:5]
    assert near(counts, RED) == 0


def test_bug_marks_the_differing_location_red_and_the_rest_not_reached(tmp_path):
    html = tmp_path / "buggy.html"
    p = subprocess.run([str(DIRIGO), "check", str(RUNNING / "bundle-gpu-buggy"), "--html", str(html)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 1, p.stdout + p.stderr
    page = html.read_text()
    assert "<mark>64</mark>" in page and "<mark>32</mark>" in page  # the differing counts, highlighted
    counts = screenshot(html, tmp_path / "buggy.png")
    assert near(counts, RED) > 60  # the one differing location's cell, inside its outline
    assert near(counts, GREY) > 5000
