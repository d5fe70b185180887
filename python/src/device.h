// Tensors in GPU memory from Python: kiln.DeviceTensor (memory kiln allocates on a CUDA model's
// device) and other libraries' GPU arrays through __cuda_array_interface__ (torch, CuPy, Numba),
// both read in place as inputs and written in place by Session.run_into.
#ifndef KILN_PYTHON_DEVICE_H
#define KILN_PYTHON_DEVICE_H

#include "arrays.h"
#include "errors.h"
#include "kiln/kiln.h"
#include "model.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln_python {

namespace py = pybind11;

// The __cuda_array_interface__ type string of a dtype ("<f4"): numpy's for the dtype that holds it.
inline std::string typestrOf(kiln_dtype d) { return py::cast<std::string>(numpyDtype(d).attr("str")); }

// A tensor owning memory of a CUDA model's device (kiln_tensor_create_device). It keeps the model
// loaded while it lives.
struct DeviceTensor {
  TensorPtr tensor;

  // A copy of `array` (C-contiguous, of a dtype kiln has) on `model`'s GPU.
  DeviceTensor(const std::shared_ptr<Model> &model, py::array array, int dtypeCode) {
    const kiln_dtype dtype = kiln_dtype(dtypeCode);
    py::array a = py::array::ensure(
        py::module_::import("numpy").attr("ascontiguousarray")(array, py::arg("dtype") = numpyDtype(dtype)));
    if (!a)
      throw py::error_already_set();
    std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
    kiln_tensor *t = nullptr;
    check(kiln_tensor_create_device(model->model.get(), dtype, shape.data(), shape.size(), a.data(),
                                    size_t(a.nbytes()), &t));
    tensor.reset(t);
  }
  // Zeros of `shape`.
  DeviceTensor(const std::shared_ptr<Model> &model, const std::vector<int64_t> &shape, int dtypeCode) {
    const kiln_dtype dtype = kiln_dtype(dtypeCode);
    size_t bytes = kiln_dtype_size(dtype);
    for (int64_t d : shape)
      bytes *= size_t(d < 0 ? 0 : d);
    kiln_tensor *t = nullptr;
    check(kiln_tensor_create_device(model->model.get(), dtype, shape.data(), shape.size(), nullptr, bytes, &t));
    tensor.reset(t);
  }

  std::vector<int64_t> shape() const {
    const int64_t *s = kiln_tensor_shape(tensor.get());
    return std::vector<int64_t>(s, s + kiln_tensor_rank(tensor.get()));
  }
  std::string dtype() const { return kiln_dtype_name(kiln_tensor_dtype(tensor.get())); }
  uintptr_t dataPtr() const { return reinterpret_cast<uintptr_t>(kiln_tensor_data(tensor.get())); }
  // A host copy as a numpy array (bfloat16 as uint16 bits).
  py::array numpy() const {
    kiln_tensor *host = nullptr;
    check(kiln_tensor_copy_to_host(tensor.get(), &host));
    return outputArray(host, py::none());
  }
  // Version 3 of the CUDA array interface: C-contiguous (strides None), synchronized (the runs
  // that write it have returned, their copies waited for), so no stream.
  py::dict cudaArrayInterface() const {
    py::dict d;
    std::vector<int64_t> s = shape();
    d["shape"] = py::tuple(py::cast(s));
    d["typestr"] = typestrOf(kiln_tensor_dtype(tensor.get()));
    d["data"] = py::make_tuple(py::int_(dataPtr()), false);
    d["strides"] = py::none();
    d["version"] = 3;
    return d;
  }
};

// The kiln tensor for `value`, a GPU array of another library (__cuda_array_interface__): its
// memory wrapped in place (kiln_tensor_wrap_device). `what` names it in errors ("input 'x'").
// Null when `value` has no such interface.
inline TensorPtr wrapCudaArray(py::handle value, kiln_dtype want, const std::string &what) {
  if (!py::hasattr(value, "__cuda_array_interface__"))
    return nullptr;
  py::dict cai = value.attr("__cuda_array_interface__");
  const std::vector<int64_t> shape = py::cast<std::vector<int64_t>>(cai["shape"]);
  const std::string typestr = py::cast<std::string>(cai["typestr"]);
  if (typestr != typestrOf(want))
    invalid(what + ": expected " + kiln_dtype_name(want) + " (typestr '" + typestrOf(want) + "'), got a GPU array of '" +
            typestr + "'");
  // C-contiguous only: strides absent, or equal to the dense ones.
  if (cai.contains("strides") && !cai["strides"].is_none()) {
    const std::vector<int64_t> strides = py::cast<std::vector<int64_t>>(cai["strides"]);
    int64_t expected = int64_t(kiln_dtype_size(want));
    for (size_t i = shape.size(); i-- > 0;) {
      if (shape[i] > 1 && strides[i] != expected)
        invalid(what + ": the GPU array is not C-contiguous (strides " + std::string(py::str(cai["strides"])) + ")");
      expected *= shape[i];
    }
  }
  const py::tuple data = cai["data"];
  void *ptr = reinterpret_cast<void *>(py::cast<uintptr_t>(data[0]));
  size_t bytes = kiln_dtype_size(want);
  for (int64_t d : shape)
    bytes *= size_t(d < 0 ? 0 : d);
  kiln_tensor *t = nullptr;
  check(kiln_tensor_wrap_device(want, shape.data(), shape.size(), ptr, bytes, &t));
  return TensorPtr(t);
}

} // namespace kiln_python

#endif
