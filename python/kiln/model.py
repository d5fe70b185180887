"""Loaded artifacts (:class:`Model`) and their per-caller run state (:class:`Session`)."""

import os
import threading
from typing import Dict, List, Optional, Union

from . import _runtime
from ._runtime import TensorInfo

PathLike = Union[str, "os.PathLike[str]"]


class Session(_runtime.Session):
    """Runs a model: ``session.run({"x": array}) -> {"y": array}``.

    Inputs are numpy arrays of the input's dtype (bfloat16 as uint16 bits; strings as str/bytes
    object arrays). A C-contiguous, aligned array is read in place, never copied; other layouts
    are copied once. Outputs are numpy arrays over the runtime's own buffers (no copy; the array
    keeps the buffer alive). The GIL is released while the model runs, so sessions on other
    threads run in parallel. One session serves one call at a time (another thread gets
    :class:`kiln.BusyError`): create one session per thread.

    ``run(feeds, profile=True)`` returns ``(outputs, kiln.Profile)``: every kernel launch timed,
    ``print(profile)`` shows the per-kernel table (kernel, ONNX nodes, time, GB/s).

    Errors: :class:`kiln.InvalidArgumentError` naming the input for a missing or unknown name, a
    wrong dtype, rank or dim; other :class:`kiln.RuntimeError` subclasses with the runtime's message.
    """

    def __init__(self, model: "Model", threads: Optional[int] = None):
        super().__init__(model._handle_for(threads))
        self.model = model


# kiln's dtype names and their codes (the ONNX TensorProto.DataType values kiln.h uses).
_DTYPE_CODES = {"float32": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6, "int64": 7, "bool": 9,
                "float16": 10, "float64": 11, "uint32": 12, "uint64": 13, "bfloat16": 16}


def _dtype_code(name: str) -> int:
    if name not in _DTYPE_CODES:
        from .errors import InvalidArgumentError
        raise InvalidArgumentError(f"dtype {name!r} cannot live in GPU memory (dtypes: {', '.join(_DTYPE_CODES)})",
                                   1)
    return _DTYPE_CODES[name]


class DeviceTensor(_runtime.DeviceTensor):
    """A tensor in the GPU memory of a ``--target=cuda`` model's device (``model.to_device(array)``,
    ``model.device_zeros(shape, dtype)``). As a :meth:`Session.run` feed it is read in place; as a
    :meth:`Session.run_into` destination the output is written there and stays on the GPU, run
    after run (with the session's CUDA graphs, nothing crosses between host and GPU). ``numpy()``
    copies it to the host; ``__cuda_array_interface__`` lets torch, CuPy or Numba view it without a
    copy; other libraries' GPU arrays are accepted as feeds and destinations the same way. It keeps
    the model loaded while it lives."""


class Model:
    """A loaded kiln artifact (``kiln.load(path)``).

    ``inputs``/``outputs``: the signature (name, dtype, shape with symbolic dims as their names);
    ``metadata``: lineage (compiler version, source SHA-256, producer, opset, target CPU and
    features) and resources; ``kernels``: (name, ONNX nodes) per kernel. The file is mapped
    read-only: deleting or replacing it while loaded is safe (the mapping keeps the old bytes).
    """

    def __init__(self, path: PathLike, threads: int = 0, weights_dir: Optional[PathLike] = None):
        self._path = os.fspath(path)
        self._weights_dir = os.fspath(weights_dir) if weights_dir is not None else None
        self._handle = _runtime.Model(self._path, threads, self._weights_dir)
        self._handles = {threads: self._handle}
        self._lock = threading.Lock()
        self._keepalive = None  # e.g. the temporary directory of kiln.compile(output=None)

    def _handle_for(self, threads: Optional[int]) -> "_runtime.Model":
        # The thread count belongs to a loaded model in the C API (its device's thread pool): a
        # session asking for another count gets the artifact loaded again with it (the weights
        # are a shared read-only mapping, so this costs the code, not the weights), cached.
        if threads is None or threads == self._handle.threads:
            return self._handle
        with self._lock:
            handle = self._handles.get(threads)
            if handle is None:
                handle = _runtime.Model(self._path, threads, self._weights_dir)
                self._handles[threads] = handle
            return handle

    @property
    def path(self) -> str:
        return self._path

    @property
    def inputs(self) -> List[TensorInfo]:
        return self._handle.inputs

    @property
    def outputs(self) -> List[TensorInfo]:
        return self._handle.outputs

    @property
    def metadata(self) -> Dict[str, object]:
        return self._handle.metadata

    @property
    def kernels(self) -> List[tuple]:
        return self._handle.kernels

    @property
    def is_decoder(self) -> bool:
        """Compiled with a KV cache: use :meth:`generator`."""
        return self._handle.is_decoder

    def session(self, threads: Optional[int] = None) -> Session:
        """A new session. ``threads``: kernel threads (caller included; 0 = every core); default
        the count the model was loaded with."""
        return Session(self, threads)

    def generator(self, tokenizer=None, max_context: int = 0, threads: Optional[int] = None):
        """A :class:`kiln.Generator` decoding with this (decoder) artifact. ``tokenizer``: a
        :class:`kiln.Tokenizer` (text prompts, text pieces, its EOS stops); ``max_context``: KV
        cache capacity in tokens (0: the artifact's)."""
        from .generation import Generator
        return Generator(self, tokenizer=tokenizer, max_context=max_context, threads=threads)

    def to_device(self, array, dtype: Optional[str] = None) -> "DeviceTensor":
        """A copy of ``array`` in the GPU memory of this (``--target=cuda``) model's device, to
        feed :meth:`Session.run` or fill by :meth:`Session.run_into` without copies between host
        and GPU. ``dtype``: the kiln dtype name (default: the array's; ``"bfloat16"`` for uint16
        bits)."""
        import numpy
        array = numpy.asarray(array)
        return DeviceTensor(self._handle, array, _dtype_code(dtype or array.dtype.name))

    def device_zeros(self, shape, dtype: str = "float32") -> "DeviceTensor":
        """Zeros of ``shape`` in this (``--target=cuda``) model's GPU memory: a destination for
        :meth:`Session.run_into` (the output's dtype and exact shape)."""
        return DeviceTensor(self._handle, [int(d) for d in shape], _dtype_code(dtype))

    def run(self, feeds: dict, profile: bool = False):
        """One run on a fresh session (convenience; keep a :meth:`session` for repeated runs)."""
        return self.session().run(feeds, profile=profile)

    def __repr__(self) -> str:
        ins, outs = [i.name for i in self.inputs], [o.name for o in self.outputs]
        return f"<kiln.Model {self._path!r} inputs={ins} outputs={outs}>"


def load(path: PathLike, threads: int = 0, weights_dir: Optional[PathLike] = None) -> Model:
    """Loads the artifact at ``path``. ``threads``: kernel threads of its sessions (0 = every
    core); ``weights_dir``: for ``--weights=external`` artifacts, the ONNX data's directory.
    Raises a :class:`kiln.RuntimeError` subclass saying why a file cannot be loaded."""
    return Model(path, threads=threads, weights_dir=weights_dir)
