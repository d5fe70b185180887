// Sessions: validate a request, call the generated entry, and turn its outputs into owned tensors.
#include "error.h"
#include "model.h"
#include "string_tensors.h"
#include "tensor.h"
#include "validate.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>

using kiln::runtime::makeError;

struct kiln_session {
  kiln_model *model = nullptr;
  std::atomic<bool> running{false};
  // Reused across runs so a request allocates only its outputs.
  std::vector<kiln_abi_tensor> inputs; // graph inputs, then the model's weights
  std::vector<kiln_abi_tensor> outputs;
  std::vector<std::vector<int64_t>> outputShapes;
  bool profiling = false;
  bool lastRunProfiled = false;
  std::vector<kiln_profile_event> profile; // the last run's launches
  // The memory plan's arena, kept across runs so a steady stream of requests
  // allocates (and page-faults) it once; grows to the largest run's need.
  struct FreeDeleter {
    void operator()(void *p) const { std::free(p); }
  };
  std::unique_ptr<void, FreeDeleter> workspace;
  int64_t workspaceBytes = 0;
};

namespace {

// What the generated code's context points at during one run.
struct RunState {
  kiln::runtime::Device *device;
  kiln_session *session;
  std::chrono::steady_clock::time_point start;
  int64_t workspaceFailed = -1; // the bytes a failed workspace request asked for
  int64_t allocationFailed = -1; // the bytes of a heap allocation the generated code could not make
  kiln::runtime::StringRun strings; // bytes of the strings this run makes, released after it
};

kiln_abi_string stringFromFloatTrampoline(void *runtime, double value, int32_t bits) {
  return kiln::runtime::stringFromFloat(static_cast<RunState *>(runtime)->strings, value, bits);
}
double stringToFloatTrampoline(void *runtime, const char *data, int64_t size, int32_t bits) {
  return kiln::runtime::stringToFloat(static_cast<RunState *>(runtime)->strings, data, size, bits);
}
kiln_abi_string stringChangeCaseTrampoline(void *runtime, const char *data, int64_t size, int32_t upper) {
  return kiln::runtime::stringChangeCase(static_cast<RunState *>(runtime)->strings, data, size, upper);
}
int32_t stringEqualTrampoline(void *, const char *a, int64_t aSize, const char *b, int64_t bSize, int32_t ignoreCase) {
  return kiln::runtime::stringEqual(a, aSize, b, bSize, ignoreCase);
}

void allocationFailedTrampoline(void *runtime, int64_t bytes) {
  static_cast<RunState *>(runtime)->allocationFailed = bytes;
}

void *workspaceTrampoline(void *runtime, int64_t bytes) {
  auto *run = static_cast<RunState *>(runtime);
  kiln_session &s = *run->session;
  alignas(64) static char empty[64];
  if (bytes == 0)
    return empty; // every buffer of this run is empty
  if (bytes <= s.workspaceBytes)
    return s.workspace.get();
  // Round up to 64 (aligned_alloc's contract) and grow by at least 1/8 so
  // slowly growing requests (a decoder's context) do not reallocate each step.
  const int64_t limit = int64_t(1) << 46;
  void *p = nullptr;
  if (bytes > 0 && bytes <= limit) {
    int64_t want = std::max(bytes, std::min(limit, s.workspaceBytes + s.workspaceBytes / 8));
    want = (want + 63) / 64 * 64;
    s.workspace.reset(); // release the old arena before taking a larger one
    s.workspaceBytes = 0;
    p = std::aligned_alloc(64, size_t(want));
    if (p) {
      s.workspace.reset(p);
      s.workspaceBytes = want;
    }
  }
  if (!p)
    run->workspaceFailed = bytes;
  return p;
}

// A launch the compiler estimates at a few microseconds of work runs on the calling thread:
// handing it to the pool costs about as much as the work (two threads were slower than one on
// small decoders). 0 means the compiler could not estimate; such launches go to the pool.
bool worthThreads(int64_t flops, int64_t bytes) {
  constexpr int64_t kSmallBytes = 64 << 10, kSmallFlops = 128 << 10;
  return bytes <= 0 || bytes > kSmallBytes || flops > kSmallFlops;
}

void launch(RunState *run, int32_t kernelId, kiln_abi_kernel_fn fn, void *captures, int64_t count, int64_t flops,
            int64_t bytes) {
  if (worthThreads(flops, bytes))
    run->device->parallelFor(kernelId, fn, captures, count);
  else if (count > 0)
    fn(captures, 0, count);
}

void parallelForTrampoline(void *runtime, int32_t kernelId, kiln_abi_kernel_fn fn, void *captures, int64_t count,
                           int64_t flops, int64_t bytes) {
  auto *run = static_cast<RunState *>(runtime);
  if (!run->session->profiling) {
    launch(run, kernelId, fn, captures, count, flops, bytes);
    return;
  }
  using us = std::chrono::duration<double, std::micro>;
  auto begin = std::chrono::steady_clock::now();
  launch(run, kernelId, fn, captures, count, flops, bytes);
  auto end = std::chrono::steady_clock::now();
  run->session->profile.push_back(
      kiln_profile_event{kernelId, us(begin - run->start).count(), us(end - begin).count(), count, flops, bytes});
}

// Clears the busy flag however run() returns.
struct RunningGuard {
  std::atomic<bool> &flag;
  ~RunningGuard() { flag.store(false, std::memory_order_release); }
};

// Frees each distinct allocation the generated code handed over.
void freeAllocations(const std::vector<kiln_abi_tensor> &outputs) {
  std::vector<void *> seen;
  for (const auto &o : outputs) {
    if (!o.allocated)
      continue;
    bool dup = false;
    for (void *p : seen)
      dup = dup || p == o.allocated;
    if (!dup) {
      seen.push_back(o.allocated);
      std::free(o.allocated);
    }
  }
}

// Output `i` as the generated code returned it, checked against the signature.
std::string checkOutput(const kiln::artifact::TensorSignature &sig, const kiln_abi_tensor &o, size_t *bytes) {
  const std::string where = "generated code returned output '" + sig.name + "'";
  for (size_t d = 0; d < sig.dims.size(); ++d) {
    if (o.shape[d] < 0)
      return where + " with dim " + std::to_string(d) + " = " + std::to_string(o.shape[d]);
    if (sig.dims[d].size >= 0 && o.shape[d] != sig.dims[d].size)
      return where + " with dim " + std::to_string(d) + " = " + std::to_string(o.shape[d]) + ", signature says " +
             std::to_string(sig.dims[d].size);
  }
  std::string error;
  if (!kiln::runtime::tensorByteSize(kiln_dtype(sig.dtype), o.shape, sig.dims.size(), bytes, &error))
    return where + ": " + error;
  if (*bytes > 0 && !o.data)
    return where + " without data";
  return {};
}

// A decoder's `kiln.past_length` must lie within every cache's capacity (the generated code
// writes the new entries from there on).
std::string checkCachePosition(const kiln::artifact::Metadata &meta, const kiln_tensor *const *inputs) {
  const auto &d = meta.decoder;
  if (!d.present)
    return {};
  const kiln_tensor *pos = inputs[d.positionInput];
  int64_t past = 0;
  std::memcpy(&past, pos->data, sizeof past);
  for (const auto &c : d.caches) {
    const int64_t capacity = inputs[c.input]->shape[c.axis];
    if (past < 0 || past > capacity)
      return "input '" + meta.inputs[d.positionInput].name + "' is " + std::to_string(past) +
             ", outside the capacity of cache '" + meta.inputs[c.input].name + "' (" + std::to_string(capacity) + ")";
  }
  return {};
}

kiln_error *run(kiln_session &s, const kiln_tensor *const *inputs, size_t inputCount, kiln_tensor **outputs) {
  kiln_model &m = *s.model;
  const auto &meta = m.view.meta;
  std::string why = kiln::runtime::validateInputs(meta.inputs, inputs, inputCount);
  if (why.empty())
    why = checkCachePosition(meta, inputs);
  if (!why.empty())
    return makeError(KILN_ERROR_INVALID_ARGUMENT, why);

  for (size_t i = 0; i < inputCount; ++i) {
    // The ABI's input tensors are not const, but generated code only reads them.
    s.inputs[i].data = const_cast<void *>(inputs[i]->data);
    s.inputs[i].shape = const_cast<int64_t *>(inputs[i]->shape.data());
  }
  for (size_t i = 0; i < s.outputs.size(); ++i) {
    // -1 marks dims the generated code forgot to fill; checkOutput catches them.
    std::fill(s.outputShapes[i].begin(), s.outputShapes[i].end(), -1);
    s.outputs[i] = kiln_abi_tensor{nullptr, nullptr, s.outputShapes[i].data()};
  }
  s.profile.clear();
  s.lastRunProfiled = s.profiling;
  RunState state{m.device.get(), &s, std::chrono::steady_clock::now()};
  kiln_abi_context ctx{&state,
                       parallelForTrampoline,
                       workspaceTrampoline,
                       allocationFailedTrampoline,
                       stringFromFloatTrampoline,
                       stringToFloatTrampoline,
                       stringChangeCaseTrampoline,
                       stringEqualTrampoline};
  const int32_t rc = m.entry(&ctx, s.inputs.data(), s.outputs.data());
  if (state.workspaceFailed >= 0)
    // The generated code returned before allocating or writing any output.
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory: this request's intermediates need " +
                                                   std::to_string(state.workspaceFailed) + " bytes of scratch memory");
  if (state.allocationFailed >= 0)
    // The generated code returned at once; its outputs were never written.
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory: an output or a data-sized intermediate of " +
                                                   std::to_string(state.allocationFailed) +
                                                   " bytes could not be allocated (check the request's sizes)");
  if (rc != 0) {
    freeAllocations(s.outputs);
    return makeError(KILN_ERROR_INTERNAL, "generated code failed with status " + std::to_string(rc));
  }
  // The string kernels ran to the end of the entry; their first failure fails the run.
  if (state.strings.outOfMemory) {
    freeAllocations(s.outputs);
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory making this request's strings");
  }
  if (!state.strings.error.empty()) {
    freeAllocations(s.outputs);
    return makeError(KILN_ERROR_INVALID_ARGUMENT, state.strings.error);
  }

  std::vector<size_t> bytes(s.outputs.size());
  for (size_t i = 0; i < s.outputs.size(); ++i) {
    why = checkOutput(meta.outputs[i], s.outputs[i], &bytes[i]);
    if (!why.empty()) {
      freeAllocations(s.outputs);
      return makeError(KILN_ERROR_INTERNAL, why);
    }
  }
  // Take ownership: one shared owner per distinct allocation.
  std::vector<void *> distinct;
  try {
    distinct.reserve(s.outputs.size());
  } catch (...) {
    freeAllocations(s.outputs);
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory taking outputs");
  }
  for (const auto &o : s.outputs)
    if (o.allocated && std::find(distinct.begin(), distinct.end(), o.allocated) == distinct.end())
      distinct.push_back(o.allocated);
  std::map<void *, std::shared_ptr<void>> owners;
  size_t owned = 0;
  try {
    for (; owned < distinct.size(); ++owned)
      owners.emplace(distinct[owned], std::shared_ptr<void>(distinct[owned], std::free));
  } catch (...) {
    // The failing shared_ptr/emplace has freed distinct[owned]; `owners` frees those before it.
    for (size_t i = owned + 1; i < distinct.size(); ++i)
      std::free(distinct[i]);
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory taking outputs");
  }
  for (size_t i = 0; i < s.outputs.size(); ++i) {
    const kiln_abi_tensor &o = s.outputs[i];
    const size_t rank = meta.outputs[i].dims.size();
    kiln_tensor *t = nullptr;
    kiln_error *e = nullptr;
    if (meta.outputs[i].dtype == KILN_DTYPE_STRING) {
      // The elements point into the run's string arena, the inputs or the code's literals: the
      // tensor gets its own copy of them and their bytes (the arena goes with `state`).
      e = kiln::runtime::makeStringTensor(o.shape, rank, static_cast<const kiln_string *>(bytes[i] ? o.data : nullptr),
                                          bytes[i] / sizeof(kiln_string), &t);
    } else if (o.allocated || bytes[i] == 0) {
      e = kiln_tensor_wrap(kiln_dtype(meta.outputs[i].dtype), o.shape, rank, bytes[i] ? o.data : nullptr, bytes[i], &t);
      if (!e && o.allocated)
        t->owner = owners[o.allocated];
    } else {
      // Not owned by the caller-to-be (e.g. points at a weight or an input): copy it out.
      e = kiln_tensor_create_copy(kiln_dtype(meta.outputs[i].dtype), o.shape, rank, o.data, bytes[i], &t);
    }
    if (e) {
      for (size_t j = 0; j < i; ++j) {
        kiln_tensor_destroy(outputs[j]);
        outputs[j] = nullptr;
      }
      return e; // `owners` releases the remaining allocations
    }
    outputs[i] = t;
  }
  return nullptr;
}

} // namespace

