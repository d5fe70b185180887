"""``kiln.compile``: kiln's compiler in-process (the ``kiln`` wheel's ``kiln._compiler``). The module
is ``kiln.compiling`` so that the package attribute ``kiln.compile`` is always the function."""

import os
import shutil
import tempfile
import weakref
from typing import Iterable, Optional, Union

from .errors import CompileError

try:
    from . import _compiler
except ImportError as e:  # the kiln-runtime wheel has no compiler
    _compiler = None
    _compiler_import_error = str(e)


def has_compiler() -> bool:
    """Whether this installation can compile (the ``kiln`` wheel, not only ``kiln-runtime``)."""
    return _compiler is not None


def _require_compiler():
    if _compiler is None:
        raise CompileError("kiln's compiler is not installed (the kiln-runtime wheel only runs artifacts; "
                           f"install the kiln wheel): {_compiler_import_error}")
    return _compiler


def compiler_version() -> str:
    """'kiln <version>', as recorded in the artifacts it writes."""
    return _require_compiler().version


# Python keyword -> CompileOptions field (the kiln-compile flag in docs/tools.md).
_OPTIONS = {
    "target": "target", "target_cpu": "targetCpu", "gpu_arch": "gpuArch", "precision": "precision",
    "gpu_attention": "gpuAttention", "gpu_attention_split_keys": "gpuAttentionSplitKeys",
    "gpu_code": "gpuCode", "ptxas": "ptxas", "kv_cache": "kvCache", "max_context": "maxContext",
    "fusion": "fusion", "memory_plan": "memoryPlan", "channels_last": "channelsLast",
    "quantize": "quantize", "quantize_group": "quantizeGroup", "quantize_scale": "quantizeScale",
    "quantize_keep": "quantizeKeep", "symbolic_input_dims": "symbolicInputDims", "weights": "weights",
    "check_accuracy": "checkAccuracy", "calibration": "calibration",
    "calibration_tokens": "calibrationTokens", "calibration_seed": "calibrationSeed",
    "calibration_samples": "calibrationSamples", "calibration_length": "calibrationLength",
    "calibration_dims": "calibrationDims", "max_error": "maxError", "min_cosine": "minCosine",
    "min_top1": "minTop1", "max_perplexity_ratio": "maxPerplexityRatio", "notes": "notes",
    "print_memory_plan": "printMemoryPlan", "print_layouts": "printLayouts", "denormals": "denormals",
}


def _model_path(model, tmpdir_holder: list) -> str:
    """A path to the ONNX model: as given, or the bytes written to a temporary file."""
    if isinstance(model, (str, os.PathLike)):
        return os.fspath(model)
    if hasattr(model, "SerializeToString"):  # an onnx.ModelProto
        model = model.SerializeToString()
    if isinstance(model, (bytes, bytearray, memoryview)):
        d = tempfile.mkdtemp(prefix="kiln-model-")
        tmpdir_holder.append(d)
        path = os.path.join(d, "model.onnx")
        with open(path, "wb") as f:
            f.write(model)
        return path
    raise TypeError(f"model must be a path, ONNX bytes or an onnx.ModelProto, got {type(model).__name__}")


def _options(model_path: str, out_path: str, emit: str, kwargs: dict) -> dict:
    opts = {"modelPath": model_path, "outPath": out_path, "emit": emit}
    for key, value in kwargs.items():
        if key not in _OPTIONS:
            raise TypeError(f"kiln.compile() got an unexpected keyword argument '{key}'")
        if value is None:
            continue
        if key in ("quantize_keep", "calibration_dims") and isinstance(value, str):
            value = value.split(",")
        if key in ("quantize_keep", "calibration_dims"):
            value = [str(v) for v in value]
        elif key in ("calibration", "calibration_tokens") :
            value = os.fspath(value)
        opts[_OPTIONS[key]] = value
    return opts


