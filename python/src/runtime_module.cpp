// kiln._runtime: the Python binding of the runtime's C API (kiln.h, tokenizer.h). Models, sessions,
// tensors exchanged with numpy without copies where the layout allows, decoding and the tokenizer.
// Only the public C API is used; the Python-facing conveniences (ORT drop-in, cache, profile
// tables) live in the pure-Python part of the package.
#include "kiln/kiln.h"
#include "kiln/tokenizer.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace py = pybind11;

namespace {

// ------------------------------------------------------------------------------------- errors

// A C API error on its way to Python; translated to the kiln.errors class of its code.
struct KilnError {
  int code;
  std::string message;
};

void check(kiln_error *error) {
  if (!error)
    return;
  KilnError e{int(kiln_error_get_code(error)), kiln_error_message(error)};
  kiln_error_free(error);
  throw e;
}

[[noreturn]] void invalid(const std::string &message) {
  throw KilnError{KILN_ERROR_INVALID_ARGUMENT, message};
}

// ------------------------------------------------------------------------------------- dtypes

// The numpy dtype holding a kiln dtype's elements. bfloat16 has no numpy dtype: its bits travel as
// uint16 (documented). Strings are object arrays of str.
py::dtype numpyDtype(kiln_dtype d) {
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

// ------------------------------------------------------------------------------------- signature

struct TensorInfo {
  std::string name;
  std::string dtype; // the runtime's name: "float32", "bfloat16", "string", ...
  int dtypeCode = 0;
  py::list shape;    // ints for static dims, the symbol (str) or None for symbolic ones
};

TensorInfo toInfo(const kiln_tensor_info &i) {
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

// ------------------------------------------------------------------------------------- models

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

  Model(const std::string &p, int32_t numThreads, std::optional<std::string> weightsDir) : path(p), threads(numThreads) {
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

// ------------------------------------------------------------------------------------- sessions

struct TensorDeleter {
  void operator()(kiln_tensor *t) const { kiln_tensor_destroy(t); }
};
using TensorPtr = std::unique_ptr<kiln_tensor, TensorDeleter>;

constexpr const char *kTensorCapsule = "kiln_tensor";

// A numpy array viewing an output tensor's memory; the capsule owns the tensor, so the array
// (and any view of it) keeps the runtime's buffer alive and frees it when the last one goes.
py::array outputArray(kiln_tensor *raw, const py::object &cachedDtype) {
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
std::string stringItem(py::handle item, const std::string &name) {
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

struct Session {
  std::shared_ptr<Model> model;
  kiln_session *session = nullptr;
  bool profiling = false;
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
        invalid("input '" + name + "': expected string (an object or str array), got " + std::string(py::str(a.dtype())));
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
      invalid("input '" + name + "': expected rank " + std::to_string(info.rank) + ", got " +
              std::to_string(a.ndim()) + " (shape " + std::string(py::str(py::tuple(a.attr("shape")))) + ")");
    // Wrapped in place when C-contiguous and aligned; otherwise one contiguous copy. A decoder's
    // KV caches are written in place by the run: a read-only array is copied rather than written.
    const int flags = py::detail::array_proxy(a.ptr())->flags;
    const bool contiguous = (flags & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_) != 0;
    const bool aligned = (flags & py::detail::npy_api::NPY_ARRAY_ALIGNED_) != 0;
    const bool writeable = (flags & py::detail::npy_api::NPY_ARRAY_WRITEABLE_) != 0;
    if (!contiguous || !aligned || (model->decoder && !writeable))
      a = py::array::ensure(py::module_::import("numpy").attr("array")(a, py::arg("order") = "C", py::arg("copy") = true));
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

  // feeds: name -> array. Returns name -> array, or (that, Profile) with profile=True.
  py::object run(py::dict feeds, bool profile) {
    const auto &infos = model->inputInfo;
    std::vector<py::object> keep;
    std::vector<TensorPtr> owned;
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
      owned.push_back(inputTensor(i, values[i], keep));
      in.push_back(owned.back().get());
    }
    std::vector<kiln_tensor *> out(model->outputInfo.size(), nullptr);
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
      rows.append(py::make_tuple(events[i].kernel_id, events[i].start_us, events[i].duration_us,
                                 events[i].work_items, events[i].flops, events[i].bytes));
    if (!profileFactory)
      profileFactory = py::module_::import("kiln._profile").attr("Profile");
    return py::make_tuple(result, profileFactory(py::cast(model->kernels()), rows));
  }
};

// ------------------------------------------------------------------------------------- tokenizer

struct Tokenizer {
  std::shared_ptr<kiln_tokenizer> tok;

  static std::shared_ptr<Tokenizer> fromFile(const std::string &path) {
    kiln_tokenizer *t = nullptr;
    check(kiln_tokenizer_load(path.c_str(), &t));
    auto r = std::make_shared<Tokenizer>();
    r->tok = std::shared_ptr<kiln_tokenizer>(t, kiln_tokenizer_destroy);
    return r;
  }
  static std::shared_ptr<Tokenizer> fromStr(const std::string &json) {
    kiln_tokenizer *t = nullptr;
    check(kiln_tokenizer_load_from_memory(json.data(), json.size(), &t));
    auto r = std::make_shared<Tokenizer>();
    r->tok = std::shared_ptr<kiln_tokenizer>(t, kiln_tokenizer_destroy);
    return r;
  }
  std::vector<int32_t> encode(const std::string &text, bool addSpecial, bool parseSpecial) const {
    int32_t *ids = nullptr;
    size_t count = 0;
    uint32_t flags = (addSpecial ? KILN_TOKENIZER_ADD_SPECIAL : 0) | (parseSpecial ? KILN_TOKENIZER_PARSE_SPECIAL : 0);
    check(kiln_tokenizer_encode(tok.get(), text.data(), text.size(), flags, &ids, &count));
    std::vector<int32_t> r(ids, ids + count);
    kiln_tokenizer_ids_free(ids);
    return r;
  }
  py::str decode(const std::vector<int32_t> &ids, bool skipSpecial) const {
    char *text = nullptr;
    size_t len = 0;
    check(kiln_tokenizer_decode(tok.get(), ids.data(), ids.size(), skipSpecial ? KILN_TOKENIZER_SKIP_SPECIAL : 0,
                                &text, &len));
    py::str r(text, len);
    kiln_tokenizer_text_free(text);
    return r;
  }
  // The end-of-sequence id, found as kiln-run generate finds it; None if the vocabulary has none.
  std::optional<int32_t> eos() const {
    for (const char *n : {"<|endoftext|>", "</s>", "<|eot_id|>", "<|end_of_text|>", "<|im_end|>", "<eos>"}) {
      int32_t id = kiln_tokenizer_token_to_id(tok.get(), n);
      if (id >= 0)
        return id;
    }
    return std::nullopt;
  }
};

// ------------------------------------------------------------------------------------- generation

// One decoding run over a generator, stepped by Python's iterator protocol so that tokens stream
// as they are made. Mirrors kiln_generate's loop (stop tokens included, max_new_tokens, a full
// cache ends it) and measures the same statistics.
struct Generator {
  std::shared_ptr<Model> model;
  kiln_generator *gen = nullptr;
  std::shared_ptr<Tokenizer> tokenizer;
  std::atomic<bool> cancelled{false};
  std::mutex busy; // one call at a time: start/next release the GIL while the model runs

  // State of the current generation.
  bool active = false, first = true;
  int32_t maxNew = 0, produced = 0;
  std::vector<int32_t> stop;
  std::string finish = "none";
  kiln_tokenizer_stream *stream = nullptr;
  using Clock = std::chrono::steady_clock;
  Clock::time_point t0;
  size_t promptTokens = 0;
  double ttftMs = 0;
  std::vector<double> stepMs;

  Generator(std::shared_ptr<Model> m, int64_t maxContext, std::shared_ptr<Tokenizer> t)
      : model(std::move(m)), tokenizer(std::move(t)) {
    kiln_generator_options o;
    kiln_generator_options_init(&o);
    o.max_context = maxContext;
    check(kiln_generator_create(model->model.get(), &o, &gen));
  }
  ~Generator() {
    kiln_tokenizer_stream_destroy(stream);
    kiln_generator_destroy(gen);
  }

  void start(py::object prompt, int32_t maxNewTokens, float temperature, int32_t topK, float topP, float minP,
             float repetitionPenalty, uint64_t seed, std::optional<std::vector<int32_t>> stopIds, bool addSpecial) {
    std::vector<int32_t> ids;
    if (py::isinstance<py::str>(prompt)) {
      if (!tokenizer)
        invalid("a text prompt needs a tokenizer: model.generator(tokenizer=kiln.Tokenizer.from_file(...))");
      ids = tokenizer->encode(py::cast<std::string>(prompt), addSpecial, false);
    } else {
      try {
        ids = py::cast<std::vector<int32_t>>(prompt);
      } catch (const py::cast_error &) {
        invalid("the prompt must be text or a sequence of token ids (int32), got " +
                std::string(py::str(py::repr(prompt))).substr(0, 80));
      }
    }
    if (maxNewTokens < 1)
      invalid("max_new_tokens must be >= 1, got " + std::to_string(maxNewTokens));
    kiln_sampling_params sp;
    kiln_sampling_params_init(&sp);
    sp.temperature = temperature;
    sp.top_k = topK;
    sp.top_p = topP;
    sp.min_p = minP;
    sp.repetition_penalty = repetitionPenalty;
    sp.seed = seed;
    if (stopIds)
      stop = *stopIds;
    else if (tokenizer && tokenizer->eos())
      stop = {*tokenizer->eos()};
    else
      stop.clear();
    const int32_t *p = ids.data();
    const size_t len = ids.size();
    std::unique_lock<std::mutex> lock(busy, std::try_to_lock);
    if (!lock)
      throw KilnError{KILN_ERROR_BUSY, "the generator is in use by another thread"};
    cancelled = false;
    t0 = Clock::now();
    kiln_error *err = nullptr;
    {
      py::gil_scoped_release nogil;
      err = kiln_generator_start(gen, &p, &len, 1, &sp);
    }
    check(err);
    kiln_tokenizer_stream_destroy(stream);
    stream = nullptr;
    if (tokenizer)
      check(kiln_tokenizer_stream_create(tokenizer->tok.get(), KILN_TOKENIZER_SKIP_SPECIAL, &stream));
    active = true;
    first = true;
    maxNew = maxNewTokens;
    produced = 0;
    finish = "none";
    promptTokens = len;
    ttftMs = 0;
    stepMs.clear();
  }

  // The next (id, text) or nullopt when the generation has finished.
  std::optional<std::pair<int32_t, std::optional<py::str>>> next() {
    std::unique_lock<std::mutex> lock(busy, std::try_to_lock);
    if (!lock)
      throw KilnError{KILN_ERROR_BUSY, "the generator is in use by another thread"};
    if (!active)
      return std::nullopt;
    if (cancelled.load()) {
      end("cancelled");
      return std::nullopt;
    }
    if (!first && kiln_generator_position(gen) + 1 > kiln_generator_max_context(gen)) {
      end("context");
      return std::nullopt;
    }
    int32_t token = 0;
    kiln_error *err = nullptr;
    auto ts = Clock::now();
    {
      py::gil_scoped_release nogil;
      err = kiln_generator_next(gen, &token);
    }
    if (err) {
      active = false;
      check(err);
    }
    double ms = std::chrono::duration<double, std::milli>(Clock::now() - (first ? t0 : ts)).count();
    if (first)
      ttftMs = ms;
    else
      stepMs.push_back(ms);
    first = false;
    ++produced;
    std::optional<py::str> text;
    if (stream) {
      const char *s = nullptr;
      size_t n = 0;
      check(kiln_tokenizer_stream_push(stream, token, &s, &n));
      std::string piece(s, n);
      const bool stops = std::find(stop.begin(), stop.end(), token) != stop.end();
      if (stops || produced >= maxNew) {
        check(kiln_tokenizer_stream_flush(stream, &s, &n));
        piece.append(s, n);
      }
      text = py::str(piece);
    }
    if (std::find(stop.begin(), stop.end(), token) != stop.end())
      end("stop_token");
    else if (produced >= maxNew)
      end("length");
    return std::make_pair(token, text);
  }

  // A whole batch at once through kiln_generate (left-padded prompts, the C API's loop and
  // statistics), the GIL released throughout. Returns (tokens per sequence, finish reason per
  // sequence, stats).
  py::tuple generateBatch(const std::vector<std::vector<int32_t>> &prompts, int32_t maxNewTokens, float temperature,
                          int32_t topK, float topP, float minP, float repetitionPenalty, uint64_t seed,
                          std::optional<std::vector<int32_t>> stopIds) {
    if (prompts.empty())
      invalid("generate_batch needs at least one prompt");
    if (maxNewTokens < 1)
      invalid("max_new_tokens must be >= 1, got " + std::to_string(maxNewTokens));
    std::unique_lock<std::mutex> lock(busy, std::try_to_lock);
    if (!lock)
      throw KilnError{KILN_ERROR_BUSY, "the generator is in use by another thread"};
    kiln_generate_options o;
    kiln_generate_options_init(&o);
    kiln_sampling_params_init(&o.sampling);
    o.sampling.temperature = temperature;
    o.sampling.top_k = topK;
    o.sampling.top_p = topP;
    o.sampling.min_p = minP;
    o.sampling.repetition_penalty = repetitionPenalty;
    o.sampling.seed = seed;
    o.max_new_tokens = maxNewTokens;
    std::vector<int32_t> stops;
    if (stopIds)
      stops = *stopIds;
    else if (tokenizer && tokenizer->eos())
      stops = {*tokenizer->eos()};
    o.stop_tokens = stops.data();
    o.stop_token_count = stops.size();
    std::vector<const int32_t *> ptrs;
    std::vector<size_t> lens;
    for (const auto &p : prompts) {
      ptrs.push_back(p.data());
      lens.push_back(p.size());
    }
    active = false; // a step-by-step generation in progress ends here
    kiln_generation *g = nullptr;
    kiln_error *err = nullptr;
    {
      py::gil_scoped_release nogil;
      err = kiln_generate(gen, ptrs.data(), lens.data(), prompts.size(), &o, &g);
    }
    check(err);
    std::unique_ptr<kiln_generation, void (*)(kiln_generation *)> owner(g, kiln_generation_destroy);
    static const char *reasons[] = {"none", "stop_token", "length", "cancelled", "context"};
    py::list tokens, finish;
    for (size_t i = 0; i < kiln_generation_batch(g); ++i) {
      size_t n = 0;
      const int32_t *ids = kiln_generation_tokens(g, i, &n);
      tokens.append(py::cast(std::vector<int32_t>(ids, ids + n)));
      const int r = int(kiln_generation_finish_reason(g, i));
      finish.append(r >= 0 && r <= 4 ? reasons[r] : "none");
    }
    kiln_generation_stats st;
    kiln_generation_stats_get(g, &st);
    py::dict d;
    d["prompt_tokens"] = st.prompt_tokens;
    d["new_tokens"] = st.new_tokens;
    d["steps"] = st.steps;
    d["time_to_first_token_ms"] = st.time_to_first_token_ms;
    d["decode_ms"] = st.decode_ms;
    d["inter_token_median_ms"] = st.inter_token_median_ms;
    d["inter_token_p99_ms"] = st.inter_token_p99_ms;
    d["tokens_per_second"] = st.tokens_per_second;
    return py::make_tuple(tokens, finish, d);
  }

  void end(const char *reason) {
    active = false;
    finish = reason;
  }

  py::dict stats() const {
    py::dict d;
    double decode = 0;
    for (double ms : stepMs)
      decode += ms;
    std::vector<double> sorted = stepMs;
    std::sort(sorted.begin(), sorted.end());
    d["prompt_tokens"] = promptTokens;
    d["new_tokens"] = produced;
    d["steps"] = stepMs.size();
    d["time_to_first_token_ms"] = ttftMs;
    d["decode_ms"] = decode;
    d["inter_token_median_ms"] = sorted.empty() ? 0.0 : sorted[sorted.size() / 2];
    d["inter_token_p99_ms"] = sorted.empty() ? 0.0 : sorted[std::min(sorted.size() - 1, size_t(sorted.size() * 0.99))];
    d["tokens_per_second"] = decode > 0 ? (produced > 1 ? produced - 1 : 0) / (decode / 1000.0) : 0.0;
    d["finish_reason"] = finish;
    return d;
  }
};

} // namespace

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

  py::class_<Session>(m, "Session", "The C API's kiln_session; see kiln.Session.")
      .def(py::init<std::shared_ptr<Model>>(), py::arg("model"))
      .def("run", &Session::run, py::arg("feeds"), py::arg("profile") = false,
           "run(feeds: dict[str, numpy.ndarray], profile=False) -> dict[str, numpy.ndarray]\n\n"
           "Runs the model on the named inputs (every input, numpy arrays of its dtype; bfloat16 as\n"
           "uint16 bits, strings as str/bytes arrays). C-contiguous inputs are read in place; outputs\n"
           "view the runtime's buffers. With profile=True returns (outputs, kiln.Profile).")
      .def_readonly("_model", &Session::model);

  py::class_<Tokenizer, std::shared_ptr<Tokenizer>>(m, "Tokenizer",
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
      .def("token_to_id", [](const Tokenizer &t, const std::string &s) -> std::optional<int32_t> {
        int32_t id = kiln_tokenizer_token_to_id(t.tok.get(), s.c_str());
        return id >= 0 ? std::optional<int32_t>(id) : std::nullopt;
      }, py::arg("token"))
      .def("id_to_token", [](const Tokenizer &t, int32_t id) -> std::optional<std::string> {
        const char *s = kiln_tokenizer_id_to_token(t.tok.get(), id);
        return s ? std::optional<std::string>(s) : std::nullopt;
      }, py::arg("id"))
      .def("is_special", [](const Tokenizer &t, int32_t id) { return kiln_tokenizer_is_special(t.tok.get(), id) != 0; },
           py::arg("id"));

  py::class_<Generator>(m, "Generator", "The C API's kiln_generator, stepped token by token; see kiln.Generator.")
      .def(py::init<std::shared_ptr<Model>, int64_t, std::shared_ptr<Tokenizer>>(), py::arg("model"),
           py::arg("max_context") = 0, py::arg("tokenizer") = nullptr)
      .def("_start", &Generator::start)
      .def("_next", &Generator::next)
      .def("_generate_batch", &Generator::generateBatch)
      .def("cancel", [](Generator &g) {
        g.cancelled = true;
        kiln_generator_cancel(g.gen);
      }, "Stops the generation after its current step; safe from any thread.")
      .def_property_readonly("_active", [](const Generator &g) { return g.active; })
      .def_property_readonly("stats", &Generator::stats)
      .def_property_readonly("finish_reason", [](const Generator &g) { return g.finish; })
      .def_property_readonly("vocab_size", [](const Generator &g) { return kiln_generator_vocab_size(g.gen); })
      .def_property_readonly("max_context", [](const Generator &g) { return kiln_generator_max_context(g.gen); })
      .def_property_readonly("position", [](const Generator &g) { return kiln_generator_position(g.gen); })
      .def_readonly("tokenizer", &Generator::tokenizer);

  m.def("_tensor_data", [](py::object capsule) -> py::object {
    if (!PyCapsule_IsValid(capsule.ptr(), kTensorCapsule))
      return py::none();
    auto *t = static_cast<kiln_tensor *>(PyCapsule_GetPointer(capsule.ptr(), kTensorCapsule));
    return py::int_(reinterpret_cast<uintptr_t>(kiln_tensor_data(t)));
  }, "The data address of the kiln_tensor an output array's base capsule owns (None for another object).");
  m.def("dtype_size", [](int code) { return kiln_dtype_size(kiln_dtype(code)); });
}
