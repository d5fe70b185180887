"""kiln's exceptions.

Every error kiln raises is a :class:`kiln.Error`. Compilation failures are :class:`CompileError`;
failures of the runtime are :class:`kiln.RuntimeError` (also a builtin ``RuntimeError``) or one of
its subclasses, chosen by the C API's error code, and carry the runtime's one-line message.
"""

import builtins

__all__ = [
    "Error", "CompileError", "RuntimeError", "InvalidArgumentError", "ArtifactIOError",
    "InvalidArtifactError", "IncompatibleError", "OutOfMemoryError", "InternalError", "BusyError",
    "OutOfRangeError",
]


class Error(Exception):
    """Base of every kiln error."""


class CompileError(Error):
    """The compiler refused or failed to compile: ``message`` is its one-line reason (for an
    unsupported op it names the op, the node and the opset)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class RuntimeError(Error, builtins.RuntimeError):
    """An error of the kiln runtime. ``message`` is the runtime's text, ``code`` the C API's
    ``kiln_error_code`` (1 invalid argument ... 8 out of range)."""

    def __init__(self, message: str, code: int = 6):
        super().__init__(message)
        self.message = message
        self.code = code


class InvalidArgumentError(RuntimeError, ValueError):
    """A request that does not match the model: a wrong input name, dtype or shape (the message
    names the input), bad sampling parameters. Also a ``ValueError``."""


class ArtifactIOError(RuntimeError):
    """A file could not be opened, read or mapped."""


class InvalidArtifactError(RuntimeError):
    """The file is not a valid kiln artifact."""


class IncompatibleError(RuntimeError):
    """A valid artifact this runtime or host cannot run (format, ABI, CPU features)."""


class OutOfMemoryError(RuntimeError):
    """The runtime could not allocate memory."""


class InternalError(RuntimeError):
    """The generated code failed or broke the ABI contract."""


class BusyError(RuntimeError):
    """The session (or generator) is already running on another thread: use one per thread."""


class OutOfRangeError(RuntimeError):
    """A prompt longer than the context, or a full KV cache."""


_BY_CODE = {
    1: InvalidArgumentError,
    2: ArtifactIOError,
    3: InvalidArtifactError,
    4: IncompatibleError,
    5: OutOfMemoryError,
    6: InternalError,
    7: BusyError,
    8: OutOfRangeError,
}


def _class_for_code(code: int) -> type:
    """The exception class of a C API error code (used by the binding)."""
    return _BY_CODE.get(code, RuntimeError)
