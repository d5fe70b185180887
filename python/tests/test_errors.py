"""Bad input: every mistake is an exception naming what was wrong, never a crash."""

import os
import shutil

import numpy as np
import pytest

import kiln
from conftest import load_pb, model_path


@pytest.fixture(scope="module")
def mlp(artifacts):
    return kiln.load(artifacts("mlp"))


def test_wrong_name_missing_and_extra(mlp):
    s = mlp.session()
    x = np.zeros((1, 64), np.float32)
    with pytest.raises(kiln.InvalidArgumentError, match="input 'X' is not an input of this model \\(inputs: x\\)"):
        s.run({"X": x})
    with pytest.raises(kiln.InvalidArgumentError, match="input 'x' is missing"):
        s.run({})
    with pytest.raises(kiln.InvalidArgumentError, match="'extra'"):
        s.run({"x": x, "extra": x})
    with pytest.raises(kiln.InvalidArgumentError):
        s.run({1: x})
    with pytest.raises(TypeError):
        s.run([x])


def test_wrong_dtype_names_the_input(mlp):
    s = mlp.session()
    with pytest.raises(kiln.InvalidArgumentError, match="input 'x': expected float32, got float64") as e:
        s.run({"x": np.zeros((1, 64))})
    assert isinstance(e.value, ValueError) and isinstance(e.value, RuntimeError)  # builtins, too
    assert e.value.code == 1
    # The model's own bad-input files (test/models/README.md): int64 data.
    _, wrong = load_pb(model_path("bad", "wrong_dtype_input.pb"))
    with pytest.raises(kiln.InvalidArgumentError, match="'x'"):
        s.run({"x": wrong})
    with pytest.raises(kiln.InvalidArgumentError,
                       match="'x': expected a numpy array \\(or a buffer-protocol object\\), got list"):
        s.run({"x": [[0.0] * 64]})


def test_wrong_shape_names_the_input(mlp):
    s = mlp.session()
    with pytest.raises(kiln.InvalidArgumentError, match="input 'x': expected rank 2, got 1"):
        s.run({"x": np.zeros(64, np.float32)})
    with pytest.raises(kiln.InvalidArgumentError, match="'x'") as e:
        s.run({"x": np.zeros((1, 63), np.float32)})
    assert "64" in str(e.value)
    _, wrong = load_pb(model_path("bad", "wrong_shape_input.pb"))
    with pytest.raises(kiln.InvalidArgumentError, match="'x'"):
        s.run({"x": wrong})
    # The session is still usable after every refusal.
    assert s.run({"x": np.zeros((2, 64), np.float32)})["probs"].shape == (2, 10)


def test_bad_files(tmp_path):
    with pytest.raises(kiln.ArtifactIOError) as e:
        kiln.load(tmp_path / "missing.kiln")
    assert "missing.kiln" in str(e.value)
    junk = tmp_path / "junk.kiln"
    junk.write_bytes(b"not an artifact" * 100)
    with pytest.raises(kiln.InvalidArtifactError):
        kiln.load(junk)
    with pytest.raises(kiln.InvalidArgumentError, match="threads"):
        kiln.load(junk, threads=-1)


def test_truncated_artifact(artifacts, tmp_path):
    data = open(artifacts("mlp"), "rb").read()
    cut = tmp_path / "cut.kiln"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(kiln.RuntimeError):
        kiln.load(cut)


def test_deleted_artifact_while_loaded_stays_safe(artifacts, tmp_path):
    path = tmp_path / "doomed.kiln"
    shutil.copy(artifacts("mlp"), path)
    m = kiln.load(path)
    s = m.session()
    x = np.random.default_rng(0).standard_normal((3, 64)).astype(np.float32)
    before = s.run({"x": x})["probs"]
    os.unlink(path)
    # The mapping keeps the old bytes: runs, new sessions and the signature still work.
    np.testing.assert_array_equal(s.run({"x": x})["probs"], before)
    np.testing.assert_array_equal(m.session().run({"x": x})["probs"], before)
    assert m.inputs[0].name == "x"
    # Overwriting a new file at the same path does not change the loaded model either.
    path.write_bytes(b"garbage" * 1000)
    np.testing.assert_array_equal(s.run({"x": x})["probs"], before)
    # Only a new load sees the new file (and refuses it).
    with pytest.raises(kiln.RuntimeError):
        m.session(threads=m.metadata["num_threads"] + 1)


def test_not_a_decoder(mlp):
    with pytest.raises(kiln.InvalidArgumentError):
        mlp.generator()
