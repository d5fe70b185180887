"""The compile cache of :class:`kiln.InferenceSession`: an ONNX model compiled once per content,
options, kiln version and host CPU, then loaded from disk.

Location: ``$KILN_CACHE_DIR``, else ``$XDG_CACHE_HOME/kiln``, else ``~/.cache/kiln``. Entries are
written to a temporary file in the cache directory and renamed into place, so concurrent processes
compiling the same model each see either no entry or a complete one (the last rename wins; both
are the same artifact). Nothing is ever evicted: delete the directory to reclaim space.
"""

import hashlib
import json
import os
import platform
import tempfile
from typing import Optional

from . import _runtime


def cache_dir() -> str:
    d = os.environ.get("KILN_CACHE_DIR")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "kiln")
    return d


def _host_cpu() -> str:
    """What an artifact compiled for this host depends on: the machine, CPU model and features."""
    parts = [platform.machine()]
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("model name", "flags")):
                    parts.append(line.strip())
                if line.strip() == "":  # the first processor says it all
                    break
    except OSError:
        pass
    return "\n".join(parts)


def cache_key(model_bytes: bytes, options: dict, version: str) -> str:
    h = hashlib.sha256()
    h.update(hashlib.sha256(model_bytes).digest())
    h.update(json.dumps(options, sort_keys=True).encode())
    h.update(version.encode())
    h.update(_host_cpu().encode())
    return h.hexdigest()


def cached_compile(model_path: Optional[str], model_bytes: Optional[bytes], options: dict,
                   directory: Optional[str] = None) -> str:
    """The path of the cached artifact of the model, compiling it on a miss."""
    from .compiling import _compile, compiler_version

    if model_bytes is None:
        with open(model_path, "rb") as f:
            model_bytes = f.read()
    directory = directory or cache_dir()
    key = cache_key(model_bytes, options, compiler_version() + " runtime " + _runtime.__version__)
    path = os.path.join(directory, key + ".kiln")
    if os.path.exists(path):
        return path
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=key[:16] + ".", suffix=".tmp", dir=directory)
    os.close(fd)
    try:
        # A model given as a path compiles from there, so its external data files are found.
        _compile(model_path if model_path is not None else model_bytes, tmp, None, 0, dict(options))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path
