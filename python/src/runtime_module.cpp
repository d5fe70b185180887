// kiln._runtime: the Python binding of the runtime's C API (kiln.h, tokenizer.h). Models, sessions,
// tensors exchanged with numpy without copies where the layout allows, decoding and the tokenizer.
// Only the public C API is used; the Python-facing conveniences (ORT drop-in, cache, profile
// tables) live in the pure-Python part of the package. This file is the module's table of
// classes and functions; the work is in the headers beside it, one concern each.
#include "arrays.h"
#include "device.h"
#include "errors.h"
#include "generation.h"
#include "model.h"
#include "session.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace py = pybind11;
using namespace kiln_python;

PYBIND11_MODULE(_runtime, m) {
  m.doc() = "kiln's runtime binding (C API). Use the kiln package, not this module.";
  m.attr("__version__") = kiln_runtime_version();
  m.attr("API_VERSION") = KILN_API_VERSION;

  // Errors become instances of kiln.errors classes, chosen by the C code.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const KilnError &e) {
      py::object cls = py::module_::import("kiln.errors").attr("_class_for_code")(e.code);
      PyErr_SetObject(cls.ptr(), cls(e.message, e.code).ptr());
    }
  });

  py::class_<TensorInfo>(m, "TensorInfo", "One input or output of a model's signature.")
      .def_readonly("name", &TensorInfo::name)
      .def_readonly("dtype", &TensorInfo::dtype, "The runtime's dtype name: 'float32', 'bfloat16', 'string', ...")
      .def_readonly("dtype_code", &TensorInfo::dtypeCode, "The ONNX TensorProto.DataType code.")
      .def_readonly("shape", &TensorInfo::shape, "Static dims as int; symbolic ones as their name (str) or None.")
      .def("__repr__", [](const TensorInfo &t) {
        return "TensorInfo(name=" + std::string(py::repr(py::str(t.name))) + ", dtype='" + t.dtype +
               "', shape=" + std::string(py::repr(t.shape)) + ")";
      });

  py::class_<Model, std::shared_ptr<Model>>(m, "Model", "A loaded artifact (the C API's kiln_model); see kiln.Model.")
      .def(py::init<const std::string &, int32_t, std::optional<std::string>>(), py::arg("path"),
           py::arg("threads") = 0, py::arg("weights_dir") = py::none())
      .def_readonly("path", &Model::path)
      .def_readonly("threads", &Model::threads)
      .def_readonly("inputs", &Model::inputs)
      .def_readonly("outputs", &Model::outputs)
      .def_readonly("is_decoder", &Model::decoder)
      .def_property_readonly("metadata", &Model::metadata)
      .def_property_readonly("kernels", &Model::kernels);

  py::class_<DeviceTensor>(m, "DeviceTensor",
                           "A tensor in the GPU memory of a --target=cuda model's device (kiln_tensor_create_device); "
                           "see kiln.DeviceTensor.")
      .def(py::init<const std::shared_ptr<Model> &, py::array, int>(), py::arg("model"), py::arg("array"),
           py::arg("dtype_code"))
      .def(py::init<const std::shared_ptr<Model> &, const std::vector<int64_t> &, int>(), py::arg("model"),
           py::arg("shape"), py::arg("dtype_code"))
      .def_property_readonly("shape", [](const DeviceTensor &t) { return py::tuple(py::cast(t.shape())); })
      .def_property_readonly("dtype", &DeviceTensor::dtype)
      .def_property_readonly("data_ptr", &DeviceTensor::dataPtr)
      .def_property_readonly("__cuda_array_interface__", &DeviceTensor::cudaArrayInterface)
      .def("numpy", &DeviceTensor::numpy, "A host copy as a numpy array (bfloat16 as uint16 bits).");

  py::class_<Session>(m, "Session", "The C API's kiln_session; see kiln.Session.")
      .def(py::init<std::shared_ptr<Model>>(), py::arg("model"))
      .def("run", &Session::run, py::arg("feeds"), py::arg("profile") = false,
           "run(feeds: dict[str, numpy.ndarray], profile=False) -> dict[str, numpy.ndarray]\n\n"
           "Runs the model on the named inputs (every input, numpy arrays of its dtype; bfloat16 as\n"
           "uint16 bits, strings as str/bytes arrays). C-contiguous inputs are read in place; outputs\n"
           "view the runtime's buffers. With profile=True returns (outputs, kiln.Profile).")
      .def("run_into", &Session::runInto, py::arg("feeds"), py::arg("outputs"),
           "run_into(feeds, outputs: dict[str, DeviceTensor | GPU array | numpy.ndarray]) -> None\n\n"
           "Runs the model writing every output where `outputs` says (kiln_session_run_into): into\n"
           "a kiln.DeviceTensor or another library's GPU array (__cuda_array_interface__) it stays on\n"
           "the GPU; into a C-contiguous writeable numpy array it is copied there. Each of the\n"
           "output's dtype and exact shape. Feeds may be DeviceTensors or GPU arrays too.")
      .def_readonly("_model", &Session::model);

  py::class_<Tokenizer, std::shared_ptr<Tokenizer>>(
      m, "Tokenizer",
      "A Hugging Face tokenizer.json with a byte-level BPE model (GPT-2, Llama 3, Qwen).\n\n"
      "Tokenizer.from_file(path) / Tokenizer.from_str(json); encode(text, add_special=True,\n"
      "parse_special=False) -> list[int]; decode(ids, skip_special=False) -> str; vocab_size;\n"
      "eos_id (the id that ends a generation, found as kiln-run generate finds it); token_to_id,\n"
      "id_to_token, is_special. Thread-safe. Errors: kiln.ArtifactIOError (unreadable file),\n"
      "kiln.InvalidArgumentError (bad JSON, an id outside the vocabulary), kiln.IncompatibleError.")
      .def_static("from_file", &Tokenizer::fromFile, py::arg("path"))
      .def_static("from_str", &Tokenizer::fromStr, py::arg("json"))
      .def("encode", &Tokenizer::encode, py::arg("text"), py::arg("add_special") = true,
           py::arg("parse_special") = false)
      .def("decode", &Tokenizer::decode, py::arg("ids"), py::arg("skip_special") = false)
      .def_property_readonly("vocab_size", [](const Tokenizer &t) { return kiln_tokenizer_vocab_size(t.tok.get()); })
      .def_property_readonly("eos_id", &Tokenizer::eos)
      .def(
          "token_to_id",
          [](const Tokenizer &t, const std::string &s) -> std::optional<int32_t> {
            int32_t id = kiln_tokenizer_token_to_id(t.tok.get(), s.c_str());
            return id >= 0 ? std::optional<int32_t>(id) : std::nullopt;
          },
          py::arg("token"))
      .def(
          "id_to_token",
          [](const Tokenizer &t, int32_t id) -> std::optional<std::string> {
            const char *s = kiln_tokenizer_id_to_token(t.tok.get(), id);
            return s ? std::optional<std::string>(s) : std::nullopt;
          },
          py::arg("id"))
      .def(
          "is_special", [](const Tokenizer &t, int32_t id) { return kiln_tokenizer_is_special(t.tok.get(), id) != 0; },
          py::arg("id"));

  py::class_<Generator>(m, "Generator", "The C API's kiln_generator, stepped token by token; see kiln.Generator.")
      .def(py::init<std::shared_ptr<Model>, int64_t, std::shared_ptr<Tokenizer>>(), py::arg("model"),
           py::arg("max_context") = 0, py::arg("tokenizer") = nullptr)
      .def("_start", &Generator::start)
      .def("_next", &Generator::next)
      .def("_generate_batch", &Generator::generateBatch)
      .def(
          "cancel",
          [](Generator &g) {
            g.cancelled = true;
            kiln_generator_cancel(g.gen);
          },
          "Stops the generation after its current step; safe from any thread.")
      .def_property_readonly("_active", [](const Generator &g) { return g.active; })
      .def_property_readonly("stats", &Generator::stats)
      .def_property_readonly("finish_reason", [](const Generator &g) { return g.finish; })
      .def_property_readonly("vocab_size", [](const Generator &g) { return kiln_generator_vocab_size(g.gen); })
      .def_property_readonly("max_context", [](const Generator &g) { return kiln_generator_max_context(g.gen); })
      .def_property_readonly("position", [](const Generator &g) { return kiln_generator_position(g.gen); })
      .def_readonly("tokenizer", &Generator::tokenizer);

  m.def(
      "_tensor_data",
      [](py::object capsule) -> py::object {
        if (!PyCapsule_IsValid(capsule.ptr(), kTensorCapsule))
          return py::none();
        auto *t = static_cast<kiln_tensor *>(PyCapsule_GetPointer(capsule.ptr(), kTensorCapsule));
        return py::int_(reinterpret_cast<uintptr_t>(kiln_tensor_data(t)));
      },
      "The data address of the kiln_tensor an output array's base capsule owns (None for another object).");
  m.def("dtype_size", [](int code) { return kiln_dtype_size(kiln_dtype(code)); });
}
