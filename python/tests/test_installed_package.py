"""The suite tests the built wheel installed in a venv, not the source tree."""

import os
import sys

import kiln


def test_kiln_comes_from_the_venv():
    assert os.path.realpath(kiln.__file__).startswith(os.path.realpath(sys.prefix)), kiln.__file__
    assert sys.prefix != sys.base_prefix, "not running in a venv"


def test_version_and_help():
    assert kiln.__version__ == kiln.runtime_version
    assert kiln.compiler_version() == "kiln " + kiln.__version__
    doc = kiln.__doc__
    for word in ("InferenceSession", "compile", "generate", "profile", "bfloat16"):
        assert word in doc
    for name in kiln.__all__:
        obj = getattr(kiln, name)
        if callable(obj):
            assert obj.__doc__, f"kiln.{name} has no docstring"
