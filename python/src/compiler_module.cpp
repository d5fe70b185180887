// kiln._compiler: kiln's compiler in-process (compiler/driver), for kiln.compile. Only in the `kiln`
// wheel: it links Debian's LLVM/MLIR shared libraries, which the `kiln-runtime` wheel must not need.
#include "compiler/driver/CompileOptions.h"
#include "compiler/driver/Driver.h"

#include "llvm/Support/raw_ostream.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace py = pybind11;

namespace {

// The driver keeps process-wide LLVM state (target registry, option tables): one compilation at a
// time. Python threads wait here with the GIL released.
std::mutex compileMutex;

// Reads the option named `key` from `o` (a dict of Python values) into `field`, if present.
// A value of the wrong type is a TypeError naming the option (kiln.compile maps the field back
// to its keyword).
template <typename T> T castOption(const py::dict &o, const char *key) {
  try {
    return py::cast<T>(o[key]);
  } catch (const py::cast_error &) {
    throw py::type_error(std::string("option ") + key + ": " + std::string(py::str(py::repr(o[key]))) +
                         " has the wrong type");
  }
}
template <typename T> void take(const py::dict &o, const char *key, T &field) {
  if (o.contains(key) && !o[key].is_none())
    field = castOption<T>(o, key);
}
template <typename T> void take(const py::dict &o, const char *key, std::optional<T> &field) {
  if (o.contains(key) && !o[key].is_none())
    field = castOption<T>(o, key);
}

} // namespace

PYBIND11_MODULE(_compiler, m) {
  m.doc() = "kiln's compiler (compiler/driver) in-process. Use kiln.compile, not this module.";
  m.attr("version") = kiln::driver::compilerVersion();

  // options: kiln-compile's flags as CompileOptions field names (Python spells them in kiln/compiling.py).
  // Returns what the request printed (the op list, a report, IR); raises ValueError with the
  // driver's one-line message on failure, which kiln.compile turns into kiln.CompileError.
  m.def(
      "compile",
      [](const py::dict &o) {
        kiln::driver::CompileOptions c;
        take(o, "modelPath", c.modelPath);
        take(o, "outPath", c.outPath);
        take(o, "emit", c.emit);
        take(o, "target", c.target);
        take(o, "targetCpu", c.targetCpu);
        take(o, "gpuArch", c.gpuArch);
        take(o, "precision", c.precision);
        take(o, "gpuAttention", c.gpuAttention);
        take(o, "gpuAttentionSplitKeys", c.gpuAttentionSplitKeys);
        take(o, "ptxas", c.ptxas);
        take(o, "gpuCode", c.gpuCode);
        take(o, "kvCache", c.kvCache);
        take(o, "maxContext", c.maxContext);
        take(o, "fusion", c.fusion);
        take(o, "memoryPlan", c.memoryPlan);
        take(o, "channelsLast", c.channelsLast);
        take(o, "printMemoryPlan", c.printMemoryPlan);
        take(o, "printLayouts", c.printLayouts);
        take(o, "denormals", c.denormals);
        take(o, "notes", c.notes);
        take(o, "quantize", c.quantize);
        take(o, "quantizeGroup", c.quantizeGroup);
        take(o, "quantizeScale", c.quantizeScale);
        take(o, "quantizeKeep", c.quantizeKeep);
        take(o, "symbolicInputDims", c.symbolicInputDims);
        take(o, "weights", c.weights);
        take(o, "checkAccuracy", c.checkAccuracy);
        take(o, "calibration", c.calibration);
        take(o, "calibrationTokens", c.calibrationTokens);
        take(o, "calibrationSeed", c.calibrationSeed);
        take(o, "calibrationSamples", c.calibrationSamples);
        take(o, "calibrationLength", c.calibrationLength);
        take(o, "calibrationDims", c.calibrationDims);
        take(o, "maxError", c.maxError);
        take(o, "minCosine", c.minCosine);
        take(o, "minTop1", c.minTop1);
        take(o, "maxPerplexityRatio", c.maxPerplexityRatio);
        take(o, "listOps", c.listOps);
        take(o, "printPipeline", c.printPipeline);
        std::string printed, error;
        bool ok = false;
        {
          py::gil_scoped_release nogil;
          std::lock_guard<std::mutex> lock(compileMutex);
          llvm::raw_string_ostream out(printed);
          ok = kiln::driver::compile(c, out, &error);
          out.flush();
        }
        if (!ok) {
          for (char &ch : error)
            if (ch == '\n')
              ch = ' ';
          throw py::value_error(error);
        }
        return printed;
      },
      py::arg("options"));
}
