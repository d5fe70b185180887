// Sessions: validate a request, call the generated entry, and turn its outputs into owned tensors.
#include "device_pool.h"
#include "error.h"
#include "host_gemm.h"
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
  // CUDA artifacts: the session's stream and its arena in device memory (same growth rule).
  void *cudaStream = nullptr;
  void *cudaWorkspace = nullptr;
  int64_t cudaWorkspaceBytes = 0;
  std::unique_ptr<kiln::runtime::DevicePool> cudaPool; // the requests' other device buffers
  void *blasWorkspace = nullptr; // cuBLASLt's scratch for this session's stream (made on first use)
  bool blasWorkspaceTried = false;
  std::vector<void *> cudaEvents; // the profiler's timing events, reused run after run
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
  kiln::runtime::CudaDevice *cuda = nullptr; // CUDA artifacts only
  std::string cudaError;                     // the first failed launch of this run
  // A profiled CUDA run: each launch between two events of session->cudaEvents (0 marks the start).
  struct GpuLaunch {
    int32_t kernel;
    int64_t threads;
    size_t begin, end; // indices into cudaEvents
  };
  std::vector<GpuLaunch> gpuLaunches;
  size_t eventsUsed = 0;
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

// The arena's size for a request of `bytes`: rounded up to 64 and grown by at least 1/8 over
// `current`, so slowly growing requests (a decoder's context) do not reallocate each step. 0 when
// the request is outside what any machine could hold.
int64_t workspaceGrowth(int64_t bytes, int64_t current) {
  const int64_t limit = int64_t(1) << 46;
  if (bytes <= 0 || bytes > limit)
    return 0;
  int64_t want = std::max(bytes, std::min(limit, current + current / 8));
  return (want + 63) / 64 * 64;
}

