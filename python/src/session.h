// kiln_session from Python: feeds in (wrapped without copies where the layout allows), outputs
// out as arrays over the runtime's buffers, the GIL released while the model runs, profiles.
#ifndef KILN_PYTHON_SESSION_H
#define KILN_PYTHON_SESSION_H

#include "arrays.h"
#include "device.h"
#include "errors.h"
#include "kiln/kiln.h"
#include "model.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace kiln_python {

namespace py = pybind11;

struct Session {
  std::shared_ptr<Model> model;
  kiln_session *session = nullptr;
  bool profiling = false;
  // A call between its profiling switch and reading its profile. Only touched with the GIL held,
  // so a second thread's call is refused here, before it could switch profiling under a run.
  bool running = false;
  py::object profileFactory; // kiln._profile.Profile, looked up once

  explicit Session(std::shared_ptr<Model> m) : model(std::move(m)) {
    check(kiln_session_create(model->model.get(), &session));
  }
  ~Session() { kiln_session_destroy(session); }
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  // Makes the runtime tensor for one input. `keep` holds the array whose memory the tensor views.
  TensorPtr inputTensor(size_t index, py::handle value, std::vector<py::object> &keep) {
    const kiln_tensor_info &info = model->inputInfo[index];
    const std::string name = info.name;
    if (info.dtype == KILN_DTYPE_STRING) {
      py::array a = py::array::ensure(value);
      if (!a)
        invalid("input '" + name + "': expected an array of strings, got " +
                std::string(py::str(py::type::of(value).attr("__name__"))));
      const char kind = a.dtype().kind();
      if (kind != 'O' && kind != 'U' && kind != 'S')
        invalid("input '" + name + "': expected string (an object or str array), got " +
                std::string(py::str(a.dtype())));
      py::array flat = py::array::ensure(a.attr("ravel")());
      const py::ssize_t n = flat.size();
      std::vector<std::string> items;
      items.reserve(size_t(n));
      for (py::ssize_t i = 0; i < n; ++i) {
        py::object item = flat.attr("item")(i);
        items.push_back(stringItem(item, name));
      }
      std::vector<const char *> ptrs;
      std::vector<size_t> sizes;
      for (const std::string &s : items) {
        ptrs.push_back(s.data());
        sizes.push_back(s.size());
      }
      std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
      kiln_tensor *t = nullptr;
      check(kiln_tensor_create_strings(shape.data(), shape.size(), ptrs.data(), sizes.data(), &t));
      return TensorPtr(t);
    }
    // Another library's GPU array (torch, CuPy): read where it is.
    if (TensorPtr t = wrapCudaArray(value, info.dtype, "input '" + name + "'"))
      return t;
    py::array a;
    if (py::isinstance<py::array>(value)) {
      a = py::reinterpret_borrow<py::array>(value);
    } else if (PyObject_CheckBuffer(value.ptr()) || py::hasattr(value, "__array_interface__")) {
      // Any buffer-protocol or array-interface object (memoryview, array.array, other array
      // libraries' CPU tensors): numpy views it without a copy.
      a = py::array::ensure(py::module_::import("numpy").attr("asarray")(value));
      if (!a)
        throw py::error_already_set();
    } else {
      invalid("input '" + name + "': expected a numpy array (or a buffer-protocol object), got " +
              std::string(py::str(py::type::of(value).attr("__name__"))));
    }
    const auto want = py::reinterpret_borrow<py::dtype>(model->inputDtypes[index]);
    if (!a.dtype().is(want) && !a.dtype().equal(want)) {
      std::string expected = kiln_dtype_name(info.dtype);
      if (info.dtype == KILN_DTYPE_BFLOAT16)
        expected += " (as uint16 bits)";
      invalid("input '" + name + "': expected " + expected + ", got " + std::string(py::str(a.dtype())));
    }
    if (size_t(a.ndim()) != info.rank)
      invalid("input '" + name + "': expected rank " + std::to_string(info.rank) + ", got " + std::to_string(a.ndim()) +
              " (shape " + std::string(py::str(py::tuple(a.attr("shape")))) + ")");
    // Wrapped in place when C-contiguous and aligned; otherwise one contiguous copy. A decoder's
    // KV caches are written in place by the run: a read-only array is copied rather than written.
    const int flags = py::detail::array_proxy(a.ptr())->flags;
    const bool contiguous = (flags & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_) != 0;
    const bool aligned = (flags & py::detail::npy_api::NPY_ARRAY_ALIGNED_) != 0;
    const bool writeable = (flags & py::detail::npy_api::NPY_ARRAY_WRITEABLE_) != 0;
    if (!contiguous || !aligned || (model->decoder && !writeable))
      a = py::array::ensure(
          py::module_::import("numpy").attr("array")(a, py::arg("order") = "C", py::arg("copy") = true));
    keep.push_back(a);
    std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
    const size_t bytes = size_t(a.nbytes());
    void *data = const_cast<void *>(a.data());
    kiln_tensor *t = nullptr;
    if (bytes == 0) // kiln_tensor_wrap refuses NULL data; an empty tensor has nothing to copy
      check(kiln_tensor_create_copy(info.dtype, shape.data(), shape.size(), nullptr, 0, &t));
    else
      check(kiln_tensor_wrap(info.dtype, shape.data(), shape.size(), data, bytes, &t));
    return TensorPtr(t);
  }

