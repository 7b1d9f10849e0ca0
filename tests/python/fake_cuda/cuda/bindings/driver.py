"""A stand-in for cuda.bindings.driver (tests only, no GPU): device memory is host memory, a launch
copies nothing and logs (kernel, grid, block, shared) to $FAKE_CUDA_LOG; a zero dimension is an
error, as on a GPU."""
import ctypes
import enum
import json
import os


class CUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1


_mem = {}


def _ok(*v):
    return (CUresult.CUDA_SUCCESS, *v)


def cuGetErrorName(e):
    return (CUresult.CUDA_SUCCESS, b"CUDA_ERROR_INVALID_VALUE")


def cuInit(flags):
    return _ok(None)


def cuDeviceGet(i):
    return _ok(0)


def cuDevicePrimaryCtxRetain(d):
    return _ok(1)


def cuCtxSetCurrent(c):
    return _ok(None)


def cuStreamCreate(flags):
    return _ok(7)


def cuModuleLoadData(p):
    return _ok(ctypes.string_at(p).decode())


def cuModuleGetFunction(module, name):
    return _ok((module, name))


def cuModuleUnload(m):
    return _ok(None)


def cuMemAlloc(n):
    buf = ctypes.create_string_buffer(n)
    _mem[ctypes.addressof(buf)] = buf
    return _ok(ctypes.addressof(buf))


def cuMemFree(p):
    _mem.pop(int(p))
    return _ok(None)


def cuMemcpyHtoD(d, h, n):
    ctypes.memmove(int(d), h, n)
    return _ok(None)


def cuMemcpyDtoH(h, d, n):
    ctypes.memmove(h, int(d), n)
    return _ok(None)


def cuStreamSynchronize(s):
    return _ok(None)


def cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, stream, argv, extra):
    if os.environ.get("FAKE_CUDA_LOG"):
        with open(os.environ["FAKE_CUDA_LOG"], "a") as fh:
            fh.write(json.dumps([f[1].decode(), [gx, gy, gz], [bx, by, bz], shared]) + "\n")
    if 0 in (gx, gy, gz, bx, by, bz):
        return (CUresult.CUDA_ERROR_INVALID_VALUE,)
    return _ok(None)
