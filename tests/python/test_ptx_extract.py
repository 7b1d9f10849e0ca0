"""cuobjdump prints ELF and PTX images behind banners; only PTX text may reach the bundle.
(A GPU trace once stored an ELF banner inside a module's PTX, which the parser then rejected.)"""
import types

import dirigo.launch as launch

DUMP = """
Fatbin elf code:
================
arch = sm_90
code version = [1,8]

Fatbin ptx code:
================
arch = sm_90
code version = [9,0]
.version 9.0
.target sm_90
.address_size 64
.visible .entry k()
{
ret;
}

Fatbin elf code:
================
arch = sm_90
identifier = /root/.cache/torch_extensions/x/cuda.cu
"""


def test_only_ptx_sections_are_kept(monkeypatch):
    monkeypatch.setattr(launch.subprocess, "run",
                        lambda *a, **k: types.SimpleNamespace(returncode=0, stdout=DUMP, stderr=""))
    secs = launch.extract_ptx("/lib.so", cuobjdump="/bin/true")
    assert len(secs) == 1
    assert secs[0]["arch"] == "sm_90"
    assert secs[0]["ptx"].startswith(".version 9.0")
    assert "Fatbin" not in secs[0]["ptx"] and "identifier" not in secs[0]["ptx"]
