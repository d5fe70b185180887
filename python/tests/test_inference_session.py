"""kiln.InferenceSession against ONNX Runtime's reference outputs (test_data_set_* made by
onnxruntime-node) and ONNX Runtime's documented Python API: names, types, errors."""

import os
import subprocess
import sys

import numpy as np
import pytest

import kiln
from conftest import data_sets, model_path


@pytest.mark.parametrize("name", ["cnn", "mlp", "lm/gpt2", "lm/llama"])
def test_matches_onnx_runtime_references(name):
    d = model_path(*name.split("/"))
    sess = kiln.InferenceSession(os.path.join(d, "model.onnx"))
    inputs = sess.get_inputs()
    for ins, outs in data_sets(d):
        # ONNX's test layout: input_K.pb in signature order.
        feed = {inputs[k].name: a for k, (_, a) in enumerate(ins)}
        got = sess.run(None, feed)
        assert len(got) == len(outs)
        for (_, want), g in zip(outs, got):
            assert g.shape == want.shape and g.dtype == want.dtype
            np.testing.assert_allclose(g, want, rtol=1e-3, atol=1e-4)


def test_node_args_as_onnx_runtime_spells_them():
    sess = kiln.InferenceSession(model_path("lm", "gpt2", "model.onnx"))
    ins = {i.name: i for i in sess.get_inputs()}
    assert ins["input_ids"].type == "tensor(int64)"
    assert ins["input_ids"].shape == ["batch", "sequence_length"]
    past = [i for i in ins.values() if i.name.startswith("past_key_values")]
    assert past and all(p.type == "tensor(float)" for p in past)
    assert all(isinstance(d, (int, str)) for p in past for d in p.shape)
    outs = sess.get_outputs()
    assert outs[0].name == "logits" and outs[0].type == "tensor(float)"
    assert any(o.name.startswith("present") for o in outs)  # the ONNX signature, kept


def test_output_names_and_errors():
    sess = kiln.InferenceSession(model_path("mlp", "model.onnx"))
    x = np.random.default_rng(0).standard_normal((2, 64)).astype(np.float32)
    (y,) = sess.run(["probs"], {"x": x})
    assert y.shape == (2, 10)
    np.testing.assert_array_equal(sess.run([], {"x": x})[0], y)
    with pytest.raises(kiln.InvalidArgumentError, match="Invalid output name: nope"):
        sess.run(["nope"], {"x": x})
    # ORT raises ValueError for missing inputs (InvalidArgumentError is one).
    with pytest.raises(ValueError, match="Required inputs \\(\\['x'\\]\\) are missing"):
        sess.run(None, {})
    with pytest.raises(kiln.InvalidArgumentError, match="'x'"):
        sess.run(None, {"x": x.astype(np.float64)})


def test_kiln_artifacts_and_bytes(artifacts):
    direct = kiln.InferenceSession(artifacts("mlp"))
    assert direct.artifact_path == artifacts("mlp")
    with open(model_path("mlp", "model.onnx"), "rb") as f:
        from_bytes = kiln.InferenceSession(f.read())
    x = np.ones((1, 64), np.float32)
    np.testing.assert_allclose(direct.run(None, {"x": x})[0], from_bytes.run(None, {"x": x})[0], rtol=1e-6)


def test_cache_is_reused_and_keyed_by_options(tmp_path, monkeypatch):
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path / "cache"))
    a = kiln.InferenceSession(model_path("mlp", "model.onnx"))
    assert os.path.dirname(a.artifact_path) == str(tmp_path / "cache")
    mtime = os.stat(a.artifact_path).st_mtime_ns
    b = kiln.InferenceSession(model_path("mlp", "model.onnx"))
    assert b.artifact_path == a.artifact_path and os.stat(b.artifact_path).st_mtime_ns == mtime
    c = kiln.InferenceSession(model_path("mlp", "model.onnx"), compile_options={"fusion": False})
    assert c.artifact_path != a.artifact_path
    # Another model: another entry. Nothing but finished entries is left in the directory.
    kiln.InferenceSession(model_path("cnn", "model.onnx"))
    assert sorted(p.endswith(".kiln") for p in os.listdir(tmp_path / "cache")) == [True] * 3
    # The cache_dir argument overrides the environment.
    d = kiln.InferenceSession(model_path("mlp", "model.onnx"), cache_dir=str(tmp_path / "other"))
    assert os.path.dirname(d.artifact_path) == str(tmp_path / "other")


def test_concurrent_processes_fill_the_cache_safely(tmp_path):
    """Four processes compile the same model into an empty cache at once: all get a working
    session, one entry remains, no temporary files are left."""
    cache = tmp_path / "cache"
    script = ("import kiln, numpy as np, sys; "
              f"s = kiln.InferenceSession({model_path('mlp', 'model.onnx')!r}); "
              "print(s.artifact_path); print(float(s.run(None, {'x': np.ones((1, 64), np.float32)})[0].sum()))")
    env = dict(os.environ, KILN_CACHE_DIR=str(cache))
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, env=env, cwd=str(tmp_path))
             for _ in range(4)]
    results = []
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0
        results.append(out.decode().split())
    assert len({r[0] for r in results}) == 1
    assert all(abs(float(r[1]) - 1.0) < 1e-4 for r in results)  # softmax rows sum to 1
    assert os.listdir(cache) == [os.path.basename(results[0][0])]
