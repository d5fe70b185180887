// A thin header-only C++17 RAII wrapper over the kiln C API; failures throw kiln::Error.
#ifndef KILN_KILN_HPP
#define KILN_KILN_HPP

#include "kiln/kiln.h"

#include <functional>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

// Thrown for every kiln_error; code() keeps the C error code so callers can tell a bad request
// (KILN_ERROR_INVALID_ARGUMENT) from an artifact this host cannot run (KILN_ERROR_INCOMPATIBLE).
class Error : public std::runtime_error {
public:
  Error(const std::string &message, kiln_error_code code) : std::runtime_error(message), code_(code) {}
  kiln_error_code code() const { return code_; }

private:
  kiln_error_code code_;
};

// Converts a C error into an exception, releasing the C object.
inline void check(kiln_error *error) {
  if (!error)
    return;
  Error e(kiln_error_message(error), kiln_error_get_code(error));
  kiln_error_free(error);
  throw e;
}

namespace detail {
struct TensorDeleter {
  void operator()(kiln_tensor *t) const { kiln_tensor_destroy(t); }
};
struct ModelDeleter {
  void operator()(kiln_model *m) const { kiln_model_destroy(m); }
};
struct SessionDeleter {
  void operator()(kiln_session *s) const { kiln_session_destroy(s); }
};
} // namespace detail

// Owns one kiln_tensor (which may itself view caller memory, see wrap()).
class Tensor {
public:
  Tensor() = default;
  explicit Tensor(kiln_tensor *owned) : t_(owned) {}

  // Owns a copy of `bytes` bytes at `data` (zero-filled if data is null).
  static Tensor copy(kiln_dtype dtype, const std::vector<int64_t> &shape, const void *data, size_t bytes) {
    kiln_tensor *t = nullptr;
    check(kiln_tensor_create_copy(dtype, shape.data(), shape.size(), data, bytes, &t));
    return Tensor(t);
  }
  template <typename T>
  static Tensor fromVector(kiln_dtype dtype, const std::vector<int64_t> &shape, const std::vector<T> &values) {
    return copy(dtype, shape, values.data(), values.size() * sizeof(T));
  }
  // A string tensor owning copies of `values`.
  static Tensor strings(const std::vector<int64_t> &shape, const std::vector<std::string> &values) {
    std::vector<const char *> data;
    std::vector<size_t> sizes;
    for (const std::string &v : values) {
      data.push_back(v.data());
      sizes.push_back(v.size());
    }
    kiln_tensor *t = nullptr;
    check(kiln_tensor_create_strings(shape.data(), shape.size(), data.data(), sizes.data(), &t));
    return Tensor(t);
  }
  // Views caller memory, which must outlive the returned Tensor.
  static Tensor wrap(kiln_dtype dtype, const std::vector<int64_t> &shape, void *data, size_t bytes) {
    kiln_tensor *t = nullptr;
    check(kiln_tensor_wrap(dtype, shape.data(), shape.size(), data, bytes, &t));
    return Tensor(t);
  }

  // Owns memory of the GPU a --target=cuda `model` runs on, holding a copy of `data` (zeros if
  // null): kiln_tensor_create_device.
  static Tensor onDevice(kiln_model *model, kiln_dtype dtype, const std::vector<int64_t> &shape, const void *data,
                         size_t bytes) {
    kiln_tensor *t = nullptr;
    check(kiln_tensor_create_device(model, dtype, shape.data(), shape.size(), data, bytes, &t));
    return Tensor(t);
  }
  // A host copy (of a device tensor too): kiln_tensor_copy_to_host.
  Tensor toHost() const {
    kiln_tensor *t = nullptr;
    check(kiln_tensor_copy_to_host(t_.get(), &t));
    return Tensor(t);
  }

  kiln_tensor *get() const { return t_.get(); }
  kiln_tensor *release() { return t_.release(); }
  explicit operator bool() const { return bool(t_); }

  kiln_dtype dtype() const { return kiln_tensor_dtype(t_.get()); }
  std::vector<int64_t> shape() const {
    const int64_t *s = kiln_tensor_shape(t_.get());
    return std::vector<int64_t>(s, s + kiln_tensor_rank(t_.get()));
  }
  int64_t elementCount() const { return kiln_tensor_element_count(t_.get()); }
  size_t byteSize() const { return kiln_tensor_byte_size(t_.get()); }
  template <typename T = void> T *data() { return static_cast<T *>(kiln_tensor_data(t_.get())); }
  template <typename T = void> const T *data() const {
    return static_cast<const T *>(kiln_tensor_data_const(t_.get()));
  }
  // Element `i` of a string tensor, borrowed from it.
  std::string_view string(int64_t i) const {
    size_t n = 0;
    const char *p = kiln_tensor_string(t_.get(), i, &n);
    return p ? std::string_view(p, n) : std::string_view();
  }

private:
  std::unique_ptr<kiln_tensor, detail::TensorDeleter> t_;
};

