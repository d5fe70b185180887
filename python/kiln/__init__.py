"""kiln: ahead-of-time compiled ONNX models, from Python.

Compile an ONNX model into a kiln artifact and run it::

    import kiln, numpy as np
    kiln.compile("model.onnx", "model.kiln")            # in-process compiler (the kiln wheel)
    model = kiln.load("model.kiln")
    print(model.inputs, model.outputs)                  # names, dtypes, shapes (symbolic dims named)
    session = model.session(threads=2)
    outputs = session.run({"x": np.ones((1, 64), np.float32)})   # dict name -> numpy array
    outputs, profile = session.run(feeds, profile=True); print(profile)

Or as a drop-in for ONNX Runtime's basic API (compiles ``.onnx`` once into a cache)::

    sess = kiln.InferenceSession("model.onnx")
    y, = sess.run(None, {"x": x})

Decode with a decoder artifact and a Hugging Face tokenizer.json::

    tok = kiln.Tokenizer.from_file("tokenizer.json")
    gen = kiln.load("lm.kiln").generator(tokenizer=tok)
    for t in gen.generate("Once upon a time", max_new_tokens=32):
        print(t.text, end="", flush=True)

Arrays cross without copies where the layout allows: a C-contiguous input is read in place, an
output is a view of the runtime's buffer. bfloat16 tensors are exchanged as uint16 arrays of the
bits; string tensors as object arrays of str (copied). Errors are :class:`kiln.Error`
subclasses: :class:`CompileError`, and :class:`kiln.RuntimeError` with subclasses per C API error
code (e.g. :class:`InvalidArgumentError`, which names the offending input). See docs/python.md.

The ``kiln-runtime`` wheel has everything but :func:`compile` (no LLVM); the ``kiln`` wheel adds it.
"""

from . import _runtime
from ._profile import KernelStat, Profile, ProfileEvent
from ._runtime import TensorInfo
from ._runtime import Tokenizer
from .compiling import compile, compile_report, compiler_version, has_compiler, list_ops
from .errors import (ArtifactIOError, BusyError, CompileError, Error, IncompatibleError, InternalError,
                     InvalidArgumentError, InvalidArtifactError, OutOfMemoryError, OutOfRangeError, RuntimeError)
from .generation import Generator, Token
from .inference_session import InferenceSession, NodeArg
from .model import DeviceTensor, Model, Session, load

__version__: str = _runtime.__version__
runtime_version: str = _runtime.__version__


__all__ = [
    "compile", "compile_report", "compiler_version", "has_compiler", "list_ops", "load", "Model", "DeviceTensor",
    "Session", "TensorInfo", "InferenceSession", "NodeArg", "Generator", "Token", "Tokenizer",
    "Profile", "ProfileEvent", "KernelStat", "Error", "CompileError", "RuntimeError",
    "InvalidArgumentError", "ArtifactIOError", "InvalidArtifactError", "IncompatibleError",
    "OutOfMemoryError", "InternalError", "BusyError", "OutOfRangeError", "__version__",
]
