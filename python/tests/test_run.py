"""Running artifacts: every dtype of the C API, symbolic dims, zero copies, profiles, metadata."""

import numpy as np
import pytest

import kiln
from conftest import data_sets, model_path

# Every kiln_dtype (kiln.h) and the numpy dtype it crosses as.
DTYPES = {
    "float32": np.float32, "uint8": np.uint8, "int8": np.int8, "uint16": np.uint16, "int16": np.int16,
    "int32": np.int32, "int64": np.int64, "string": object, "bool": np.bool_, "float16": np.float16,
    "float64": np.float64, "uint32": np.uint32, "uint64": np.uint64,
    "bfloat16": np.uint16,  # documented: bfloat16 bits as uint16
}


def passthrough_model(dtype_name):
    """y = Identity(x), z = Transpose(x): x of the dtype, shape [n, 3] (n symbolic)."""
    from onnx import TensorProto, helper

    code = {"float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE}.get(
        dtype_name, getattr(TensorProto, dtype_name.upper(), None))
    assert code is not None, dtype_name
    x = helper.make_tensor_value_info("x", code, ["n", 3])
    y = helper.make_tensor_value_info("y", code, ["n", 3])
    z = helper.make_tensor_value_info("z", code, [3, "n"])
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"]),
                           helper.make_node("Transpose", ["x"], ["z"], perm=[1, 0])], "g", [x], [y, z])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def sample(dtype_name, shape, rng):
    if dtype_name == "string":
        words = np.array(["kiln", "", "naïve ☕", "a\0b", "x" * 100], dtype=object)
        return words[rng.integers(0, len(words), size=shape)]
    if dtype_name == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    dt = np.dtype(DTYPES[dtype_name])
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)


@pytest.fixture(scope="module")
def passthrough(tmp_path_factory):
    d = tmp_path_factory.mktemp("dtypes")
    models = {}
    for name in DTYPES:
        out = d / f"{name}.kiln"
        kiln.compile(passthrough_model(name), out)
        models[name] = kiln.load(out)
    return models


@pytest.mark.parametrize("dtype_name", list(DTYPES))
def test_every_dtype_round_trips(passthrough, dtype_name):
    m = passthrough[dtype_name]
    assert m.inputs[0].dtype == dtype_name and m.outputs[1].dtype == dtype_name
    assert m.inputs[0].shape == ["n", 3]
    s = m.session()
    rng = np.random.default_rng(7)
    for n in (1, 4, 0):  # the symbolic dim at several sizes, empty included
        x = sample(dtype_name, (n, 3), rng)
        out = s.run({"x": x})
        assert set(out) == {"y", "z"}
        assert out["y"].dtype == np.dtype(DTYPES[dtype_name]) and out["y"].shape == (n, 3)
        assert out["z"].shape == (3, n)
        if dtype_name == "string":
            assert out["y"].tolist() == x.tolist() and out["z"].tolist() == x.T.tolist()
        else:
            np.testing.assert_array_equal(out["y"], x)
            np.testing.assert_array_equal(out["z"], x.T)


def test_string_inputs_accept_str_and_bytes_arrays(passthrough):
    s = passthrough["string"].session()
    out = s.run({"x": np.array([["a", "bc", "☕"]])})  # numpy unicode array
    assert out["y"].tolist() == [["a", "bc", "☕"]]
    out = s.run({"x": np.array([[b"a", b"bc", b"d"]], dtype=object)})
    assert out["y"].tolist() == [["a", "bc", "d"]]
    with pytest.raises(kiln.InvalidArgumentError, match="'x'"):
        s.run({"x": np.array([[1, 2, 3]], dtype=object)})


def test_outputs_are_the_runtimes_buffers_not_copies(passthrough):
    out = passthrough["float32"].session().run({"x": np.ones((5, 3), np.float32)})
    y = out["y"]
    assert not y.flags.owndata
    # The array is a view of memory the runtime allocated, kept alive by a capsule that owns the
    # kiln_tensor: no numpy allocation, no copy.
    assert type(y.base).__name__ == "PyCapsule"
    assert y.flags.writeable and y.flags.c_contiguous
    assert kiln._runtime._tensor_data(y.base) == y.ctypes.data  # the kiln_tensor's own buffer
    z = out["z"]
    assert not np.shares_memory(y, z)
    del out
    view = y[1:3]
    del y
    np.testing.assert_array_equal(view, np.ones((2, 3), np.float32))  # the capsule outlives the first array


def test_inputs_are_read_in_place(artifacts):
    """A decoder artifact's run writes the new keys and values into the caller's cache arrays
    (kiln.h): the caches the runtime wrote are the numpy arrays passed in, so they were not copied."""
    m = kiln.load(artifacts("gpt2", model_path("lm", "gpt2", "model.onnx"), max_context=64))
    s = m.session()
    cap, n = 16, 3
    feeds = {
        "input_ids": np.array([[5, 6, 7]], np.int64),
        "attention_mask": np.ones((1, n), np.int64),
        "position_ids": np.arange(n, dtype=np.int64)[None],
        "kiln.past_length": np.array(0, np.int64),
        "kiln.row_positions": np.zeros(1, np.int64),  # where each row appends: its own length
        "kiln.logit_rows": np.array(1, np.int64),  # the logits of the last position only
    }
    caches = {i.name: np.zeros((1, 4, cap, 16), np.float32) for i in m.inputs if i.name.startswith("past_key_values")}
    addresses = {k: v.ctypes.data for k, v in caches.items()}
    s.run({**feeds, **caches})
    for name, c in caches.items():
        assert c.ctypes.data == addresses[name]
        assert np.abs(c[:, :, :n]).sum() > 0, f"{name}: the run's keys/values did not land in the caller's array"
        assert not c[:, :, n:].any()
    # A read-only array is never written: it is copied instead.
    frozen = {k: np.zeros_like(v) for k, v in caches.items()}
    for v in frozen.values():
        v.flags.writeable = False
    s.run({**feeds, **frozen})
    assert not any(v.any() for v in frozen.values())