extern "C" {

kiln_error *kiln_session_create(kiln_model *model, kiln_session **out_session) {
  if (!out_session)
    return makeError(KILN_ERROR_INVALID_ARGUMENT, "kiln_session_create: out_session is NULL");
  *out_session = nullptr;
  if (!model)
    return makeError(KILN_ERROR_INVALID_ARGUMENT, "kiln_session_create: model is NULL");
  try {
    auto *s = new kiln_session;
    const auto &meta = model->view.meta;
    s->inputs.resize(meta.inputs.size());
    s->inputs.insert(s->inputs.end(), model->weightTensors.begin(), model->weightTensors.end());
    s->outputs.resize(meta.outputs.size());
    for (const auto &o : meta.outputs)
      s->outputShapes.emplace_back(std::max<size_t>(o.dims.size(), 1));
    kiln::runtime::retainModel(model);
    s->model = model;
    *out_session = s;
    return nullptr;
  } catch (...) {
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory creating session");
  }
}

void kiln_session_destroy(kiln_session *session) {
  if (!session)
    return;
  kiln::runtime::releaseModel(session->model);
  delete session;
}

kiln_error *kiln_session_run(kiln_session *session, const kiln_tensor *const *inputs, size_t input_count,
                             kiln_tensor **outputs, size_t output_count) {
  if (!session)
    return makeError(KILN_ERROR_INVALID_ARGUMENT, "kiln_session_run: session is NULL");
  const size_t expected = session->model->view.meta.outputs.size();
  if (output_count != expected)
    return makeError(KILN_ERROR_INVALID_ARGUMENT, "expected " + std::to_string(expected) + " output slots, got " +
                                                      std::to_string(output_count));
  if (expected > 0 && !outputs)
    return makeError(KILN_ERROR_INVALID_ARGUMENT, "kiln_session_run: outputs array is NULL");
  for (size_t i = 0; i < output_count; ++i)
    outputs[i] = nullptr;
  if (session->running.exchange(true, std::memory_order_acquire))
    return makeError(KILN_ERROR_BUSY, "session is already running a request on another thread; "
                                      "create one session per thread");
  RunningGuard guard{session->running};
  try {
    return run(*session, inputs, input_count, outputs);
  } catch (...) {
    for (size_t i = 0; i < output_count; ++i) {
      kiln_tensor_destroy(outputs[i]);
      outputs[i] = nullptr;
    }
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory running the model");
  }
}

} // extern "C"

void kiln_session_set_profiling(kiln_session *session, int enabled) {
  if (session)
    session->profiling = enabled != 0;
}

const kiln_profile_event *kiln_session_profile(const kiln_session *session, size_t *out_count) {
  if (out_count)
    *out_count = 0;
  if (!session || !session->lastRunProfiled)
    return nullptr;
  if (out_count)
    *out_count = session->profile.size();
  return session->profile.data();
}