void *workspaceTrampoline(void *runtime, int64_t bytes) {
  auto *run = static_cast<RunState *>(runtime);
  kiln_session &s = *run->session;
  alignas(64) static char empty[64];
  if (bytes == 0)
    return empty; // every buffer of this run is empty
  if (bytes <= s.workspaceBytes)
    return s.workspace.get();
  // aligned_alloc wants a multiple of 64; workspaceGrowth rounds up.
  void *p = nullptr;
  if (int64_t want = workspaceGrowth(bytes, s.workspaceBytes); want > 0) {
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

void *cudaWorkspaceTrampoline(void *runtime, int64_t bytes) {
  auto *run = static_cast<RunState *>(runtime);
  kiln_session &s = *run->session;
  if (bytes <= s.cudaWorkspaceBytes && s.cudaWorkspace)
    return s.cudaWorkspace;
  // Called first thing in a run: no kernel of this session is using the old arena any more.
  const int64_t want = workspaceGrowth(std::max<int64_t>(bytes, 64), s.cudaWorkspaceBytes);
  run->cuda->deallocate(s.cudaWorkspace);
  s.cudaWorkspace = nullptr;
  s.cudaWorkspaceBytes = 0;
  void *p = want > 0 ? run->cuda->allocate(size_t(want)) : nullptr;
  if (p) {
    s.cudaWorkspace = p;
    s.cudaWorkspaceBytes = want;
  } else {
    run->workspaceFailed = bytes;
  }
  return p;
}

// The next timing event of a profiled CUDA run, recorded now on the session's stream; false when
// none can be made (the launch then goes untimed).
bool recordEvent(RunState *run, size_t *index) {
  std::vector<void *> &events = run->session->cudaEvents;
  std::string error;
  if (run->eventsUsed == events.size()) {
    void *e = run->cuda->createEvent(error);
    if (!e)
      return false;
    events.push_back(e);
  }
  if (!run->cuda->record(events[run->eventsUsed], run->session->cudaStream, error))
    return false;
  *index = run->eventsUsed++;
  return true;
}

void gpuLaunchTrampoline(void *runtime, int32_t kernelId, int64_t gx, int64_t gy, int64_t gz, int64_t bx, int64_t by,
                         int64_t bz, int32_t sharedBytes, void **params) {
  auto *run = static_cast<RunState *>(runtime);
  if (!run->cudaError.empty())
    return; // after a failed launch the rest would compute from garbage
  const int64_t grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  size_t begin = 0, end = 0;
  const bool timed = run->session->profiling && recordEvent(run, &begin);
  run->cuda->launch(run->session->cudaStream, kernelId, grid, block, sharedBytes, params, run->cudaError);
  if (timed && recordEvent(run, &end))
    run->gpuLaunches.push_back({kernelId, gx * gy * gz * bx * by * bz, begin, end});
}

void *deviceAllocTrampoline(void *runtime, int64_t bytes) {
  if (bytes < 0)
    return nullptr;
  return static_cast<RunState *>(runtime)->session->cudaPool->allocate(size_t(bytes));
}

void deviceFreeTrampoline(void *runtime, void *ptr) {
  static_cast<RunState *>(runtime)->session->cudaPool->release(ptr);
}

// The host code reads values the kernels wrote (data-dependent sizes): wait for the launches so
// far, then copy. A failure fails the run; the code goes on with zeros, the sizes of empty tensors.
void deviceReadTrampoline(void *runtime, void *host, const void *device, int64_t bytes) {
  auto *run = static_cast<RunState *>(runtime);
  if (run->cudaError.empty()) {
    std::string error;
    if (!run->cuda->synchronize(run->session->cudaStream, error) ||
        !run->cuda->download(host, device, size_t(bytes), error))
      run->cudaError = "reading sizes back from the GPU: " + error;
  }
  if (!run->cudaError.empty())
    std::memset(host, 0, size_t(bytes));
}

// What host code (ops on strings) wrote into its copy of a buffer goes back to the device.
void deviceWriteTrampoline(void *runtime, void *device, const void *host, int64_t bytes) {
  auto *run = static_cast<RunState *>(runtime);
  if (!run->cudaError.empty())
    return;
  std::string error;
  if (!run->cuda->synchronize(run->session->cudaStream, error) ||
      !run->cuda->upload(device, host, size_t(bytes), error))
    run->cudaError = "writing to the GPU: " + error;
}

// A matrix product of the generated code: cuBLASLt on the session's stream, or declined (nonzero)
// so that the code's own kernels compute it.
int32_t gemmTrampoline(void *runtime, const kiln_abi_gemm *product) {
  auto *run = static_cast<RunState *>(runtime);
  if (!run->cudaError.empty())
    return 0; // the run has failed: nothing more to compute
  kiln_session &s = *run->session;
  if (!s.blasWorkspaceTried) {
    s.blasWorkspaceTried = true; // without it cuBLASLt picks among the algorithms that need none
    s.blasWorkspace = run->cuda->allocate(kiln::runtime::CudaBlas::kWorkspaceBytes);
  }
  const uint64_t workspaceBytes = s.blasWorkspace ? kiln::runtime::CudaBlas::kWorkspaceBytes : 0;
  std::string error;
  switch (run->cuda->gemm(s.cudaStream, *product, s.blasWorkspace, workspaceBytes, error)) {
  case kiln::runtime::CudaBlas::Result::Done:
    return 0;
  case kiln::runtime::CudaBlas::Result::Declined:
    return 1;
  case kiln::runtime::CudaBlas::Result::Failed:
    run->cudaError = "matrix product on the GPU: " + error;
    return 0;
  }
  return 1;
}

// A CPU artifact's "device" is host memory: only code compiled with --target=cuda-emulated
// (the CUDA pipeline's kernels run on the CPU) copies between the two.
void hostCopyTrampoline(void *, void *to, const void *from, int64_t bytes) {
  if (bytes > 0)
    std::memcpy(to, from, size_t(bytes));
}

// The emulated CUDA code's matrix products, on the calling thread. KILN_HOST_GEMM=decline
// declines them all, so the code's own kernels (its fallback when cuBLASLt is missing) run.
int32_t hostGemmTrampoline(void *, const kiln_abi_gemm *product) {
  static const bool decline = [] {
    const char *v = std::getenv("KILN_HOST_GEMM");
    return v && std::strcmp(v, "decline") == 0;
  }();
  return decline ? 1 : kiln::runtime::hostGemm(*product);
}

void parallelForOnCudaTrampoline(void *runtime, int32_t kernelId, kiln_abi_kernel_fn, void *, int64_t, int64_t,
                                 int64_t) {
  auto *run = static_cast<RunState *>(runtime);
  if (run->cudaError.empty())
    run->cudaError = "generated code of a CUDA artifact called parallel_for (kernel " + std::to_string(kernelId) + ")";
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
  if (pos->device)
    return "input '" + meta.inputs[d.positionInput].name + "' must be in host memory (the runtime checks it)";
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

// The first failure of the run's string kernels, if any: they ran to the end of the entry
// without failing the generated code.
kiln_error *stringError(const RunState &state) {
  if (state.strings.outOfMemory)
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory making this request's strings");
  if (!state.strings.error.empty())
    return makeError(KILN_ERROR_INVALID_ARGUMENT, state.strings.error);
  return nullptr;
}

// The run's failed allocation, if any: the generated code returned at once, before writing (or
// after failing to allocate) its outputs, so nothing of the run is kept.
kiln_error *allocationError(const RunState &state, const char *what) {
  if (state.workspaceFailed >= 0)
    return makeError(KILN_ERROR_OUT_OF_MEMORY, std::string(what) + ": this request's intermediates need " +
                                                   std::to_string(state.workspaceFailed) + " bytes of scratch memory");
  if (state.allocationFailed >= 0)
    return makeError(KILN_ERROR_OUT_OF_MEMORY, std::string(what) + ": an output or a data-sized intermediate of " +
                                                   std::to_string(state.allocationFailed) +
                                                   " bytes could not be allocated (check the request's sizes)");
  return nullptr;
}

// Device buffers of one CUDA run (staged inputs, outputs the code allocated), freed however it ends.
struct DeviceBuffers {
  kiln::runtime::DevicePool &pool;
  std::vector<void *> buffers;
  ~DeviceBuffers() {
    for (void *p : buffers)
      pool.release(p);
  }
};

// A request on a --target=cuda artifact: inputs are copied to the GPU, the host program launches the
// kernels on the session's stream, and the outputs come back as host tensors the caller owns.
kiln_error *runOnCuda(kiln_session &s, const kiln_tensor *const *inputs, size_t inputCount, kiln_tensor **outputs) {
  kiln_model &m = *s.model;
  const auto &meta = m.view.meta;
  kiln::runtime::CudaDevice &cuda = *m.cuda;
  std::string error;
  if (!s.cudaStream && !(s.cudaStream = cuda.createStream(error)))
    return makeError(KILN_ERROR_INTERNAL, error);
  if (!s.cudaPool)
    s.cudaPool = std::make_unique<kiln::runtime::DevicePool>(cuda);
  DeviceBuffers staged{*s.cudaPool, {}};
  for (size_t i = 0; i < inputCount; ++i) {
    s.inputs[i].shape = const_cast<int64_t *>(inputs[i]->shape.data());
    if (inputs[i]->device) {
      s.inputs[i].data = inputs[i]->data; // the KV caches stay on the GPU between steps
      continue;
    }
    void *p = s.cudaPool->allocate(inputs[i]->bytes);
    if (!p)
      return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of GPU memory for input '" + meta.inputs[i].name + "' (" +
                                                     std::to_string(inputs[i]->bytes) + " bytes)");
    staged.buffers.push_back(p);
    if (!cuda.upload(p, inputs[i]->data, inputs[i]->bytes, error))
      return makeError(KILN_ERROR_INTERNAL, "input '" + meta.inputs[i].name + "': " + error);
    s.inputs[i].data = p;
  }
  for (size_t i = 0; i < s.outputs.size(); ++i) {
    std::fill(s.outputShapes[i].begin(), s.outputShapes[i].end(), -1);
    s.outputs[i] = kiln_abi_tensor{nullptr, nullptr, s.outputShapes[i].data()};
  }
  s.profile.clear();
  s.lastRunProfiled = false;
  RunState state{m.device.get(), &s, std::chrono::steady_clock::now()};
  state.cuda = &cuda;
  size_t runStart = 0;
  const bool profiled = s.profiling && recordEvent(&state, &runStart);
  kiln_abi_context ctx{&state,
                       parallelForOnCudaTrampoline,
                       cudaWorkspaceTrampoline,
                       allocationFailedTrampoline,
                       stringFromFloatTrampoline,
                       stringToFloatTrampoline,
                       stringChangeCaseTrampoline,
                       stringEqualTrampoline,
                       gpuLaunchTrampoline,
                       deviceAllocTrampoline,
                       deviceFreeTrampoline,
                       deviceReadTrampoline,
                       deviceWriteTrampoline,
                       gemmTrampoline};
  const int32_t rc = m.entry(&ctx, s.inputs.data(), s.outputs.data());
  if (kiln_error *e = allocationError(state, "out of GPU memory"))
    return e;
  // From here on the outputs the code allocated are ours to free.
  for (const auto &o : s.outputs)
    if (o.allocated && std::find(staged.buffers.begin(), staged.buffers.end(), o.allocated) == staged.buffers.end())
      staged.buffers.push_back(o.allocated);
  const bool finished = cuda.synchronize(s.cudaStream, error);
  if (!state.cudaError.empty())
    return makeError(KILN_ERROR_INTERNAL, state.cudaError);
  if (!finished)
    return makeError(KILN_ERROR_INTERNAL, error);
  if (rc != 0)
    return makeError(KILN_ERROR_INTERNAL, "generated code failed with status " + std::to_string(rc));
  if (profiled) {
    // The stream has finished: each launch's events give its time on the GPU. The compiler has no
    // cost estimates for GPU kernels yet (flops and bytes 0).
    for (const RunState::GpuLaunch &l : state.gpuLaunches)
      s.profile.push_back(kiln_profile_event{l.kernel, 1e3 * cuda.elapsedMs(s.cudaEvents[runStart], s.cudaEvents[l.begin]),
                                             1e3 * cuda.elapsedMs(s.cudaEvents[l.begin], s.cudaEvents[l.end]), l.threads,
                                             0, 0});
    s.lastRunProfiled = true;
  }
  if (kiln_error *e = stringError(state)) // ops on strings ran on the host
    return e;
  std::vector<size_t> bytes(s.outputs.size());
  for (size_t i = 0; i < s.outputs.size(); ++i) {
    std::string why = checkOutput(meta.outputs[i], s.outputs[i], &bytes[i]);
    if (!why.empty())
      return makeError(KILN_ERROR_INTERNAL, why);
  }
  std::vector<uint8_t> host;
  for (size_t i = 0; i < s.outputs.size(); ++i) {
    const kiln_abi_tensor &o = s.outputs[i];
    host.resize(bytes[i]);
    kiln_error *e = nullptr;
    const size_t rank = meta.outputs[i].dims.size();
    if (!cuda.download(host.data(), o.data, bytes[i], error))
      e = makeError(KILN_ERROR_INTERNAL, "output '" + meta.outputs[i].name + "': " + error);
    else if (meta.outputs[i].dtype == KILN_DTYPE_STRING)
      // The elements point at host bytes (the run's strings, the inputs, the code's literals).
      e = kiln::runtime::makeStringTensor(o.shape, rank, reinterpret_cast<const kiln_string *>(host.data()),
                                          bytes[i] / sizeof(kiln_string), &outputs[i]);
    else
      e = kiln_tensor_create_copy(kiln_dtype(meta.outputs[i].dtype), o.shape, rank, host.data(), bytes[i],
                                  &outputs[i]);
    if (e) {
      for (size_t j = 0; j < i; ++j) {
        kiln_tensor_destroy(outputs[j]);
        outputs[j] = nullptr;
      }
      return e;
    }
  }
  return nullptr;
}

kiln_error *run(kiln_session &s, const kiln_tensor *const *inputs, size_t inputCount, kiln_tensor **outputs) {
  kiln_model &m = *s.model;
  const auto &meta = m.view.meta;
  std::string why = kiln::runtime::validateInputs(meta.inputs, inputs, inputCount);
  if (why.empty())
    why = checkCachePosition(meta, inputs);
  if (!why.empty())
    return makeError(KILN_ERROR_INVALID_ARGUMENT, why);
  if (m.cuda)
    return runOnCuda(s, inputs, inputCount, outputs);
  for (size_t i = 0; i < inputCount; ++i)
    if (inputs[i]->device)
      return makeError(KILN_ERROR_INVALID_ARGUMENT, "input '" + meta.inputs[i].name +
                                                        "' is in GPU memory, but the model was compiled for the CPU");

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
                       stringEqualTrampoline,
                       nullptr,
                       nullptr,
                       nullptr,
                       hostCopyTrampoline,
                       hostCopyTrampoline,
                       hostGemmTrampoline};
  const int32_t rc = m.entry(&ctx, s.inputs.data(), s.outputs.data());
  if (kiln_error *e = allocationError(state, "out of memory"))
    return e;
  if (rc != 0) {
    freeAllocations(s.outputs);
    return makeError(KILN_ERROR_INTERNAL, "generated code failed with status " + std::to_string(rc));
  }
  if (kiln_error *e = stringError(state)) {
    freeAllocations(s.outputs);
    return e;
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
  if (kiln::runtime::CudaDevice *cuda = session->model->cuda.get()) {
    session->cudaPool.reset(); // its blocks go back to the device before the model can go
    for (void *e : session->cudaEvents)
      cuda->destroyEvent(e);
    cuda->deallocate(session->cudaWorkspace);
    cuda->deallocate(session->blasWorkspace);
    cuda->destroyStream(session->cudaStream);
  }
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