  // Reports a feed key that is no input (first, so that a typo does not read as "missing"), then
  // a missing input.
  void checkNames(const py::dict &feeds, const std::vector<PyObject *> &values) const {
    const auto &infos = model->inputInfo;
    for (auto item : feeds) {
      if (!PyUnicode_Check(item.first.ptr()))
        invalid("feed keys must be input names (str), got " + std::string(py::str(py::repr(item.first))));
      std::string key = py::cast<std::string>(item.first);
      bool known = std::any_of(infos.begin(), infos.end(), [&](const kiln_tensor_info &i) { return key == i.name; });
      if (!known) {
        std::string names;
        for (const auto &i : infos)
          names += std::string(names.empty() ? "" : ", ") + i.name;
        invalid("input '" + key + "' is not an input of this model (inputs: " + names + ")");
      }
    }
    for (size_t i = 0; i < infos.size(); ++i)
      if (!values[i])
        invalid("input '" + std::string(infos[i].name) + "' is missing");
  }

  // The runtime tensors for `feeds` (name -> array, kiln.DeviceTensor or GPU array), in signature
  // order; `keep` and `owned` hold what they view until the run is done.
  std::vector<const kiln_tensor *> inputsFrom(const py::dict &feeds, std::vector<py::object> &keep,
                                              std::vector<TensorPtr> &owned) {
    const auto &infos = model->inputInfo;
    std::vector<const kiln_tensor *> in;
    owned.reserve(infos.size());
    in.reserve(infos.size());
    std::vector<PyObject *> values(infos.size(), nullptr);
    bool complete = true;
    for (size_t i = 0; i < infos.size(); ++i) {
      values[i] = PyDict_GetItemWithError(feeds.ptr(), model->inputNames[i].ptr()); // borrowed
      if (!values[i] && PyErr_Occurred())
        throw py::error_already_set();
      complete = complete && values[i];
    }
    // Every input found and nothing else given: the common case needs no look at the keys.
    if (!complete || size_t(PyDict_Size(feeds.ptr())) != infos.size())
      checkNames(feeds, values);
    for (size_t i = 0; i < infos.size(); ++i) {
      py::handle value = values[i];
      if (py::isinstance<DeviceTensor>(value)) { // kiln's own GPU memory, read in place
        keep.push_back(py::reinterpret_borrow<py::object>(value));
        in.push_back(value.cast<DeviceTensor &>().tensor.get());
        continue;
      }
      owned.push_back(inputTensor(i, value, keep));
      in.push_back(owned.back().get());
    }
    return in;
  }

  // One call at a time per session (the flag is only touched with the GIL held).
  struct Running {
    bool &flag;
    explicit Running(bool &f) : flag(f) {
      if (flag)
        throw KilnError{KILN_ERROR_BUSY, "the session is already running on another thread (use one session per thread)"};
      flag = true;
    }
    ~Running() { flag = false; }
  };