struct TensorInfo {
  std::string name;
  kiln_dtype dtype;
  std::vector<int64_t> dims;        // -1 for symbolic dims
  std::vector<std::string> symbols; // symbol of each symbolic dim, "" otherwise
};

// A loaded artifact; share it across threads, create one Session per thread.
class Model {
public:
  // `weightsDir`: where an artifact compiled with --weights=external finds its source weight
  // files ("" = the artifact's directory; kiln_model_options.weights_dir).
  static Model load(const std::string &path, int32_t threads = 0, const std::string &weightsDir = "") {
    kiln_model_options options;
    kiln_model_options_init(&options);
    options.num_threads = threads;
    options.weights_dir = weightsDir.empty() ? nullptr : weightsDir.c_str();
    kiln_model *m = nullptr;
    check(kiln_model_load(path.c_str(), &options, &m));
    return Model(m);
  }

  kiln_model *get() const { return m_.get(); }
  std::vector<TensorInfo> inputs() const { return infos(kiln_model_input_count(get()), kiln_model_input_info); }
  std::vector<TensorInfo> outputs() const { return infos(kiln_model_output_count(get()), kiln_model_output_info); }
  kiln_model_metadata metadata() const {
    kiln_model_metadata md;
    kiln_model_get_metadata(get(), &md);
    return md;
  }
  std::string kernelName(size_t i) const {
    const char *n = kiln_model_kernel_name(get(), i);
    return n ? n : "";
  }
  std::string kernelNodes(size_t i) const {
    const char *n = kiln_model_kernel_nodes(get(), i);
    return n ? n : "";
  }

private:
  explicit Model(kiln_model *m) : m_(m) {}
  using InfoFn = kiln_error *(*)(const kiln_model *, size_t, kiln_tensor_info *);
  std::vector<TensorInfo> infos(size_t count, InfoFn fn) const {
    std::vector<TensorInfo> out;
    for (size_t i = 0; i < count; ++i) {
      kiln_tensor_info info;
      check(fn(get(), i, &info));
      TensorInfo t{info.name, info.dtype, std::vector<int64_t>(info.dims, info.dims + info.rank), {}};
      for (size_t d = 0; d < info.rank; ++d)
        t.symbols.emplace_back(info.dim_symbols[d]);
      out.push_back(std::move(t));
    }
    return out;
  }
  std::unique_ptr<kiln_model, detail::ModelDeleter> m_;
};

// Per-thread run state; keeps its model alive.
class Session {
public:
  explicit Session(const Model &model) {
    kiln_session *s = nullptr;
    check(kiln_session_create(model.get(), &s));
    s_.reset(s);
    outputCount_ = kiln_model_output_count(model.get());
  }

  kiln_session *get() const { return s_.get(); }

  // Inputs in signature order; returns the outputs in signature order.
  std::vector<Tensor> run(const std::vector<const Tensor *> &inputs) {
    std::vector<const kiln_tensor *> in;
    for (const Tensor *t : inputs)
      in.push_back(t ? t->get() : nullptr);
    std::vector<kiln_tensor *> out(outputCount_, nullptr);
    check(kiln_session_run(s_.get(), in.data(), in.size(), out.data(), out.size()));
    std::vector<Tensor> result;
    result.reserve(out.size()); // so the loop below cannot throw and leak a tensor
    for (kiln_tensor *t : out)
      result.emplace_back(t);
    return result;
  }
  // Inputs in signature order; each output written into the caller's tensor (kiln_session_run_into).
  void runInto(const std::vector<const Tensor *> &inputs, const std::vector<Tensor *> &outputs) {
    std::vector<const kiln_tensor *> in;
    for (const Tensor *t : inputs)
      in.push_back(t ? t->get() : nullptr);
    std::vector<kiln_tensor *> out;
    for (Tensor *t : outputs)
      out.push_back(t ? t->get() : nullptr);
    check(kiln_session_run_into(s_.get(), in.data(), in.size(), out.data(), out.size()));
  }
  std::vector<Tensor> run(std::initializer_list<const Tensor *> inputs) {
    return run(std::vector<const Tensor *>(inputs));
  }
  std::vector<Tensor> run(const std::vector<Tensor> &inputs) {
    std::vector<const Tensor *> in;
    for (const Tensor &t : inputs)
      in.push_back(&t);
    return run(in);
  }

