"""The launch shim's record writer: every record is one valid JSON line whatever the kernel's name (long
templated names, quotes, backslashes, control bytes) and however many parameters it has. Runs the shim
against a stand-in driver on the CPU, in a child process without torch (nothing else defines the runtime)."""
import json
import os
import random
import shutil
import subprocess
import sys
import textwrap

import pytest

from dirigo import launch

CC = shutil.which("cc") or shutil.which("gcc")

# The stand-in driver: the kernel's name and parameter sizes are whatever the test sets.
FAKE_DRIVER = r"""
#include <stddef.h>
static const char *the_name;
static size_t the_sizes[4096];
static size_t the_count;
void fake_set(const char *name, const size_t *sizes, size_t count) {
  the_name = name; the_count = count;
  for (size_t i = 0; i < count; ++i) the_sizes[i] = sizes[i];
}
int cudaGetFuncBySymbol(void **out, const void *sym) { *out = (void *)sym; return 0; }
int cuFuncGetName(const char **name, void *f) { *name = the_name; return 0; }
int cuFuncGetParamInfo(void *f, size_t i, size_t *off, size_t *size) {
  if (i >= the_count) return 1;
  size_t o = 0;
  for (size_t k = 0; k < i; ++k) o += the_sizes[k];
  *off = o; *size = the_sizes[i];
  return 0;
}
"""

CHILD = textwrap.dedent(r"""
    import ctypes, json, random, sys
    fake = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
    shim = ctypes.CDLL(sys.argv[2], mode=ctypes.RTLD_GLOBAL)
    class dim3(ctypes.Structure):
        _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]
    shim.cudaLaunchKernel.argtypes = [ctypes.c_void_p, dim3, dim3, ctypes.POINTER(ctypes.c_void_p),
                                      ctypes.c_size_t, ctypes.c_void_p]
    shim.dirigo_shim_drain.restype = ctypes.c_size_t
    shim.dirigo_shim_drain.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    shim.dirigo_shim_set_enabled(1)
    rng = random.Random(int(sys.argv[3]))
    cases = []
    for case in range(int(sys.argv[4])):
        kind = case % 4
        if kind == 0:    # a long templated, mangled name (what overran the fixed buffer)
            name = b"_ZN7cutlass6KernelINS_4gemm6kernel" + b"".join(
                b"I%dEELi%dE" % (rng.randrange(1000), rng.randrange(64)) for _ in range(rng.randrange(1, 2000))) + b"Ev"
        elif kind == 1:  # any bytes but NUL
            name = bytes(rng.randrange(1, 256) for _ in range(rng.randrange(0, 3000)))
        elif kind == 2:  # the characters JSON must escape
            name = bytes(rng.choice(b'"\\\n\t\x01\x1fab') for _ in range(rng.randrange(0, 600)))
        else:            # the length right around the old 512-byte head
            name = b"k" * rng.randrange(400, 560)
        sizes = [rng.choice([1, 2, 4, 8, 16, 24, 200]) for _ in range(rng.randrange(0, 40))]
        blob = (ctypes.c_ubyte * max(1, max(sizes, default=1)))(*[rng.randrange(256) for _ in range(max(1, max(sizes, default=1)))])
        args = (ctypes.c_void_p * max(1, len(sizes)))(*[ctypes.cast(blob, ctypes.c_void_p).value] * max(1, len(sizes)))
        c_name = ctypes.create_string_buffer(name)
        fake.fake_set(c_name, (ctypes.c_size_t * max(1, len(sizes)))(*sizes), len(sizes))
        g = dim3(rng.randrange(1 << 32), 1, 7)
        shim.cudaLaunchKernel(ctypes.c_void_p(0x1000 + case), g, dim3(2048, 1, 1), args, rng.randrange(1 << 40), None)
        cases.append({"name": name.hex(), "sizes": sizes, "blob": bytes(blob).hex(), "grid": g.x})
    need = shim.dirigo_shim_drain(None, 0)
    buf = ctypes.create_string_buffer(need + 16)
    n = shim.dirigo_shim_drain(buf, len(buf))
    sys.stdout.write(json.dumps({"cases": cases, "log": buf.raw[:n].decode("utf-8", "surrogateescape")}))
""")


@pytest.mark.skipif(CC is None, reason="needs a C compiler")
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_record_is_one_valid_json_line_with_the_exact_name_and_bytes(tmp_path, seed):
    shim = launch.build_shim(str(tmp_path))
    fake = tmp_path / "libfakedriver.so"
    subprocess.run([CC, "-shared", "-fPIC", "-o", str(fake), "-x", "c", "-"], input=FAKE_DRIVER, text=True,
                   check=True)
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    p = subprocess.run([sys.executable, "-c", CHILD, str(fake), shim, str(seed), "200"], capture_output=True,
                       text=True, env=env, timeout=120, errors="surrogateescape")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    lines = out["log"].encode("utf-8", "surrogateescape").split(b"\n")
    assert lines[-1] == b"" and len(lines) - 1 == len(out["cases"])
    for line, case in zip(lines, out["cases"]):
        rec = json.loads(line.decode("utf-8", "surrogateescape"))  # raises on an overrun or an unescaped byte
        assert rec["kernel"].encode("utf-8", "surrogateescape") == bytes.fromhex(case["name"])
        assert rec["grid"] == [case["grid"], 1, 7] and rec["block"] == [2048, 1, 1]
        blob = case["blob"]
        assert [p[1] for p in rec["params"]] == case["sizes"]
        assert all(p[2] == blob[:2 * p[1]] for p in rec["params"])
        offs = [p[0] for p in rec["params"]]
        assert offs == [sum(case["sizes"][:i]) for i in range(len(case["sizes"]))]


