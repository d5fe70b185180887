// A loaded artifact and its signature, with what each run needs made once (names, dtypes).
#ifndef KILN_PYTHON_MODEL_H
#define KILN_PYTHON_MODEL_H

#include "arrays.h"
#include "errors.h"
#include "kiln/kiln.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln_python {

namespace py = pybind11;

struct TensorInfo {
  std::string name;
  std::string dtype; // the runtime's name: "float32", "bfloat16", "string", ...
  int dtypeCode = 0;
  py::list shape; // ints for static dims, the symbol (str) or None for symbolic ones
};

inline TensorInfo toInfo(const kiln_tensor_info &i) {
  TensorInfo t;
  t.name = i.name;
  t.dtype = kiln_dtype_name(i.dtype);
  t.dtypeCode = int(i.dtype);
  for (size_t d = 0; d < i.rank; ++d) {
    if (i.dims[d] >= 0)
      t.shape.append(py::int_(i.dims[d]));
    else if (i.dim_symbols && i.dim_symbols[d] && i.dim_symbols[d][0])
      t.shape.append(py::str(i.dim_symbols[d]));
    else
      t.shape.append(py::none());
  }
  return t;
}

using ModelPtr = std::shared_ptr<kiln_model>;

struct Model {
  ModelPtr model;
  std::string path;
  int32_t threads = 0; // as requested (0 = all cores)
  std::vector<kiln_tensor_info> inputInfo, outputInfo;
  std::vector<TensorInfo> inputs, outputs;
  bool decoder = false;
  // Made once so that a run looks names up and builds arrays without parsing strings: the
  // per-call cost is what bench/python_overhead.py measures.
  std::vector<py::str> inputNames, outputNames;
  std::vector<py::object> inputDtypes, outputDtypes; // numpy dtypes; None for strings

  Model(const std::string &p, int32_t numThreads, std::optional<std::string> weightsDir)
      : path(p), threads(numThreads) {
    if (numThreads < 0)
      invalid("threads must be >= 0 (0: every core), got " + std::to_string(numThreads));
    kiln_model_options o;
    kiln_model_options_init(&o);
    o.num_threads = numThreads;
    o.weights_dir = weightsDir ? weightsDir->c_str() : nullptr;
    kiln_model *m = nullptr;
    {
      py::gil_scoped_release nogil; // loading maps the file and links the code: can take a while
      check(kiln_model_load(p.c_str(), &o, &m));
    }
    model = ModelPtr(m, kiln_model_destroy);
    for (size_t i = 0; i < kiln_model_input_count(m); ++i) {
      kiln_tensor_info info;
      check(kiln_model_input_info(m, i, &info));
      inputInfo.push_back(info);
      inputs.push_back(toInfo(info));
    }
    for (size_t i = 0; i < kiln_model_output_count(m); ++i) {
      kiln_tensor_info info;
      check(kiln_model_output_info(m, i, &info));
      outputInfo.push_back(info);
      outputs.push_back(toInfo(info));
    }
    decoder = kiln_model_is_decoder(m) != 0;
    for (const auto &i : inputInfo) {
      inputNames.emplace_back(i.name);
      inputDtypes.push_back(i.dtype == KILN_DTYPE_STRING ? py::none() : py::object(numpyDtype(i.dtype)));
    }
    for (const auto &o : outputInfo) {
      outputNames.emplace_back(o.name);
      outputDtypes.push_back(o.dtype == KILN_DTYPE_STRING ? py::none() : py::object(numpyDtype(o.dtype)));
    }
  }

  py::dict metadata() const {
    kiln_model_metadata md;
    kiln_model_get_metadata(model.get(), &md);
    py::dict d;
    d["format_version"] = md.format_version;
    d["abi_version"] = md.abi_version;
    d["compiler_version"] = md.compiler_version ? md.compiler_version : "";
    d["source_sha256"] = md.source_sha256 ? md.source_sha256 : "";
    d["producer"] = md.producer ? md.producer : "";
    d["opset_version"] = md.opset_version;
    d["target_triple"] = md.target_triple ? md.target_triple : "";
    d["target_cpu"] = md.target_cpu ? md.target_cpu : "";
    py::list features;
    for (size_t i = 0; i < md.cpu_feature_count; ++i)
      features.append(md.cpu_features[i]);
    d["cpu_features"] = features;
    d["weight_count"] = md.weight_count;
    d["weights_bytes"] = md.weights_bytes;
    d["code_bytes"] = md.code_bytes;
    d["kernel_count"] = md.kernel_count;
    d["num_threads"] = md.num_threads;
    return d;
  }

  // (name, ONNX nodes) of every kernel, in the order profile events index them.
  std::vector<std::pair<std::string, std::string>> kernels() const {
    kiln_model_metadata md;
    kiln_model_get_metadata(model.get(), &md);
    std::vector<std::pair<std::string, std::string>> k;
    for (size_t i = 0; i < md.kernel_count; ++i) {
      const char *n = kiln_model_kernel_name(model.get(), i);
      const char *s = kiln_model_kernel_nodes(model.get(), i);
      k.emplace_back(n ? n : "", s ? s : "");
    }
    return k;
  }
};

} // namespace kiln_python

#endif
