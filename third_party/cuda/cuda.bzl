"""Helpers for CUDA targets: nvcc as a genrule, and the compatibility switch."""

# Skips a target unless the build runs with --config=cuda.
CUDA_ONLY = select({
    "//third_party/cuda:enabled": [],
    "//conditions:default": ["//third_party/cuda:cuda_disabled_marker"],
})

NVCC = "/usr/local/cuda/bin/nvcc"

def cuda_object(name, src, hdrs = [], arch = "sm_90"):
    """Compiles one .cu file to a position-independent object with nvcc.

    The object is meant for the `srcs` of a cc_library. `hdrs` lists the project headers
    the .cu includes, so Bazel re-runs nvcc when they change.
    """
    native.genrule(
        name = name,
        srcs = [src] + hdrs,
        outs = [name + ".o"],
        cmd = ("{nvcc} -c -std=c++17 -O2 -Xcompiler -fPIC -arch={arch} -I. -I$(GENDIR) " +
               "$(location {src}) -o $@").format(nvcc = NVCC, arch = arch, src = src),
        target_compatible_with = CUDA_ONLY,
    )