def compile(model, output: Optional[Union[str, "os.PathLike[str]"]] = None, *,
            target: str = "x86", target_cpu: Optional[str] = None, gpu_arch: Optional[str] = None,
            precision: Optional[str] = None, quantize: Optional[str] = None, quantize_group: Optional[int] = None,
            quantize_scale: Optional[str] = None, quantize_keep: Optional[Iterable[str]] = None,
            max_context: Optional[int] = None, kv_cache: bool = True, fusion: bool = True,
            memory_plan: bool = True, channels_last: bool = True, symbolic_input_dims: bool = False,
            denormals: Optional[str] = None, weights: Optional[str] = None, gpu_attention: Optional[str] = None,
            gpu_attention_split_keys: Optional[int] = None, gpu_code: Optional[str] = None,
            ptxas: Optional[str] = None, check_accuracy: bool = False, calibration=None,
            calibration_tokens=None, calibration_seed: Optional[int] = None,
            calibration_samples: Optional[int] = None, calibration_length: Optional[int] = None,
            calibration_dims: Optional[Iterable[str]] = None, max_error: Optional[float] = None,
            min_cosine: Optional[float] = None, min_top1: Optional[float] = None,
            max_perplexity_ratio: Optional[float] = None, notes: bool = False, print_memory_plan: bool = False,
            print_layouts: bool = False, emit: Optional[str] = None, threads: int = 0):
    """Compiles an ONNX model with kiln's compiler, in this process.

    ``model``: a path, the model's bytes, or an ``onnx.ModelProto`` (bytes are written to a
    temporary file first, so external data must be a path). ``output``: where the artifact goes;
    then the path is returned. Without it the artifact goes to a temporary directory and the
    loaded :class:`kiln.Model` is returned (the directory is removed with the model; ``threads``
    is its kernel threads). ``emit``: 'graph', 'linalg', 'bufferized', 'mlir-llvm', 'llvm' or
    'asm' returns that phase's IR as text instead.

    Options, kiln-compile's flags in Python spelling (docs/tools.md): ``target`` ('x86', 'cuda',
    'cuda-emulated', 'x86-scalar'), ``target_cpu`` (e.g. 'x86-64-v3'; default the host),
    ``gpu_arch``, ``precision``, ``gpu_attention``, ``gpu_attention_split_keys``, ``gpu_code``,
    ``ptxas``, ``quantize`` ('int8', 'int4', 'int8-dynamic'), ``quantize_group``,
    ``quantize_scale``, ``quantize_keep``, ``max_context``, ``kv_cache``, ``fusion``,
    ``memory_plan``, ``channels_last``, ``symbolic_input_dims``, ``denormals`` ('flush', 'keep'),
    ``weights``, the accuracy check
    (``check_accuracy``, ``calibration``, ``calibration_tokens``, ``calibration_seed``,
    ``calibration_samples``, ``calibration_length``, ``calibration_dims``, ``max_error``,
    ``min_cosine``, ``min_top1``, ``max_perplexity_ratio``; its report: :func:`compile_report`),
    and ``notes`` (quantization notes, on stderr), ``print_memory_plan`` and ``print_layouts``
    (printed by the compiler's passes on this process's stdout, as kiln-compile prints them).

    Raises :class:`kiln.CompileError` with the compiler's one-line message (an unsupported op
    names the op, its node and the opset) and ``TypeError`` for an unknown keyword.
    """
    # Every keyword above but model, output, emit and threads is a compiler option (_OPTIONS).
    arguments = dict(locals())
    options = {k: v for k, v in arguments.items() if k in _OPTIONS}
    result, _ = _compile(model, output, emit, threads, options)
    return result


def compile_report(model, output, **options) -> str:
    """Compiles like :func:`compile` with an ``output`` path and returns the text the compiler
    reports (the accuracy check's table with ``check_accuracy`` or its thresholds)."""
    _, printed = _compile(model, output, None, 0, options)
    return printed


def _compile(model, output, emit, threads, options):
    compiler = _require_compiler()
    holders = []
    try:
        model_path = _model_path(model, holders)
        out_dir = None
        if emit:
            out_path = ""
        elif output is not None:
            out_path = os.fspath(output)
        else:
            out_dir = tempfile.mkdtemp(prefix="kiln-artifact-")
            out_path = os.path.join(out_dir, "model.kiln")
        try:
            printed = compiler.compile(_options(model_path, out_path, emit or "", options))
        except TypeError as e:
            if out_dir:
                shutil.rmtree(out_dir, ignore_errors=True)
            # "option maxContext: ..." -> the keyword the caller wrote.
            message = str(e)
            for keyword, field in _OPTIONS.items():
                message = message.replace(f"option {field}:", f"option {keyword}:")
            raise TypeError(message) from None
        except ValueError as e:
            if out_dir:
                shutil.rmtree(out_dir, ignore_errors=True)
            raise CompileError(str(e)) from None
        if emit:
            return printed, printed
        if output is not None:
            return out_path, printed
        from .model import Model
        try:
            m = Model(out_path, threads=threads)
        except BaseException:
            shutil.rmtree(out_dir, ignore_errors=True)
            raise
        # The directory lives as long as the model (a session may reload it for another thread count).
        m._keepalive = weakref.finalize(m, shutil.rmtree, out_dir, True)
        return m, printed
    finally:
        for d in holders:
            shutil.rmtree(d, ignore_errors=True)


def list_ops() -> list:
    """The ONNX ops the importer supports (``kiln-compile --list-ops``)."""
    return _require_compiler().compile({"listOps": True}).split()