  // Per-kernel timing of later runs; profile() returns the last run's launches.
  void setProfiling(bool on) { kiln_session_set_profiling(s_.get(), on ? 1 : 0); }
  std::vector<kiln_profile_event> profile() const {
    size_t n = 0;
    const kiln_profile_event *e = kiln_session_profile(s_.get(), &n);
    return e ? std::vector<kiln_profile_event>(e, e + n) : std::vector<kiln_profile_event>{};
  }

private:
  std::unique_ptr<kiln_session, detail::SessionDeleter> s_;
  size_t outputCount_ = 0;
};

// The result of Generator::generate: new tokens and finish reason per sequence, and statistics.
struct Generation {
  std::vector<std::vector<int32_t>> tokens;
  std::vector<kiln_finish_reason> finish;
  kiln_generation_stats stats{};
};

// Decoding with a decoder artifact (see kiln.h "generation"). One per thread; keeps its model alive.
class Generator {
public:
  explicit Generator(const Model &model, int64_t maxContext = 0) {
    kiln_generator_options options;
    kiln_generator_options_init(&options);
    options.max_context = maxContext;
    kiln_generator *g = nullptr;
    check(kiln_generator_create(model.get(), &options, &g));
    g_.reset(g);
  }

  kiln_generator *get() const { return g_.get(); }
  int32_t vocabSize() const { return kiln_generator_vocab_size(get()); }
  int64_t maxContext() const { return kiln_generator_max_context(get()); }
  void cancel() { kiln_generator_cancel(get()); } // from any thread

  static kiln_sampling_params greedy() {
    kiln_sampling_params p;
    kiln_sampling_params_init(&p);
    return p;
  }

  // Step by step: start() runs the prompts, each next() returns one token per sequence.
  void start(const std::vector<std::vector<int32_t>> &prompts, const kiln_sampling_params &sampling = greedy()) {
    std::vector<const int32_t *> ptrs;
    std::vector<size_t> lens;
    for (const auto &p : prompts) {
      ptrs.push_back(p.data());
      lens.push_back(p.size());
    }
    batch_ = prompts.size();
    check(kiln_generator_start(get(), ptrs.data(), lens.data(), prompts.size(), &sampling));
  }
  std::vector<int32_t> next() {
    std::vector<int32_t> tokens(batch_);
    check(kiln_generator_next(get(), tokens.data()));
    return tokens;
  }
  // Teacher forcing: one decode step on these tokens (one per sequence) instead of the sampled ones.
  void feed(const std::vector<int32_t> &tokens) {
    if (tokens.size() != batch_)
      throw Error("feed: expected " + std::to_string(batch_) + " tokens, got " + std::to_string(tokens.size()),
                  KILN_ERROR_INVALID_ARGUMENT);
    check(kiln_generator_feed(get(), tokens.data()));
  }
  // The last position's logits, [batch][vocab], valid until the next call; NULL before start().
  const float *logits() const { return kiln_generator_logits(get()); }

  // The whole loop. onToken(sequence, token) is called for each new token; return false to stop.
  Generation generate(const std::vector<std::vector<int32_t>> &prompts, kiln_generate_options options,
                      std::function<bool(size_t, int32_t)> onToken = {}) {
    std::vector<const int32_t *> ptrs;
    std::vector<size_t> lens;
    for (const auto &p : prompts) {
      ptrs.push_back(p.data());
      lens.push_back(p.size());
    }
    if (onToken) {
      options.user_data = &onToken;
      options.on_token = [](void *user, size_t seq, int32_t token) {
        return (*static_cast<std::function<bool(size_t, int32_t)> *>(user))(seq, token) ? 0 : 1;
      };
    }
    kiln_generation *g = nullptr;
    check(kiln_generate(get(), ptrs.data(), lens.data(), prompts.size(), &options, &g));
    Generation out;
    for (size_t s = 0; s < kiln_generation_batch(g); ++s) {
      size_t n = 0;
      const int32_t *t = kiln_generation_tokens(g, s, &n);
      out.tokens.emplace_back(t, t + n);
      out.finish.push_back(kiln_generation_finish_reason(g, s));
    }
    kiln_generation_stats_get(g, &out.stats);
    kiln_generation_destroy(g);
    return out;
  }
  static kiln_generate_options defaultOptions() {
    kiln_generate_options o;
    kiln_generate_options_init(&o);
    return o;
  }

private:
  struct Deleter {
    void operator()(kiln_generator *g) const { kiln_generator_destroy(g); }
  };
  std::unique_ptr<kiln_generator, Deleter> g_;
  size_t batch_ = 0;
};

} // namespace kiln

#endif
