"""Fixtures of the kiln Python tests. They run against the installed wheel (python/tests/run.py
makes a fresh venv), never the source tree: see test_installed_package."""

import os
import shutil
import subprocess

import numpy as np
import pytest

SOURCE = os.environ.get("KILN_SOURCE", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
MODELS = os.path.join(SOURCE, "test", "models")
BIN = os.environ.get("KILN_BIN", "")


def model_path(*parts):
    return os.path.join(MODELS, *parts)


@pytest.fixture(scope="session")
def kiln_bin():
    tool = os.path.join(BIN, "kiln-run")
    if not os.path.exists(tool):
        pytest.fail(f"KILN_BIN must name the directory of kiln-run (got '{BIN}')")
    return BIN


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory):
    """Artifacts compiled once per test session with kiln.compile, by name."""
    import kiln

    d = tmp_path_factory.mktemp("artifacts")
    cache = {}

    def get(name, onnx_path=None, **options):
        key = (name, tuple(sorted(options.items())))
        if key not in cache:
            out = str(d / f"{name}.kiln")
            kiln.compile(onnx_path or model_path(name, "model.onnx"), out, **options)
            cache[key] = out
        return cache[key]

    return get


def load_pb(path):
    from onnx import TensorProto, numpy_helper

    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t.name, numpy_helper.to_array(t)


def data_sets(model_dir):
    """(inputs list, outputs list) of every test_data_set_* under model_dir."""
    sets = []
    for entry in sorted(os.listdir(model_dir)):
        if not entry.startswith("test_data_set_"):
            continue
        d = os.path.join(model_dir, entry)
        # input_10 sorts before input_2: order by the number.
        key = lambda p: int(p.rsplit("_", 1)[1].split(".")[0])
        files = os.listdir(d)
        ins = [load_pb(os.path.join(d, f)) for f in sorted((f for f in files if f.startswith("input_")), key=key)]
        outs = [load_pb(os.path.join(d, f)) for f in sorted((f for f in files if f.startswith("output_")), key=key)]
        sets.append((ins, outs))
    assert sets, f"no test data sets in {model_dir}"
    return sets
