#!/usr/bin/env python3
"""Kernel launches per decode step of --target=cuda decoder artifacts, without a GPU.

Loads each artifact with the runtime (build/runtime/libkiln_runtime.so) over the mock CUDA driver
and the mock cuBLASLt (build/test/cuda/), starts a generator on a 5-token prompt, decodes --warmup
steps, then counts over --steps steps what the mock's kiln_mock_cuda_stats() saw: kernels launched
from the host, kernels replayed from step graphs, graph launches and device allocations, per step.
Products that cuBLASLt takes are library calls, not kernel launches, and are not counted. With
--trace FILE the mock writes one more step's kernels to FILE (name, grid, block, parameters), and
the kernels are printed with the ONNX nodes kiln-inspect gives for them.

    python3 bench/launch_count.py ART.kiln... [--eager] [--trace FILE] [--build build]

--eager sets KILN_CUDA_GRAPHS=0 (every kernel launched from the host: the count of kernels).
The figures in docs/cuda.md were taken this way.
"""

import argparse
import ctypes
import os
import re
import subprocess
import sys

# kiln_mock_cuda_stats_t (test/cuda/mock_cuda_driver.h), field for field.
_FIELDS = ([(n, ctypes.c_int64) for n in ("launches", "bad_launches", "live_allocations", "allocations",
                                           "bytes_to_device", "bytes_to_host", "copies_to_host", "bytes_on_device",
                                           "bytes_set", "events")]
           + [(n, ctypes.c_int) for n in ("module_is_cubin", "contexts", "sticky", "_pad")]
           + [(n, ctypes.c_int64) for n in ("resets", "bad_copies", "bad_frees", "captured_launches", "captures",
                                           "graphs_instantiated", "graph_launches", "replayed_launches",
                                           "live_graphs", "refused_in_capture", "kernel_nodes_set")])


class Stats(ctypes.Structure):
    _fields_ = _FIELDS


def kernel_nodes(build, artifact):
    """kernel name -> the ONNX nodes kiln-inspect lists for it."""
    out = subprocess.run([os.path.join(build, "bin", "kiln-inspect"), artifact], capture_output=True, text=True).stdout
    nodes = {}
    for line in out.splitlines():
        m = re.match(r"\s+\d+ (\S+) <- (.*)", line)
        if m:
            nodes[m.group(1)] = m.group(2)
    return nodes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("artifacts", nargs="+")
    ap.add_argument("--build", default="build")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--eager", action="store_true", help="KILN_CUDA_GRAPHS=0")
    ap.add_argument("--trace", help="write one more step's kernels here and print them")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    mock = os.path.join(build, "test", "cuda", "libkiln_mock_cuda.so")
    os.environ["KILN_CUDA_DRIVER"] = mock
    os.environ.setdefault("KILN_CUBLASLT", os.path.join(build, "test", "cuda", "libkiln_mock_cublaslt.so"))
    if args.eager:
        os.environ["KILN_CUDA_GRAPHS"] = "0"
    if args.trace:
        os.environ["KILN_MOCK_CUDA_CC"] = "100"  # the PTX is loaded, so the mock knows the parameters
    driver = ctypes.CDLL(mock, mode=ctypes.RTLD_GLOBAL)  # the same library the runtime opens
    driver.kiln_mock_cuda_stats.restype = ctypes.POINTER(Stats)
    rt = ctypes.CDLL(os.path.join(build, "runtime", "libkiln_runtime.so"))

    def stats():
        copy = Stats()
        ctypes.pointer(copy)[0] = driver.kiln_mock_cuda_stats()[0]
        return copy

    ptr = ctypes.c_void_p
    for art in args.artifacts:
        model, gen = ptr(), ptr()
        if rt.kiln_model_load(art.encode(), None, ctypes.byref(model)):
            sys.exit("%s: cannot be loaded" % art)
        options = ctypes.create_string_buffer(512)  # larger than kiln_generator_options
        rt.kiln_generator_options_init(options)
        if rt.kiln_generator_create(model, options, ctypes.byref(gen)):
            sys.exit("%s: not a decoder" % art)
        prompt = (ctypes.c_int32 * 5)(1, 5, 9, 22, 7)
        prompts = (ctypes.POINTER(ctypes.c_int32) * 1)(prompt)
        lengths = (ctypes.c_size_t * 1)(5)
        sampling = ctypes.create_string_buffer(64)
        rt.kiln_sampling_params_init(sampling)
        if rt.kiln_generator_start(gen, prompts, lengths, 1, sampling):
            sys.exit("%s: the prompt failed" % art)
        token = (ctypes.c_int32 * 1)()
        for _ in range(args.warmup):
            rt.kiln_generator_next(gen, token)
        before = stats()
        for _ in range(args.steps):
            rt.kiln_generator_next(gen, token)
        after = stats()
        per = lambda f: (getattr(after, f) - getattr(before, f)) / args.steps
        print("%s: kernels launched %.1f, replayed from graphs %.1f, graph launches %.1f, allocations %.1f, "
              "copies to host %.1f per step" % (os.path.basename(art), per("launches"), per("replayed_launches"),
                                                per("graph_launches"), per("allocations"), per("copies_to_host")))
        if args.trace:
            driver.kiln_mock_cuda_set_trace(args.trace.encode())
            rt.kiln_generator_next(gen, token)
            driver.kiln_mock_cuda_set_trace(None)
            nodes = kernel_nodes(build, art)
            with open(args.trace) as f:
                for line in f:
                    words = line.split()
                    if words:
                        print("  %s %s  %s" % (words[0], " ".join(words[1:5]), nodes.get(words[0], "")))
        rt.kiln_generator_destroy(gen)
        rt.kiln_model_destroy(model)


if __name__ == "__main__":
    main()
