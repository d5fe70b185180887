// numpy <-> kiln tensors: dtypes, outputs as arrays over the runtime's buffers, string elements.
#ifndef KILN_PYTHON_ARRAYS_H
#define KILN_PYTHON_ARRAYS_H

#include "errors.h"
#include "kiln/kiln.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

namespace kiln_python {

namespace py = pybind11;

// The numpy dtype holding a kiln dtype's elements. bfloat16 has no numpy dtype: its bits travel as
// uint16 (documented). Strings are object arrays of str.
inline py::dtype numpyDtype(kiln_dtype d) {
  switch (d) {
  case KILN_DTYPE_FLOAT32: return py::dtype("float32");
  case KILN_DTYPE_UINT8: return py::dtype("uint8");
  case KILN_DTYPE_INT8: return py::dtype("int8");
  case KILN_DTYPE_UINT16: return py::dtype("uint16");
  case KILN_DTYPE_INT16: return py::dtype("int16");
  case KILN_DTYPE_INT32: return py::dtype("int32");
  case KILN_DTYPE_INT64: return py::dtype("int64");
  case KILN_DTYPE_STRING: return py::dtype("object");
  case KILN_DTYPE_BOOL: return py::dtype("bool");
  case KILN_DTYPE_FLOAT16: return py::dtype("float16");
  case KILN_DTYPE_FLOAT64: return py::dtype("float64");
  case KILN_DTYPE_UINT32: return py::dtype("uint32");
  case KILN_DTYPE_UINT64: return py::dtype("uint64");
  case KILN_DTYPE_BFLOAT16: return py::dtype("uint16");
  default: break;
  }
  invalid(std::string("dtype ") + kiln_dtype_name(d) + " has no numpy equivalent");
}

struct TensorDeleter {
  void operator()(kiln_tensor *t) const { kiln_tensor_destroy(t); }
};
using TensorPtr = std::unique_ptr<kiln_tensor, TensorDeleter>;

constexpr const char *kTensorCapsule = "kiln_tensor";

// A numpy array viewing an output tensor's memory; the capsule owns the tensor, so the array
// (and any view of it) keeps the runtime's buffer alive and frees it when the last one goes.
inline py::array outputArray(kiln_tensor *raw, const py::object &cachedDtype) {
  TensorPtr t(raw);
  const kiln_dtype dt = kiln_tensor_dtype(raw);
  const size_t rank = kiln_tensor_rank(raw);
  const int64_t *dims = kiln_tensor_shape(raw);
  std::vector<py::ssize_t> shape(dims, dims + rank);
  if (dt == KILN_DTYPE_STRING) {
    // Python strings are objects: copied, and the tensor released here.
    py::array out(py::dtype("object"), shape);
    const int64_t n = kiln_tensor_element_count(raw);
    auto **items = static_cast<PyObject **>(out.mutable_data());
    for (int64_t i = 0; i < n; ++i) {
      size_t size = 0;
      const char *s = kiln_tensor_string(raw, i, &size);
      py::str v = py::reinterpret_steal<py::str>(PyUnicode_DecodeUTF8(s ? s : "", py::ssize_t(size), "replace"));
      if (!v)
        throw py::error_already_set();
      Py_XDECREF(items[i]);
      items[i] = v.release().ptr();
    }
    return out;
  }
  py::dtype npdt = cachedDtype.is_none() ? numpyDtype(dt) : py::reinterpret_borrow<py::dtype>(cachedDtype);
  void *data = kiln_tensor_data(raw);
  if (!data || kiln_tensor_element_count(raw) == 0)
    return py::array(npdt, shape); // nothing to share
  // Named so that kiln._runtime._tensor_data can find the tensor behind an array (the tests' proof
  // that an output is the runtime's buffer).
  py::capsule owner(t.release(), kTensorCapsule, [](PyObject *o) {
    kiln_tensor_destroy(static_cast<kiln_tensor *>(PyCapsule_GetPointer(o, kTensorCapsule)));
  });
  return py::array(npdt, shape, {}, data, owner);
}

// The bytes of a str/bytes element of a string input.
inline std::string stringItem(py::handle item, const std::string &name) {
  if (PyUnicode_Check(item.ptr())) {
    Py_ssize_t size = 0;
    const char *s = PyUnicode_AsUTF8AndSize(item.ptr(), &size);
    if (!s)
      throw py::error_already_set();
    return std::string(s, size_t(size));
  }
  if (PyBytes_Check(item.ptr()))
    return std::string(PyBytes_AS_STRING(item.ptr()), size_t(PyBytes_GET_SIZE(item.ptr())));
  invalid("input '" + name + "': string elements must be str or bytes, got " +
          std::string(py::str(py::type::of(item).attr("__name__"))));
}

} // namespace kiln_python

#endif