# The calls that order streams, recorded by the shim and passed through to the stand-in runtime.
SYNC_DRIVER = FAKE_DRIVER + r"""
static int calls;
int fake_calls(void) { return calls; }
int cudaEventRecord(void *e, void *s) { calls++; return 0; }
int cudaStreamWaitEvent(void *s, void *e, unsigned f) { calls++; return 0; }
int cudaStreamSynchronize(void *s) { calls++; return 0; }
int cudaEventSynchronize(void *e) { calls++; return 0; }
int cudaDeviceSynchronize(void) { calls++; return 0; }
int cudaStreamGetFlags(void *s, unsigned *flags) { *flags = 1; return 0; }
"""

SYNC_CHILD = textwrap.dedent(r"""
    import ctypes, json, sys
    shim = ctypes.CDLL(sys.argv[2], mode=ctypes.RTLD_GLOBAL)
    fake = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
    class dim3(ctypes.Structure):
        _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]
    shim.cudaLaunchKernel.argtypes = [ctypes.c_void_p, dim3, dim3, ctypes.POINTER(ctypes.c_void_p),
                                      ctypes.c_size_t, ctypes.c_void_p]
    shim.dirigo_shim_drain.restype = ctypes.c_size_t
    shim.dirigo_shim_drain.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    for f in ("cudaEventRecord", "cudaStreamWaitEvent", "cudaStreamSynchronize", "cudaEventSynchronize"):
        getattr(shim, f).argtypes = [ctypes.c_void_p] * (3 if f == "cudaStreamWaitEvent" else
                                                         2 if f == "cudaEventRecord" else 1)
    shim.cudaStreamSynchronize(ctypes.c_void_p(0x99))  # not recording yet: passed through, not logged
    shim.dirigo_shim_set_enabled(1)
    fake.fake_set(b"k", (ctypes.c_size_t * 1)(4), 1)
    x = ctypes.c_int(3)
    args = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(x), ctypes.c_void_p).value)
    shim.cudaEventRecord(ctypes.c_void_p(0xe1), None)
    shim.cudaStreamWaitEvent(ctypes.c_void_p(0x5100), ctypes.c_void_p(0xe1), None)
    shim.cudaLaunchKernel(ctypes.c_void_p(0x1000), dim3(1, 1, 1), dim3(32, 1, 1), args, 0, ctypes.c_void_p(0x5100))
    shim.cudaEventRecord(ctypes.c_void_p(0xe1), ctypes.c_void_p(0x5100))
    shim.cudaStreamWaitEvent(None, ctypes.c_void_p(0xe1), None)
    shim.cudaStreamSynchronize(ctypes.c_void_p(0x5100))
    shim.cudaEventSynchronize(ctypes.c_void_p(0xe1))
    shim.cudaDeviceSynchronize()
    need = shim.dirigo_shim_drain(None, 0)
    buf = ctypes.create_string_buffer(need + 16)
    n = shim.dirigo_shim_drain(buf, len(buf))
    print(json.dumps({"log": buf.raw[:n].decode(), "calls": fake.fake_calls()}))
""")


@pytest.mark.skipif(CC is None, reason="needs a C compiler")
def test_stream_ordering_calls_are_recorded_in_order_and_passed_through(tmp_path):
    shim = launch.build_shim(str(tmp_path))
    fake = tmp_path / "libfakesync.so"
    subprocess.run([CC, "-shared", "-fPIC", "-o", str(fake), "-x", "c", "-"], input=SYNC_DRIVER, text=True,
                   check=True)
    # preloaded, as the tracer runs it: the shim's dlsym(RTLD_NEXT) then finds the runtime loaded after it
    env = dict({k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}, LD_PRELOAD=shim)
    p = subprocess.run([sys.executable, "-c", SYNC_CHILD, str(fake), shim], capture_output=True, text=True, env=env,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["calls"] == 8  # every call reached the runtime, recorded or not
    recs = [json.loads(ln) for ln in out["log"].splitlines()]
    assert [r.get("sync", "launch") for r in recs] == [
        "event-record", "stream-wait-event", "launch", "event-record", "stream-wait-event", "stream-synchronize",
        "event-synchronize", "device-synchronize"]
    assert recs[0] == {"sync": "event-record", "stream": "0x0", "event": "0xe1"}
    assert recs[2]["stream"] == "0x5100" and recs[2]["stream_flags"] == 1  # non-blocking, from cudaStreamGetFlags
    assert recs[5] == {"sync": "stream-synchronize", "stream": "0x5100"}
    assert recs[7] == {"sync": "device-synchronize"}
