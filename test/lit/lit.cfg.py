# lit configuration for kiln's FileCheck tests (tools come from the build's bin/).
import os
import lit.formats

config.name = "kiln"
config.test_format = lit.formats.ShTest(True)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_binary_dir, "test", "lit")
config.environment["PATH"] = os.pathsep.join(
    [os.path.join(config.kiln_binary_dir, "bin"), config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])
config.substitutions.append(("%models", os.path.join(config.kiln_source_dir, "test", "models")))
config.substitutions.append(("%onnxdata", "/usr/share/libonnx-testdata/data"))
# MLIR's runtime support for mlir-runner (printMemref*), next to the LLVM tools.
config.substitutions.append(("%mlir_runner_utils", os.path.join(os.path.dirname(config.llvm_tools_dir), "lib",
                                                                "libmlir_runner_utils.so")))
config.excludes = ["lit.cfg.py", "lit.site.cfg.py.in"]
# `UNSUPPORTED: sanitized` marks a test of output bytes, not of memory, whose compiles the sanitizer job
# would only repeat (CI's budget, docs/ci.md): the Release job runs it.
if getattr(config, "kiln_sanitize", ""):
    config.available_features.add("sanitized")
