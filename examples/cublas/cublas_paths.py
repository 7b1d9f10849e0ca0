"""Where cuBLAS's headers and libraries are: the CUDA toolkit, or the nvidia-cublas wheel PyTorch installs.

Returns load_inline keyword arguments, so our examples build on machines where cublas_v2.h is only in
site-packages/nvidia/*/include and libcublas.so.13 has no unversioned link for `-lcublas`.
"""
import glob
import os
import site
import sys


def _roots():
    cuda = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
    dirs = [cuda, os.path.join(cuda, "targets", "x86_64-linux"), os.path.join(cuda, "targets", "sbsa-linux")]
    for sp in site.getsitepackages() + [site.getusersitepackages()] + [p for p in sys.path if "site-packages" in p]:
        dirs += sorted(glob.glob(os.path.join(sp, "nvidia", "*")))
    return [d for d in dict.fromkeys(dirs) if os.path.isdir(d)]


def _header_only_dir(inc: str) -> str:
    """A folder with links to just the cuBLAS headers of `inc`, so adding it to the include path cannot
    shadow the toolkit's other headers with the wheel's copies."""
    import tempfile
    d = os.path.join(tempfile.gettempdir(), f"dirigo-cublas-headers-{os.getuid()}")
    os.makedirs(d, exist_ok=True)
    for h in ("cublas_v2.h", "cublas_api.h", "cublas.h", "cublasLt.h", "cublasXt.h"):
        src, dst = os.path.join(inc, h), os.path.join(d, h)
        if os.path.exists(src) and not os.path.exists(dst):
            os.symlink(src, dst)
    return d


def build_kwargs() -> dict:
    """extra_include_paths / extra_ldflags for an extension calling cuBLAS and cuBLASLt."""
    incs, flags = [], []
    for root in _roots():
        inc = os.path.join(root, "include")
        if os.path.exists(os.path.join(inc, "cublas_v2.h")):
            if os.sep + "nvidia" + os.sep not in root + os.sep:
                incs = [inc]  # the toolkit's own: nothing else to shadow
            else:
                incs = [_header_only_dir(inc)]  # a wheel's include dir also holds cuda_runtime.h & co.
            break
    for lib in ("cublas", "cublasLt"):
        found = None
        for root in _roots():
            for sub in ("lib64", "lib"):
                d = os.path.join(root, sub)
                if os.path.exists(os.path.join(d, f"lib{lib}.so")):
                    found = [f"-L{d}", f"-l{lib}", f"-Wl,-rpath,{d}"]
                    break
                versioned = sorted(glob.glob(os.path.join(d, f"lib{lib}.so.*[0-9]")), key=len)
                if versioned:
                    found = [versioned[0], f"-Wl,-rpath,{d}"]
                    break
            if found:
                break
        flags += found or []  # else: resolved at load time from the copy PyTorch already loaded
    return {"extra_include_paths": incs, "extra_ldflags": flags}


if __name__ == "__main__":
    print(build_kwargs())
