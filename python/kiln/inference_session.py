"""``kiln.InferenceSession``: ONNX Runtime's basic Python API over kiln, so that code written for
``onnxruntime.InferenceSession`` runs on kiln by changing the import."""

import os
from typing import Dict, List, Optional, Sequence

from .errors import InvalidArgumentError
from .model import Model

# kiln dtype names -> ONNX Runtime's type strings.
_ORT_TYPES = {
    "float32": "tensor(float)", "uint8": "tensor(uint8)", "int8": "tensor(int8)",
    "uint16": "tensor(uint16)", "int16": "tensor(int16)", "int32": "tensor(int32)",
    "int64": "tensor(int64)", "string": "tensor(string)", "bool": "tensor(bool)",
    "float16": "tensor(float16)", "float64": "tensor(double)", "uint32": "tensor(uint32)",
    "uint64": "tensor(uint64)", "bfloat16": "tensor(bfloat16)",
}


class NodeArg:
    """An input or output as ONNX Runtime describes it: ``name``, ``type`` ('tensor(float)'),
    ``shape`` (ints for static dims, the symbol as str for symbolic ones, None if unnamed)."""

    def __init__(self, info):
        self.name: str = info.name
        self.type: str = _ORT_TYPES.get(info.dtype, f"tensor({info.dtype})")
        self.shape: List[object] = list(info.shape)

    def __repr__(self) -> str:
        return f"NodeArg(name='{self.name}', type='{self.type}', shape={self.shape})"


class InferenceSession:
    """``InferenceSession("model.onnx" | "model.kiln" | onnx bytes)``.

    An ``.onnx`` model (or bytes) is compiled on first use into the compile cache (``kiln.cache``:
    keyed by the model's SHA-256, the options, kiln's version and the host CPU; ``KILN_CACHE_DIR``
    moves it) and loaded from there afterwards. A ``.kiln`` artifact is loaded as is.

    ``sess_options`` and ``providers`` are accepted for compatibility and ignored (kiln runs what
    the artifact targets); ``threads`` sets the kernel threads (0 = every core);
    ``compile_options`` are :func:`kiln.compile` keywords, part of the cache key (default
    ``kv_cache=False``: a decoder keeps its ONNX inputs and outputs, as under ONNX Runtime).

    As with ONNX Runtime, ``run`` may be called from several threads at once: each thread gets
    its own kiln session, and they run in parallel (the GIL is released while a model runs).
    """

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, *,
                 threads: int = 0, compile_options: Optional[dict] = None, cache_dir: Optional[str] = None):
        from .cache import cached_compile

        # A decoder keeps its ONNX signature (past/present tensors in and out), as under ONNX
        # Runtime, unless the caller asks for kiln's runtime-owned KV cache.
        self._compile_options = {"kv_cache": False, **(compile_options or {})}
        if isinstance(path_or_bytes, (bytes, bytearray)):
            artifact = cached_compile(None, bytes(path_or_bytes), self._compile_options, cache_dir)
        else:
            path = os.fspath(path_or_bytes)
            if path.endswith(".kiln"):
                artifact = path
            else:
                artifact = cached_compile(path, None, self._compile_options, cache_dir)
        self._model = Model(artifact, threads=threads)
        self._artifact = artifact
        self._inputs = [NodeArg(i) for i in self._model.inputs]
        self._outputs = [NodeArg(o) for o in self._model.outputs]
        self._output_names = [o.name for o in self._outputs]
        self._input_names = {i.name for i in self._inputs}
        import threading
        self._local = threading.local()

    @property
    def model(self) -> Model:
        """The loaded kiln model."""
        return self._model

    @property
    def artifact_path(self) -> str:
        return self._artifact

    def get_inputs(self) -> List[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> List[NodeArg]:
        return list(self._outputs)

    def get_overridable_initializers(self) -> List[NodeArg]:
        return []

    def get_providers(self) -> List[str]:
        return ["CPUExecutionProvider"]

    def _new_session(self):
        # One kiln session per calling thread: ONNX Runtime allows concurrent run() calls.
        s = self._local.session = self._model.session()
        return s

    def run(self, output_names: Optional[Sequence[str]], input_feed: Dict[str, object], run_options=None) -> list:
        """The outputs named by ``output_names`` (all when None or empty), in that order."""
        session = getattr(self._local, "session", None) or self._new_session()
        try:
            result = session.run(input_feed)
        except InvalidArgumentError:
            # The checks ONNX Runtime makes before running, only on the way out of a failure so
            # that a good call pays nothing for them.
            missing = [n for n in self._input_names if n not in input_feed]
            if missing:
                raise InvalidArgumentError(
                    f"Required inputs ({sorted(missing)}) are missing from input feed ({list(input_feed)}).",
                    1) from None
            import numpy as np
            if not all(isinstance(v, np.ndarray) for v in input_feed.values()):
                # Lists and scalars, as numpy would make them (the dtype must still match).
                return self.run(output_names, {k: np.asarray(v) for k, v in input_feed.items()}, run_options)
            raise
        if not output_names:
            return list(result.values())  # in signature order
        try:
            return [result[n] for n in output_names]
        except KeyError as e:
            raise InvalidArgumentError(f"Invalid output name: {e.args[0]}", 1) from None