def test_non_contiguous_inputs_are_copied_correctly(artifacts):
    m = kiln.load(artifacts("mlp"))
    s = m.session()
    base = np.random.default_rng(3).standard_normal((6, 128)).astype(np.float32)
    strided = base[::2, ::2]  # neither C-contiguous nor dense
    assert not strided.flags.c_contiguous
    np.testing.assert_array_equal(s.run({"x": strided})["probs"], s.run({"x": np.ascontiguousarray(strided)})["probs"])
    fortran = np.asfortranarray(base[:, :64])
    np.testing.assert_array_equal(s.run({"x": fortran})["probs"], s.run({"x": np.ascontiguousarray(fortran)})["probs"])


def test_symbolic_dims_and_reference_outputs(artifacts):
    m = kiln.load(artifacts("cnn"))
    assert m.inputs[0].shape == ["batch", 3, 32, 32]
    assert m.outputs[0].shape == ["batch", 10]
    s = m.session()
    for ins, outs in data_sets(model_path("cnn")):
        got = s.run({name: a for name, a in ins})
        for name, want in outs:
            np.testing.assert_allclose(got[name], want, rtol=1e-3, atol=1e-5)


def test_metadata_and_kernels(artifacts):
    m = kiln.load(artifacts("cnn"))
    md = m.metadata
    import hashlib
    with open(model_path("cnn", "model.onnx"), "rb") as f:
        assert md["source_sha256"] == hashlib.sha256(f.read()).hexdigest()
    assert md["compiler_version"] == kiln.compiler_version()
    assert md["opset_version"] > 0 and md["target_triple"].startswith("x86_64")
    assert len(m.kernels) == md["kernel_count"] > 0
    assert all(name for name, _ in m.kernels)
    assert not m.is_decoder


def test_profile_table(artifacts):
    m = kiln.load(artifacts("cnn"))
    s = m.session()
    x = np.random.default_rng(0).standard_normal((2, 3, 32, 32)).astype(np.float32)
    plain = s.run({"image": x})
    out, profile = s.run({"image": x}, profile=True)
    np.testing.assert_array_equal(out["logits"], plain["logits"])
    assert isinstance(profile, kiln.Profile)
    assert len(profile.events) >= 1
    assert {e.kernel for e in profile.events} <= {k for k, _ in m.kernels}
    assert all(e.duration_us >= 0 for e in profile.events)
    table = profile.table()
    assert sum(r.calls for r in table) == len(profile.events)
    assert table == sorted(table, key=lambda r: r.time_us, reverse=True)
    assert any("conv" in r.nodes for r in table)
    assert any(r.gb_per_s > 0 for r in table)
    text = str(profile)
    assert "GB/s" in text and table[0].kernel[:40] in text
    # Profiling off again: a plain dict.
    assert isinstance(s.run({"image": x}), dict)


def test_session_threads(artifacts):
    m = kiln.load(artifacts("cnn"), threads=1)
    assert m.metadata["num_threads"] == 1
    x = np.random.default_rng(5).standard_normal((3, 3, 32, 32)).astype(np.float32)
    one = m.session().run({"image": x})["logits"]
    two = m.session(threads=2)
    assert two._model.metadata["num_threads"] == 2
    np.testing.assert_allclose(two.run({"image": x})["logits"], one, rtol=1e-5, atol=1e-6)


def test_buffer_protocol_inputs_are_not_copied(artifacts):
    """A memoryview (any buffer-protocol object) is read in place like the array it views: the
    decoder's cache written through a memoryview lands in the array behind it."""
    m = kiln.load(artifacts("gpt2", model_path("lm", "gpt2", "model.onnx"), max_context=64))
    feeds = {
        "input_ids": np.array([[5, 6]], np.int64),
        "attention_mask": np.ones((1, 2), np.int64),
        "position_ids": np.arange(2, dtype=np.int64)[None],
        "kiln.past_length": np.array(0, np.int64),
        "kiln.row_positions": np.zeros(1, np.int64),
        "kiln.logit_rows": np.array(1, np.int64),
    }
    caches = {i.name: np.zeros((1, 4, 8, 16), np.float32) for i in m.inputs if i.name.startswith("past_key_values")}
    out = m.session().run({**feeds, **{k: memoryview(v) for k, v in caches.items()}})
    assert out["logits"].shape[0] == 1 and out["logits"].shape[-1] == 512
    assert all(np.abs(c[:, :, :2]).sum() > 0 and not c[:, :, 2:].any() for c in caches.values())
    mlp = kiln.load(artifacts("mlp")).session()
    x = np.random.default_rng(4).standard_normal((2, 64)).astype(np.float32)
    np.testing.assert_array_equal(mlp.run({"x": memoryview(x)})["probs"], mlp.run({"x": x})["probs"])
