"""Tensors in GPU memory from Python (kiln.DeviceTensor, __cuda_array_interface__ arrays, run_into),
checked without a GPU: a --target=cuda artifact of one matrix product with its bias, residual and
ReLU (test/models/matmul_layouts/matmul_bias_residual_relu) runs through the mock CUDA driver and
the mock cuBLASLt, which compute the product in host memory. The mocks are loaded at the first
CUDA model load of a process, so the checks run in a child process with them set."""

import os
import subprocess
import sys
import textwrap

import pytest

from conftest import BIN, model_path

SCRIPT = textwrap.dedent(r'''
    import sys
    import numpy as np
    import kiln
    from onnx import TensorProto, numpy_helper

    art, cpu_art, data = sys.argv[1:4]

    def pb(name):
        t = TensorProto()
        with open(f"{data}/{name}.pb", "rb") as f:
            t.ParseFromString(f.read())
        return numpy_helper.to_array(t)

    x, w, bias, r = (pb(f"input_{i}") for i in range(4))
    want = pb("output_0")
    m = kiln.load(art)
    s = m.session()
    feeds = {"x": m.to_device(x), "w": m.to_device(w), "bias": m.to_device(bias), "r": m.to_device(r)}
    assert feeds["x"].shape == (2, 3, 5) and feeds["x"].dtype == "float32" and feeds["x"].data_ptr != 0

    # Device tensors in and out, several runs (the session's CUDA graph from the second on).
    y = m.device_zeros(want.shape)
    for _ in range(3):
        s.run_into(feeds, {"y": y})
        assert np.array_equal(y.numpy(), want), (y.numpy(), want)
    # run() takes device feeds and returns host arrays.
    assert np.array_equal(s.run(feeds)["y"], want)

    # Another library's GPU arrays, through __cuda_array_interface__ (here views of kiln's).
    class Foreign:
        def __init__(self, t):
            self.__cuda_array_interface__ = dict(t.__cuda_array_interface__)
    cai = y.__cuda_array_interface__
    assert cai["shape"] == (2, 3, 4) and cai["typestr"] == "<f4" and cai["version"] == 3 and cai["strides"] is None
    y2 = m.device_zeros(want.shape)
    s.run_into({k: Foreign(v) for k, v in feeds.items()}, {"y": Foreign(y2)})
    assert np.array_equal(y2.numpy(), want)

    # A numpy destination is written in place.
    host = np.full(want.shape, -1, np.float32)
    s.run_into(feeds, {"y": host})
    assert np.array_equal(host, want)

    # What does not fit is refused, naming the output.
    def refused(fn, text):
        try:
            fn()
        except kiln.InvalidArgumentError as e:
            assert text in str(e), str(e)
        else:
            raise AssertionError("not refused: " + text)
    refused(lambda: s.run_into(feeds, {"y": m.device_zeros((3, 2, 4))}),
            "output 'y' is [2, 3, 4]; the tensor given for it is [3, 2, 4]")
    refused(lambda: s.run_into(feeds, {}), "output 'y' is missing from outputs")
    refused(lambda: s.run_into(feeds, {"y": y, "z": y}), "output 'z' is not an output of this model")
    refused(lambda: s.run_into(feeds, {"y": np.zeros((2, 3, 4), np.float64)}), "output 'y': expected float32")
    bad = Foreign(y)
    bad.__cuda_array_interface__["typestr"] = "<f8"
    refused(lambda: s.run_into(feeds, {"y": bad}), "output 'y': expected float32")
    strided = Foreign(y)
    strided.__cuda_array_interface__["strides"] = (4, 24, 96)
    refused(lambda: s.run_into(feeds, {"y": strided}), "not C-contiguous")
    # A CPU model has no GPU memory.
    refused(lambda: kiln.load(cpu_art).to_device(x), "the model runs on the CPU")
    del feeds, y, y2, s
    print("device tensors OK")
''')


def test_device_tensors_through_the_mock_driver(tmp_path):
    mocks = os.path.normpath(os.path.join(BIN, "..", "test", "cuda"))
    driver, blas = os.path.join(mocks, "libkiln_mock_cuda.so"), os.path.join(mocks, "libkiln_mock_cublaslt.so")
    if not (os.path.exists(driver) and os.path.exists(blas)):
        pytest.fail(f"the mock CUDA driver and cuBLASLt are not built in {mocks}")
    model_dir = model_path("matmul_layouts", "matmul_bias_residual_relu")
    art, cpu_art = str(tmp_path / "cuda.kiln"), str(tmp_path / "cpu.kiln")
    compile_tool = os.path.join(BIN, "kiln-compile")
    subprocess.run([compile_tool, os.path.join(model_dir, "model.onnx"), "--target=cuda", "--quiet", "-o", art],
                   check=True)
    subprocess.run([compile_tool, os.path.join(model_dir, "model.onnx"), "--quiet", "-o", cpu_art], check=True)
    env = dict(os.environ, KILN_CUDA_DRIVER=driver, KILN_CUBLASLT=blas)
    run = subprocess.run([sys.executable, "-c", SCRIPT, art, cpu_art, os.path.join(model_dir, "test_data_set_0")],
                         env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "device tensors OK" in run.stdout
