"""kiln.compile: in-process compilation, its options and its errors."""

import os

import numpy as np
import pytest

import kiln
from conftest import model_path


def test_compile_to_path_and_load(tmp_path):
    out = tmp_path / "mlp.kiln"
    result = kiln.compile(model_path("mlp", "model.onnx"), out)
    assert result == str(out) and out.exists()
    m = kiln.load(out)
    assert m.metadata["compiler_version"] == kiln.compiler_version()


def test_compile_without_output_returns_a_model_and_cleans_up():
    m = kiln.compile(model_path("mlp", "model.onnx"))
    assert isinstance(m, kiln.Model)
    d = os.path.dirname(m.path)
    assert os.path.exists(m.path)
    y = m.run({"x": np.ones((2, 64), np.float32)})
    assert y["probs"].shape[0] == 2
    del m, y
    import gc
    gc.collect()
    assert not os.path.exists(d), "the temporary artifact directory outlived its model"


def test_compile_from_bytes_and_modelproto(tmp_path):
    import onnx

    with open(model_path("mlp", "model.onnx"), "rb") as f:
        data = f.read()
    a = kiln.compile(data, tmp_path / "a.kiln")
    b = kiln.compile(onnx.load_from_string(data), tmp_path / "b.kiln")
    x = np.random.default_rng(0).standard_normal((3, 64)).astype(np.float32)
    ya = kiln.load(a).run({"x": x})["probs"]
    yb = kiln.load(b).run({"x": x})["probs"]
    np.testing.assert_array_equal(ya, yb)


def test_options_reach_the_compiler(tmp_path):
    # --target-cpu is recorded in the artifact; --symbolic-input-dims changes the signature.
    out = kiln.compile(model_path("mlp", "model.onnx"), tmp_path / "v3.kiln", target_cpu="x86-64-v3")
    assert kiln.load(out).metadata["target_cpu"] == "x86-64-v3"
    fixed = kiln.compile(model_path("mlp", "model.onnx"), tmp_path / "s.kiln", symbolic_input_dims=True)
    assert all(not isinstance(d, int) for d in kiln.load(fixed).inputs[0].shape)
    unfused = kiln.compile(model_path("mlp", "model.onnx"), tmp_path / "u.kiln", fusion=False, memory_plan=False)
    assert kiln.load(unfused).metadata["kernel_count"] >= 1


def test_emit_returns_ir():
    ir = kiln.compile(model_path("mlp", "model.onnx"), emit="graph")
    assert "func.func" in ir and "graph." in ir


def test_list_ops():
    ops = kiln.list_ops()
    assert "Conv" in ops and "MatMul" in ops


def test_unsupported_op_names_op_node_and_opset(tmp_path):
    with pytest.raises(kiln.CompileError) as e:
        kiln.compile(model_path("bad", "unsupported_op.onnx"), tmp_path / "x.kiln")
    msg = str(e.value)
    assert "\n" not in msg
    # The model's Bernoulli node 'weird_node' at opset 15 (test/models/README.md).
    assert "Bernoulli" in msg and "weird_node" in msg and "opset 15" in msg, msg
    assert not (tmp_path / "x.kiln").exists()


@pytest.mark.parametrize("bad", ["truncated.onnx", "random.onnx", "missing_initializer.onnx"])
def test_bad_models_raise_compile_error(tmp_path, bad):
    with pytest.raises(kiln.CompileError) as e:
        kiln.compile(model_path("bad", bad), tmp_path / "x.kiln")
    assert str(e.value) and "\n" not in str(e.value)


def test_bad_options(tmp_path):
    with pytest.raises(kiln.CompileError, match="unknown --target 'tpu'"):
        kiln.compile(model_path("mlp", "model.onnx"), tmp_path / "x.kiln", target="tpu")
    with pytest.raises(kiln.CompileError, match="--quantize"):
        kiln.compile(model_path("mlp", "model.onnx"), tmp_path / "x.kiln", quantize="int3")
    with pytest.raises(TypeError, match="fuse"):
        kiln.compile(model_path("mlp", "model.onnx"), tmp_path / "x.kiln", fuse=False)
    with pytest.raises(kiln.CompileError):
        kiln.compile(str(tmp_path / "missing.onnx"), tmp_path / "x.kiln")
    with pytest.raises(TypeError):
        kiln.compile(12345, tmp_path / "x.kiln")
    with pytest.raises(TypeError, match="option max_context: 'long'"):
        kiln.compile(model_path("mlp", "model.onnx"), tmp_path / "x.kiln", max_context="long")
    with pytest.raises(kiln.CompileError, match="--max-context"):
        kiln.compile(model_path("mlp", "model.onnx"), tmp_path / "x.kiln", max_context=0)


def test_compile_report_returns_the_accuracy_report(tmp_path):
    printed = kiln.compile_report(model_path("mlp", "model.onnx"), tmp_path / "q.kiln", quantize="int8",
                                  check_accuracy=True)
    assert (tmp_path / "q.kiln").exists()
    assert "accuracy of int8 against float" in printed and "probs" in printed, printed


def test_quantize(tmp_path):
    q = kiln.load(kiln.compile(model_path("mlp", "model.onnx"), tmp_path / "q.kiln", quantize="int8"))
    f = kiln.load(kiln.compile(model_path("mlp", "model.onnx"), tmp_path / "f.kiln"))
    x = np.random.default_rng(1).standard_normal((4, 64)).astype(np.float32)
    yq, yf = q.run({"x": x})["probs"], f.run({"x": x})["probs"]
    assert not np.array_equal(yq, yf), "int8 weights gave bit-identical outputs: not quantized?"
    np.testing.assert_allclose(yq, yf, rtol=0.1, atol=0.1)


def test_external_weights_with_weights_dir(tmp_path):
    src = model_path("bad", "external_ok")
    ext = kiln.compile(os.path.join(src, "model.onnx"), tmp_path / "ext.kiln", weights="external")
    emb = kiln.compile(os.path.join(src, "model.onnx"), tmp_path / "emb.kiln")
    x = np.random.default_rng(2).standard_normal((3, 16)).astype(np.float32)
    want = kiln.load(emb).run({"x": x})
    got = kiln.load(ext, weights_dir=src).run({"x": x})
    assert list(got) == list(want)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])
    # Without the directory, the artifact's own directory has no weights.bin: an error naming it.
    with pytest.raises(kiln.RuntimeError, match="weights.bin"):
        kiln.load(ext)