  // run_into: feeds as for run; outputs: name -> where each output goes (every output): a
  // kiln.DeviceTensor or another library's GPU array (the output stays on the GPU), or a
  // C-contiguous writeable numpy array; each of the output's dtype and exact shape.
  void runInto(py::dict feeds, py::dict outputs) {
    std::vector<py::object> keep;
    std::vector<TensorPtr> owned;
    std::vector<const kiln_tensor *> in = inputsFrom(feeds, keep, owned);
    const auto &infos = model->outputInfo;
    for (auto item : outputs) {
      const std::string key = py::cast<std::string>(py::str(item.first));
      if (std::none_of(infos.begin(), infos.end(), [&](const kiln_tensor_info &i) { return key == i.name; }))
        invalid("output '" + key + "' is not an output of this model");
    }
    std::vector<TensorPtr> ownedOut;
    std::vector<kiln_tensor *> out;
    for (size_t i = 0; i < infos.size(); ++i) {
      const std::string name = infos[i].name, what = "output '" + name + "'";
      PyObject *v = PyDict_GetItemWithError(outputs.ptr(), model->outputNames[i].ptr()); // borrowed
      if (!v) {
        if (PyErr_Occurred())
          throw py::error_already_set();
        invalid(what + " is missing from outputs");
      }
      py::handle value(v);
      keep.push_back(py::reinterpret_borrow<py::object>(value));
      if (py::isinstance<DeviceTensor>(value)) {
        out.push_back(value.cast<DeviceTensor &>().tensor.get());
        continue;
      }
      if (TensorPtr t = wrapCudaArray(value, infos[i].dtype, what)) {
        ownedOut.push_back(std::move(t));
        out.push_back(ownedOut.back().get());
        continue;
      }
      if (!py::isinstance<py::array>(value))
        invalid(what + ": expected a kiln.DeviceTensor, a GPU array or a numpy array, got " +
                std::string(py::str(py::type::of(value).attr("__name__"))));
      py::array a = py::reinterpret_borrow<py::array>(value);
      const int flags = py::detail::array_proxy(a.ptr())->flags;
      if (!(flags & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_) || !(flags & py::detail::npy_api::NPY_ARRAY_WRITEABLE_))
        invalid(what + ": the numpy array must be C-contiguous and writeable");
      const auto want = py::reinterpret_borrow<py::dtype>(model->outputDtypes[i]);
      if (model->outputDtypes[i].is_none() || !a.dtype().equal(want))
        invalid(what + ": expected " + std::string(kiln_dtype_name(infos[i].dtype)) + ", got " +
                std::string(py::str(a.dtype())));
      std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
      kiln_tensor *t = nullptr;
      check(a.nbytes() == 0 ? kiln_tensor_create_copy(infos[i].dtype, shape.data(), shape.size(), nullptr, 0, &t)
                            : kiln_tensor_wrap(infos[i].dtype, shape.data(), shape.size(), a.mutable_data(),
                                               size_t(a.nbytes()), &t));
      ownedOut.emplace_back(t);
      out.push_back(t);
    }
    Running running_(running);
    if (profiling) {
      kiln_session_set_profiling(session, 0);
      profiling = false;
    }
    kiln_error *err = nullptr;
    {
      py::gil_scoped_release nogil;
      err = kiln_session_run_into(session, in.data(), in.size(), out.data(), out.size());
    }
    check(err);
  }

  // feeds: name -> array. Returns name -> array, or (that, Profile) with profile=True.
  py::object run(py::dict feeds, bool profile) {
    std::vector<py::object> keep;
    std::vector<TensorPtr> owned;
    std::vector<const kiln_tensor *> in = inputsFrom(feeds, keep, owned);
    std::vector<kiln_tensor *> out(model->outputInfo.size(), nullptr);
    Running running_(running);
    if (profile != profiling) {
      kiln_session_set_profiling(session, profile ? 1 : 0);
      profiling = profile;
    }
    kiln_error *err = nullptr;
    {
      py::gil_scoped_release nogil;
      err = kiln_session_run(session, in.data(), in.size(), out.data(), out.size());
    }
    check(err);
    py::dict result;
    // Own every output first so an exception converting one does not leak the rest.
    std::vector<TensorPtr> outs;
    for (kiln_tensor *t : out)
      outs.emplace_back(t);
    for (size_t i = 0; i < outs.size(); ++i)
      result[model->outputNames[i]] = outputArray(outs[i].release(), model->outputDtypes[i]);
    if (!profile)
      return std::move(result);
    size_t count = 0;
    const kiln_profile_event *events = kiln_session_profile(session, &count);
    py::list rows;
    for (size_t i = 0; i < count; ++i)
      rows.append(py::make_tuple(events[i].kernel_id, events[i].start_us, events[i].duration_us, events[i].work_items,
                                 events[i].flops, events[i].bytes));
    if (!profileFactory)
      profileFactory = py::module_::import("kiln._profile").attr("Profile");
    return py::make_tuple(result, profileFactory(py::cast(model->kernels()), rows));
  }
};

} // namespace kiln_python

#endif
