// The runtime's CUDA device on machines without a GPU: a missing driver or device is a clear error,
// and with the mock driver (mock_cuda_driver.c) a --target=cuda artifact loads, picks its cubin or
// PTX, uploads weights and inputs, launches every kernel with its parameters and returns its
// outputs, leaking no device memory. The kernels' results need a GPU (bench/gpu-check.sh).
#include "cuda_device.h"
#include "kiln/kiln.h"
#include "mock_cublaslt.h"
#include "mock_cuda_driver.h"

#include <gtest/gtest.h>

#include <fstream>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <dlfcn.h>
#include <string>
#include <vector>

namespace {

using MockStats = kiln_mock_cuda_stats_t;

// The mock's counters. The test holds its own reference to the mock, so the runtime's dlopen gets
// the same instance and the counters outlive each model.
MockStats *mockStats() {
  static void *lib = dlopen(KILN_MOCK_CUDA_DRIVER, RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return nullptr;
  auto fn = reinterpret_cast<kiln_mock_cuda_stats_fn>(dlsym(lib, "kiln_mock_cuda_stats"));
  return fn ? fn() : nullptr;
}

// Graph tests run without KILN_CUDA_CHECK_POINTERS (ctest sets it for this binary; a debug mode
// makes every run eager), restored when the test ends.
struct NoPointerChecks {
  std::string saved;
  bool had = false;
  NoPointerChecks() {
    if (const char *v = std::getenv("KILN_CUDA_CHECK_POINTERS")) {
      had = true;
      saved = v;
    }
    unsetenv("KILN_CUDA_CHECK_POINTERS");
  }
  ~NoPointerChecks() {
    if (had)
      setenv("KILN_CUDA_CHECK_POINTERS", saved.c_str(), 1);
  }
};

// cuMemAlloc_v2 and cuMemFree_v2 of the mock driver, for device memory of the test's own.
struct MockDeviceMemory {
  using AllocFn = int (*)(unsigned long long *, size_t);
  using FreeFn = int (*)(unsigned long long);
  static void *library() { // one reference for the process, as mockStats holds
    static void *lib = dlopen(KILN_MOCK_CUDA_DRIVER, RTLD_NOW | RTLD_LOCAL);
    return lib;
  }
  AllocFn alloc = library() ? reinterpret_cast<AllocFn>(dlsym(library(), "cuMemAlloc_v2")) : nullptr;
  FreeFn release = library() ? reinterpret_cast<FreeFn>(dlsym(library(), "cuMemFree_v2")) : nullptr;
};

MockStats *resetMock() {
  MockStats *st = mockStats();
  if (st)
    *st = MockStats{};
  return st;
}

// Points the runtime at the mock driver, as an sm_90 device, with fresh counters; matrix products
// run as kiln's kernels (no cuBLASLt) unless a test says otherwise.
MockStats *useMock() {
  setenv("KILN_CUDA_DRIVER", KILN_MOCK_CUDA_DRIVER, 1);
  setenv("KILN_MOCK_CUDA_CC", "90", 1);
  setenv("KILN_CUBLASLT", "none", 1);
  return resetMock();
}

// The mock cuBLASLt's counters, reset (the runtime's dlopen shares this instance).
kiln_mock_cublaslt_stats_t *useMockBlas() {
  static void *lib = dlopen(KILN_MOCK_CUBLASLT, RTLD_NOW | RTLD_LOCAL);
  auto fn = lib ? reinterpret_cast<kiln_mock_cublaslt_stats_t *(*)()>(dlsym(lib, "kiln_mock_cublaslt_stats")) : nullptr;
  if (!fn)
    return nullptr;
  setenv("KILN_CUBLASLT", KILN_MOCK_CUBLASLT, 1);
  *fn() = kiln_mock_cublaslt_stats_t{};
  return fn();
}

// Loads `artifact` and opens a session on it.
bool openSession(const char *artifact, kiln_model **m, kiln_session **s) {
  if (kiln_error *e = kiln_model_load(artifact, nullptr, m)) {
    ADD_FAILURE() << kiln_error_message(e);
    kiln_error_free(e);
    return false;
  }
  EXPECT_EQ(kiln_session_create(*m, s), nullptr);
  return *s != nullptr;
}

std::string loadError(const char *artifact) {
  kiln_model *m = nullptr;
  kiln_error *e = kiln_model_load(artifact, nullptr, &m);
  if (!e) {
    kiln_model_destroy(m);
    return "";
  }
  std::string msg = kiln_error_message(e);
  EXPECT_EQ(kiln_error_get_code(e), KILN_ERROR_INCOMPATIBLE) << msg;
  kiln_error_free(e);
  return msg;
}

TEST(CudaRuntime, NoDriverIsAClearError) {
  setenv("KILN_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  std::string msg = loadError(KILN_CUDA_SOFTMAX_SM90);
  EXPECT_NE(msg.find("compiled for CUDA (sm_90): no CUDA driver"), std::string::npos) << msg;
}

TEST(CudaRuntime, NoDeviceIsAClearError) {
  setenv("KILN_CUDA_DRIVER", KILN_MOCK_CUDA_DRIVER, 1);
  setenv("KILN_MOCK_CUDA_DEVICES", "0", 1);
  std::string msg = loadError(KILN_CUDA_SOFTMAX_SM90);
  unsetenv("KILN_MOCK_CUDA_DEVICES");
  EXPECT_NE(msg.find("no CUDA device"), std::string::npos) << msg;
}

// Runs the softmax artifact (input x[3,4,5]) once; returns the output's shape.
std::vector<int64_t> runSoftmax(const char *artifact, std::string *error) {
  kiln_model *m = nullptr;
  if (kiln_error *e = kiln_model_load(artifact, nullptr, &m)) {
    *error = kiln_error_message(e);
    kiln_error_free(e);
    return {};
  }
  kiln_session *s = nullptr;
  EXPECT_EQ(kiln_session_create(m, &s), nullptr);
  std::vector<float> x(60, 1.0f);
  const int64_t shape[] = {3, 4, 5};
  kiln_tensor *in = nullptr, *out = nullptr;
  EXPECT_EQ(kiln_tensor_wrap(KILN_DTYPE_FLOAT32, shape, 3, x.data(), x.size() * 4, &in), nullptr);
  std::vector<int64_t> dims;
  if (kiln_error *e = kiln_session_run(s, &in, 1, &out, 1)) {
    *error = kiln_error_message(e);
    kiln_error_free(e);
  } else {
    const int64_t *d = kiln_tensor_shape(out);
    dims.assign(d, d + kiln_tensor_rank(out));
    kiln_tensor_destroy(out);
  }
  kiln_tensor_destroy(in);
  kiln_session_destroy(s);
  kiln_model_destroy(m);
  return dims;
}

TEST(CudaRuntime, MockDriverRunsTheHostProgram) {
  setenv("KILN_CUDA_DRIVER", KILN_MOCK_CUDA_DRIVER, 1);
  setenv("KILN_MOCK_CUDA_CC", "90", 1);
  MockStats *st = mockStats();
  ASSERT_NE(st, nullptr);
  kiln_model *m = nullptr;
  ASSERT_EQ(kiln_model_load(KILN_CUDA_SOFTMAX_SM90, nullptr, &m), nullptr);
  kiln_model_metadata md{};
  kiln_model_get_metadata(m, &md);
  const size_t kernels = md.kernel_count; // read before the model goes
  kiln_model_destroy(m);
  resetMock();
  std::string error;
  std::vector<int64_t> dims = runSoftmax(KILN_CUDA_SOFTMAX_SM90, &error);
  ASSERT_EQ(dims, (std::vector<int64_t>{3, 4, 5})) << error;
  // One launch per kernel of the table (softmax: max, exp-sum, normalize and their inits), each
  // with a function, parameters and a valid grid; the input went up, the output came back.
  EXPECT_EQ(st->launches, int64_t(kernels));
  EXPECT_GT(kernels, 0u);
  EXPECT_EQ(st->bad_launches, 0);
  EXPECT_GE(st->bytes_to_device, 60 * 4);
  EXPECT_EQ(st->bytes_to_host, 60 * 4);
  EXPECT_EQ(st->live_allocations, 0) << "device memory leaked";
  EXPECT_EQ(st->contexts, 0) << "primary context not released";
  EXPECT_EQ(st->bad_copies, 0) << "a copy outside the device allocations";
  EXPECT_EQ(st->bad_frees, 0) << "a free of something not allocated";
}

TEST(CudaRuntime, OlderArchitectureLoadsThePtx) {
  // An sm_80 artifact on an sm_90 device: its cubin cannot run there, the PTX is JIT-compiled.
  MockStats *st = useMock();
  ASSERT_NE(st, nullptr);
  st->module_is_cubin = -1;
  std::string error;
  EXPECT_EQ(runSoftmax(KILN_CUDA_SOFTMAX_SM80, &error), (std::vector<int64_t>{3, 4, 5})) << error;
  EXPECT_EQ(st->module_is_cubin, 0);
}

// Runs the NonZero/Compress model (x float32[4,3], keep bool[4]) on `s` once; returns each
// output's shape, or the run's error in `error`.
std::vector<std::vector<int64_t>> runNonZero(kiln_session *s, std::string *error) {
  std::vector<float> x(12, 1.0f);
  uint8_t keep[4] = {1, 0, 1, 1};
  const int64_t xShape[] = {4, 3}, keepShape[] = {4};
  kiln_tensor *in[2] = {nullptr, nullptr}, *out[3] = {nullptr, nullptr, nullptr};
  EXPECT_EQ(kiln_tensor_wrap(KILN_DTYPE_FLOAT32, xShape, 2, x.data(), x.size() * 4, &in[0]), nullptr);
  EXPECT_EQ(kiln_tensor_wrap(KILN_DTYPE_BOOL, keepShape, 1, keep, 4, &in[1]), nullptr);
  std::vector<std::vector<int64_t>> shapes;
  if (kiln_error *e = kiln_session_run(s, in, 2, out, 3)) {
    *error = kiln_error_message(e);
    kiln_error_free(e);
    for (kiln_tensor *t : out)
      EXPECT_EQ(t, nullptr) << "a failed run left an output";
  } else {
    for (kiln_tensor *t : out) {
      const int64_t *d = kiln_tensor_shape(t);
      shapes.emplace_back(d, d + kiln_tensor_rank(t));
      kiln_tensor_destroy(t);
    }
  }
  for (kiln_tensor *t : in)
    kiln_tensor_destroy(t);
  return shapes;
}

// Data-dependent sizes (NonZero, Compress): the host program reads what the kernels counted back
// from the GPU (the context's device_read) before it allocates the outputs.
TEST(CudaRuntime, MockDriverReadsSizesBack) {
  MockStats *st = useMock();
  ASSERT_NE(st, nullptr);
  kiln_model *m = nullptr;
  kiln_session *s = nullptr;
  ASSERT_TRUE(openSession(KILN_CUDA_NONZERO_SM90, &m, &s));
  std::string error;
  std::vector<std::vector<int64_t>> shapes = runNonZero(s, &error);
  // The mock runs no kernels: the counts read back are its zero-filled memory, so every
  // data-dependent dim is 0 and the outputs are empty (nothing to copy back for them).
  EXPECT_EQ(shapes, (std::vector<std::vector<int64_t>>{{2, 0}, {0, 3}, {0}})) << error;
  EXPECT_GT(st->copies_to_host, 0) << "no size was read back";
  EXPECT_EQ(st->bad_launches, 0);
  kiln_session_destroy(s);
  kiln_model_destroy(m);
  EXPECT_EQ(st->live_allocations, 0) << "device memory leaked";
}

// A profiled run on the GPU times each launch with CUDA events: one event per kernel of the table,
// in launch order, inside the run; the events go with the session.
TEST(CudaRuntime, ProfilingTimesEachLaunch) {
  MockStats *st = useMock();
  ASSERT_NE(st, nullptr);
  kiln_model *m = nullptr;
  kiln_session *s = nullptr;
  ASSERT_TRUE(openSession(KILN_CUDA_SOFTMAX_SM90, &m, &s));
  kiln_model_metadata md{};
  kiln_model_get_metadata(m, &md);
  std::vector<float> x(60, 1.0f);
  const int64_t shape[] = {3, 4, 5};
  kiln_tensor *in = nullptr, *out = nullptr;
  ASSERT_EQ(kiln_tensor_wrap(KILN_DTYPE_FLOAT32, shape, 3, x.data(), x.size() * 4, &in), nullptr);
  size_t count = 0;
  kiln_session_set_profiling(s, 1);
  for (int run = 0; run < 2; ++run) { // the second run reuses the first one's events
    ASSERT_EQ(kiln_session_run(s, &in, 1, &out, 1), nullptr);
    kiln_tensor_destroy(out);
    const kiln_profile_event *events = kiln_session_profile(s, &count);
    ASSERT_NE(events, nullptr);
    ASSERT_EQ(count, md.kernel_count);
    for (size_t i = 0; i < count; ++i) {
      EXPECT_EQ(events[i].kernel_id, int32_t(i)) << "softmax launches its kernels in table order";
      EXPECT_GE(events[i].duration_us, 0.0);
      EXPECT_GT(events[i].work_items, 0);
      if (i > 0)
        EXPECT_GE(events[i].start_us, events[i - 1].start_us + events[i - 1].duration_us);
    }
  }
  EXPECT_EQ(st->events, int64_t(2 * count + 1));
  kiln_session_set_profiling(s, 0);
  ASSERT_EQ(kiln_session_run(s, &in, 1, &out, 1), nullptr);
  kiln_tensor_destroy(out);
  EXPECT_EQ(kiln_session_profile(s, &count), nullptr) << "an unprofiled run has no profile";
  kiln_tensor_destroy(in);
  kiln_session_destroy(s);
  kiln_model_destroy(m);
  EXPECT_EQ(st->events, 0) << "timing events leaked";
}

// An input already in device memory (kiln_tensor_wrap_device) is read there, not copied up; a
// CPU model refuses it, naming the input.
TEST(CudaRuntime, DeviceInputsAreNotCopied) {
  MockStats *st = useMock();
  ASSERT_NE(st, nullptr);
  MockDeviceMemory mem;
  ASSERT_TRUE(mem.alloc && mem.release);
  auto alloc = mem.alloc;
  auto release = mem.release;
  unsigned long long x = 0;
  ASSERT_EQ(alloc(&x, 60 * 4), 0);
  const int64_t shape[] = {3, 4, 5};
  kiln_tensor *in = nullptr, *out = nullptr;
  ASSERT_EQ(kiln_tensor_wrap_device(KILN_DTYPE_FLOAT32, shape, 3, reinterpret_cast<void *>(x), 60 * 4, &in), nullptr);
  EXPECT_EQ(kiln_tensor_data(in), reinterpret_cast<void *>(x));

  kiln_model *m = nullptr;
  kiln_session *s = nullptr;
  ASSERT_TRUE(openSession(KILN_CUDA_SOFTMAX_SM90, &m, &s));
  const int64_t up = st->bytes_to_device;
  ASSERT_EQ(kiln_session_run(s, &in, 1, &out, 1), nullptr);
  EXPECT_EQ(st->bytes_to_device, up) << "the device input was copied";
  EXPECT_EQ(st->bytes_to_host, 60 * 4) << "the output did not come back";
  kiln_tensor_destroy(out);
  kiln_session_destroy(s);
  kiln_model_destroy(m);

  ASSERT_TRUE(openSession(KILN_CPU_SOFTMAX, &m, &s));
  kiln_error *e = kiln_session_run(s, &in, 1, &out, 1);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(kiln_error_get_code(e), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_error_message(e)).find("is in GPU memory, but the model was compiled for the CPU"),
            std::string::npos)
      << kiln_error_message(e);
  kiln_error_free(e);
  kiln_session_destroy(s);
  kiln_model_destroy(m);
  kiln_tensor_destroy(in);
  release(x);
  const int64_t strShape[] = {1};
  e = kiln_tensor_wrap_device(KILN_DTYPE_STRING, strShape, 1, reinterpret_cast<void *>(x), 16, &in);
  ASSERT_NE(e, nullptr);
  EXPECT_NE(std::string(kiln_error_message(e)).find("strings are host memory"), std::string::npos);
  kiln_error_free(e);
  EXPECT_EQ(in, nullptr);
}

// Buffers of a session's requests (staged inputs, outputs) are kept for the next requests: after
// the first, a request of the same shapes makes no cuMemAlloc, and nothing outlives the session.
TEST(CudaRuntime, SessionReusesItsDeviceBuffers) {
  MockStats *st = useMock();
  ASSERT_NE(st, nullptr);
  kiln_model *m = nullptr;
  kiln_session *s = nullptr;
  ASSERT_TRUE(openSession(KILN_CUDA_NONZERO_SM90, &m, &s));
  const int64_t modelAllocations = st->live_allocations;
  std::string error;
  ASSERT_EQ(runNonZero(s, &error).size(), 3u) << error;
  const int64_t afterFirst = st->allocations;
  for (int i = 0; i < 5; ++i)
    ASSERT_EQ(runNonZero(s, &error).size(), 3u) << error;
  EXPECT_EQ(st->allocations, afterFirst) << "requests after the first allocated device memory";
  kiln_session_destroy(s);
  EXPECT_EQ(st->live_allocations, modelAllocations) << "the session's buffers outlived it";
  kiln_model_destroy(m);
  EXPECT_EQ(st->live_allocations, 0);
}

// A kernel that fails before the sizes are read: the run fails with the driver's message and no
// outputs, the code goes on with zero sizes instead of reading garbage, and the session serves the
// next request.
TEST(CudaRuntime, FailedLaunchFailsTheRunOnly) {
  MockStats *st = useMock();
  ASSERT_NE(st, nullptr);
  kiln_model *m = nullptr;
  kiln_session *s = nullptr;
  ASSERT_TRUE(openSession(KILN_CUDA_NONZERO_SM90, &m, &s));
  setenv("KILN_MOCK_CUDA_FAIL_LAUNCH", "1", 1);
  std::string error;
  EXPECT_TRUE(runNonZero(s, &error).empty());
  EXPECT_NE(error.find("too many resources requested for launch (CUDA error 701)"), std::string::npos) << error;
  EXPECT_EQ(error.find("broken"), std::string::npos) << "701 leaves the context usable: " << error;
  EXPECT_EQ(st->launches, 1) << "launches went on after the failure";
  unsetenv("KILN_MOCK_CUDA_FAIL_LAUNCH");
  error.clear();
  EXPECT_EQ(runNonZero(s, &error).size(), 3u) << error;
  kiln_session_destroy(s);
  kiln_model_destroy(m);
  EXPECT_EQ(st->live_allocations, 0) << "device memory leaked";
}

// Decoding on CUDA: the generator keeps each KV cache in device memory, zeroed once per start and
// handed to every step as it is, so a step moves only its tokens, mask and position up and its
// logits down. (The mock runs no kernels: its logits are zeros, and greedy decoding picks id 0.)
TEST(CudaRuntime, DecodingKeepsTheCachesOnTheDevice) {
  MockStats *st = useMock();
  ASSERT_NE(st, nullptr);
  kiln_model *m = nullptr;
  ASSERT_EQ(kiln_model_load(KILN_CUDA_GPT2_SM90, nullptr, &m), nullptr);
  kiln_generator *g = nullptr;
  ASSERT_EQ(kiln_generator_create(m, nullptr, &g), nullptr);
  const int64_t modelAllocations = st->live_allocations;
  const int32_t prompt[] = {5, 17, 42};
  const int32_t *prompts[] = {prompt};
  const size_t lengths[] = {3};
  kiln_error *started = kiln_generator_start(g, prompts, lengths, 1, nullptr);
  ASSERT_EQ(started, nullptr) << kiln_error_message(started);
  const int64_t cacheBytes = st->bytes_set;
  EXPECT_GT(cacheBytes, 0) << "the caches were not cleared on the device";
  const int64_t upAfterPrefill = st->bytes_to_device, copiesAfterPrefill = st->copies_to_host;
  const int32_t vocab = kiln_generator_vocab_size(g);
  int64_t allocationsAfterFirstStep = 0;
  for (int step = 0; step < 8; ++step) {
    int32_t token = -1;
    ASSERT_EQ(kiln_generator_next(g, &token), nullptr) << "step " << step;
    EXPECT_EQ(token, 0);
    if (step == 1)
      allocationsAfterFirstStep = st->allocations;
  }
  // Buffers that grow with the context move to a larger size class now and then; the others
  // are reused, so most steps allocate nothing (without the pool, 77 allocations a step).
  EXPECT_LT(st->allocations - allocationsAfterFirstStep, 6) << "decode steps allocate device memory";
  // Seven decode steps (the first token came from the prefill's logits): each sends its id, the
  // mask and the position, never a cache.
  const int64_t upPerStep = (st->bytes_to_device - upAfterPrefill) / 7;
  EXPECT_GT(upPerStep, 0);
  EXPECT_LT(upPerStep, cacheBytes / 4) << "caches are copied up every step";
  EXPECT_GE(st->bytes_to_host, 8 * int64_t(vocab) * 4) << "logits did not come back";
  // One copy back per step, the logits: the scalars the host program needs (kiln.past_length,
  // kiln.logit_rows) are read from the inputs' host copies, not from the GPU after a wait (3
  // copies a step before that, 5 before kiln-resolve-reshape-shapes took loads for reads: each
  // extra one a synchronization in the middle of the step).
  EXPECT_EQ((st->copies_to_host - copiesAfterPrefill) / 7, 1) << "a decode step waits for the GPU mid-step";
  EXPECT_EQ(st->bad_launches, 0);
  // A second start reuses nothing stale: fresh, zeroed caches of the new batch.
  ASSERT_EQ(kiln_generator_start(g, prompts, lengths, 1, nullptr), nullptr);
  EXPECT_EQ(st->bytes_set, 2 * cacheBytes);
  kiln_generator_destroy(g);
  EXPECT_EQ(st->live_allocations, modelAllocations) << "the generator's caches or arena were not freed";
  kiln_model_destroy(m);
  EXPECT_EQ(st->live_allocations, 0) << "device memory leaked";
}

// The MatMul artifact's operands a[3, 5] and b[5, 4], and their product y[3, 4].
struct MatmulOperands {
  std::vector<float> a = std::vector<float>(15), b = std::vector<float>(20);
  MatmulOperands() {
    for (size_t i = 0; i < a.size(); ++i)
      a[i] = float(i % 7) - 3;
    for (size_t i = 0; i < b.size(); ++i)
      b[i] = float(i % 5) * 0.5f;
  }
  std::vector<float> product() const {
    std::vector<float> y(12);
    for (size_t i = 0; i < 3; ++i)
      for (size_t j = 0; j < 4; ++j)
        for (size_t l = 0; l < 5; ++l)
          y[i * 4 + j] += a[i * 5 + l] * b[l * 4 + j];
    return y;
  }
};

// Runs the matmul artifact (a[3, 5] x b[5, 4]); returns y, empty with `error` on failure.
std::vector<float> runMatmul(kiln_session *s, std::string *error) {
  MatmulOperands ops;
  std::vector<float> &a = ops.a, &b = ops.b;
  const int64_t as[] = {3, 5}, bs[] = {5, 4};
  kiln_tensor *in[2] = {nullptr, nullptr}, *out = nullptr;
  EXPECT_EQ(kiln_tensor_wrap(KILN_DTYPE_FLOAT32, as, 2, a.data(), a.size() * 4, &in[0]), nullptr);
  EXPECT_EQ(kiln_tensor_wrap(KILN_DTYPE_FLOAT32, bs, 2, b.data(), b.size() * 4, &in[1]), nullptr);
  std::vector<float> y;
  if (kiln_error *e = kiln_session_run(s, in, 2, &out, 1)) {
    *error = kiln_error_message(e);
    kiln_error_free(e);
  } else {
    const float *p = static_cast<const float *>(kiln_tensor_data(out));
    y.assign(p, p + 12);
    const std::vector<float> want = ops.product();
    for (size_t i = 0; i < 12; ++i)
      EXPECT_FLOAT_EQ(y[i], want[i]) << "y[" << i / 4 << "][" << i % 4 << "]";
    kiln_tensor_destroy(out);
  }
  kiln_tensor_destroy(in[0]);
  kiln_tensor_destroy(in[1]);
  return y;
}

// The mock driver, the mock cuBLASLt (counters reset) and a session of the MatMul artifact.
bool openMatmulOnMockBlas(MockStats **st, kiln_mock_cublaslt_stats_t **blas, kiln_model **m, kiln_session **s) {
  *st = useMock();
  *blas = useMockBlas();
  return *st && *blas && openSession(KILN_CUDA_MATMUL_SM90, m, s);
}

TEST(CudaRuntime, MatrixProductsGoToCuBlasLt) {
  MockStats *st = nullptr;
  kiln_mock_cublaslt_stats_t *blas = nullptr;
  kiln_model *m = nullptr;
  kiln_session *s = nullptr;
  ASSERT_TRUE(openMatmulOnMockBlas(&st, &blas, &m, &s));
  std::string error;
  for (int run = 0; run < 3; ++run)
    ASSERT_EQ(runMatmul(s, &error).size(), 12u) << error;
  // No kernel: the zero fill and the product are cuBLASLt's one call per run, with the session's
  // workspace; the heuristic ran once.
  EXPECT_EQ(st->launches, 0);
  EXPECT_EQ(blas->matmuls, 3);
  EXPECT_EQ(blas->heuristics, 1);
  EXPECT_EQ(blas->last_m, 4); // C^T: n x m
  EXPECT_EQ(blas->last_n, 3);
  EXPECT_EQ(blas->last_k, 5);
  EXPECT_EQ(blas->last_workspace_bytes, uint64_t(32) << 20);
  EXPECT_EQ(blas->live_descriptors, 0);
  kiln_session_destroy(s);
  kiln_model_destroy(m);
  EXPECT_EQ(st->live_allocations, 0) << "device memory leaked";
  EXPECT_EQ(blas->handles, 0) << "cuBLASLt handle not destroyed";
  setenv("KILN_CUBLASLT", "none", 1);
}

// kiln_session_run_into: the product written into a GPU buffer of the caller stays on the device
// (a copy there, nothing downloaded); into a host buffer it is downloaded into it directly; a
// destination of another shape fails after the run and is left as it was.
TEST(CudaRuntime, OutputsGoIntoTheCallersDeviceOrHostMemory) {
  MockStats *st = nullptr;
  kiln_mock_cublaslt_stats_t *blas = nullptr;
  kiln_model *m = nullptr;
  kiln_session *s = nullptr;
  ASSERT_TRUE(openMatmulOnMockBlas(&st, &blas, &m, &s));
  std::string error;
  const std::vector<float> want = runMatmul(s, &error); // through kiln_session_run
  ASSERT_EQ(want.size(), 12u) << error;
  MatmulOperands ops;
  std::vector<float> &a = ops.a, &b = ops.b;
  const int64_t as[] = {3, 5}, bs[] = {5, 4}, ys[] = {3, 4}, wrong[] = {4, 3};
  kiln_tensor *in[2] = {nullptr, nullptr};
  ASSERT_EQ(kiln_tensor_wrap(KILN_DTYPE_FLOAT32, as, 2, a.data(), a.size() * 4, &in[0]), nullptr);
  ASSERT_EQ(kiln_tensor_wrap(KILN_DTYPE_FLOAT32, bs, 2, b.data(), b.size() * 4, &in[1]), nullptr);

  MockDeviceMemory mem;
  ASSERT_TRUE(mem.alloc && mem.release);
  auto alloc = mem.alloc;
  auto release = mem.release;
  unsigned long long y = 0;
  ASSERT_EQ(alloc(&y, 12 * 4), 0);
  float *yHost = reinterpret_cast<float *>(uintptr_t(y)); // the mock's device memory is host memory
  std::fill(yHost, yHost + 12, -1.0f);
  kiln_tensor *dev = nullptr;
  ASSERT_EQ(kiln_tensor_wrap_device(KILN_DTYPE_FLOAT32, ys, 2, reinterpret_cast<void *>(y), 12 * 4, &dev), nullptr);
  const int64_t down = st->bytes_to_host, onDevice = st->bytes_on_device;
  ASSERT_EQ(kiln_session_run_into(s, in, 2, &dev, 1), nullptr);
  EXPECT_EQ(st->bytes_to_host, down) << "the output left the GPU";
  EXPECT_EQ(st->bytes_on_device, onDevice + 48);
  for (size_t i = 0; i < 12; ++i)
    EXPECT_FLOAT_EQ(yHost[i], want[i]) << i;

  std::vector<float> host(12, -1.0f);
  kiln_tensor *hostOut = nullptr;
  ASSERT_EQ(kiln_tensor_wrap(KILN_DTYPE_FLOAT32, ys, 2, host.data(), 12 * 4, &hostOut), nullptr);
  ASSERT_EQ(kiln_session_run_into(s, in, 2, &hostOut, 1), nullptr);
  EXPECT_EQ(st->bytes_to_host, down + 48);
  EXPECT_EQ(host, want);

  kiln_tensor *bad = nullptr;
  std::fill(yHost, yHost + 12, -1.0f);
  ASSERT_EQ(kiln_tensor_wrap_device(KILN_DTYPE_FLOAT32, wrong, 2, reinterpret_cast<void *>(y), 12 * 4, &bad), nullptr);
  kiln_error *e = kiln_session_run_into(s, in, 2, &bad, 1);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(kiln_error_get_code(e), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_error_message(e)).find("output 'y' is [3, 4]; the tensor given for it is [4, 3]"),
            std::string::npos)
      << kiln_error_message(e);
  kiln_error_free(e);
  EXPECT_EQ(yHost[0], -1.0f) << "a destination of the wrong shape was written";
  // The session goes on.
  ASSERT_EQ(kiln_session_run_into(s, in, 2, &dev, 1), nullptr);
  EXPECT_FLOAT_EQ(yHost[5], want[5]);
  for (kiln_tensor *t : {in[0], in[1], dev, hostOut, bad})
    kiln_tensor_destroy(t);
  release(y);
  kiln_session_destroy(s);
  kiln_model_destroy(m);
  EXPECT_EQ(st->live_allocations, 0) << "device memory leaked";
  setenv("KILN_CUBLASLT", "none", 1);
}

// Device tensors kiln makes (kiln_tensor_create_device) as inputs and run_into destinations: the
// second run is captured into a CUDA graph that reads the inputs where they are (their addresses in
// the signature), the later ones replay it, and nothing crosses between host and GPU; the outputs
// come back with kiln_tensor_copy_to_host. The tensors keep the model alive and free their memory.
TEST(CudaRuntime, DeviceTensorsKeepInputsAndOutputsOnTheGpuThroughGraphs) {
  NoPointerChecks noChecks; // they keep runs eager
  MockStats *st = nullptr;
  kiln_mock_cublaslt_stats_t *blas = nullptr;
  kiln_model *m = nullptr;
  kiln_session *s = nullptr;
  ASSERT_TRUE(openMatmulOnMockBlas(&st, &blas, &m, &s));
  MatmulOperands ops;
  const std::vector<float> &a = ops.a, &b = ops.b;
  const int64_t as[] = {3, 5}, bs[] = {5, 4}, ys[] = {3, 4};
  kiln_tensor *in[2] = {nullptr, nullptr}, *out = nullptr;
  ASSERT_EQ(kiln_tensor_create_device(m, KILN_DTYPE_FLOAT32, as, 2, a.data(), a.size() * 4, &in[0]), nullptr);
  ASSERT_EQ(kiln_tensor_create_device(m, KILN_DTYPE_FLOAT32, bs, 2, b.data(), b.size() * 4, &in[1]), nullptr);
  ASSERT_EQ(kiln_tensor_create_device(m, KILN_DTYPE_FLOAT32, ys, 2, nullptr, 12 * 4, &out), nullptr);
  const int64_t up = st->bytes_to_device, down = st->bytes_to_host;
  for (int run = 0; run < 4; ++run)
    ASSERT_EQ(kiln_session_run_into(s, in, 2, &out, 1), nullptr) << "run " << run;
  EXPECT_EQ(st->bytes_to_device, up) << "an input crossed to the GPU again";
  EXPECT_EQ(st->bytes_to_host, down) << "an output came back to the host";
  EXPECT_EQ(st->graphs_instantiated, 1);
  EXPECT_EQ(st->graph_launches, 3) << "runs 2 to 4 are the graph";
  EXPECT_EQ(blas->matmuls, 4); // the first run eager, three replays of the recorded product
  kiln_tensor *host = nullptr;
  ASSERT_EQ(kiln_tensor_copy_to_host(out, &host), nullptr);
  const float *y = static_cast<const float *>(kiln_tensor_data(host));
  const std::vector<float> want = ops.product();
  for (size_t i = 0; i < 12; ++i)
    EXPECT_FLOAT_EQ(y[i], want[i]) << "y[" << i / 4 << "][" << i % 4 << "]";
  kiln_tensor_destroy(host);
  // Another input buffer is another signature: captured anew, not replayed over the old one.
  kiln_tensor *other = nullptr;
  ASSERT_EQ(kiln_tensor_create_device(m, KILN_DTYPE_FLOAT32, as, 2, nullptr, a.size() * 4, &other), nullptr);
  kiln_tensor *in2[2] = {other, in[1]};
  for (int run = 0; run < 2; ++run)
    ASSERT_EQ(kiln_session_run_into(s, in2, 2, &out, 1), nullptr);
  EXPECT_EQ(st->graphs_instantiated, 2);
  ASSERT_EQ(kiln_tensor_copy_to_host(out, &host), nullptr);
  EXPECT_EQ(static_cast<const float *>(kiln_tensor_data(host))[7], 0.0f) << "zero lhs, zero product";
  kiln_tensor_destroy(host);
  // The tensors hold the model: destroyed first, it stays until they go.
  kiln_session_destroy(s);
  kiln_model_destroy(m);
  EXPECT_GT(st->live_allocations, 0);
  for (kiln_tensor *t : {in[0], in[1], out, other})
    kiln_tensor_destroy(t);
  EXPECT_EQ(st->live_allocations, 0) << "device memory leaked";
  // A tensor wrapping caller memory cannot be copied back (kiln does not know its device).
  const int64_t one[] = {1};
  float cell = 0;
  kiln_tensor *wrapped = nullptr;
  ASSERT_EQ(kiln_tensor_wrap_device(KILN_DTYPE_FLOAT32, one, 1, &cell, 4, &wrapped), nullptr);
  kiln_error *e = kiln_tensor_copy_to_host(wrapped, &host);
  ASSERT_NE(e, nullptr);
  EXPECT_NE(std::string(kiln_error_message(e)).find("whose device kiln does not know"), std::string::npos);
  EXPECT_EQ(host, nullptr);
  kiln_error_free(e);
  kiln_tensor_destroy(wrapped);
  setenv("KILN_CUBLASLT", "none", 1);
}

TEST(CudaRuntime, DeclinedProductsRunKilnsKernels) {
  MockStats *st = useMock(); // KILN_CUBLASLT=none
  ASSERT_NE(st, nullptr);
  kiln_model *m = nullptr;
  kiln_session *s = nullptr;
  ASSERT_TRUE(openSession(KILN_CUDA_MATMUL_SM90, &m, &s));
  kiln_model_metadata md{};
  kiln_model_get_metadata(m, &md);
  std::string error;
  std::vector<float> a(15), b(20);
  const int64_t as[] = {3, 5}, bs[] = {5, 4};
  kiln_tensor *in[2] = {nullptr, nullptr}, *out = nullptr;
  ASSERT_EQ(kiln_tensor_wrap(KILN_DTYPE_FLOAT32, as, 2, a.data(), a.size() * 4, &in[0]), nullptr);
  ASSERT_EQ(kiln_tensor_wrap(KILN_DTYPE_FLOAT32, bs, 2, b.data(), b.size() * 4, &in[1]), nullptr);
  ASSERT_EQ(kiln_session_run(s, in, 2, &out, 1), nullptr);
  // The fallback: the fill and the product as kiln's kernels (the mock runs none of them).
  EXPECT_EQ(st->launches, int64_t(md.kernel_count));
  EXPECT_EQ(md.kernel_count, 2u);
  kiln_tensor_destroy(out);
  // The same with the library present but without an algorithm for the product.
  kiln_mock_cublaslt_stats_t *blas = useMockBlas();
  ASSERT_NE(blas, nullptr);
  kiln_session_destroy(s);
  kiln_model_destroy(m);
  ASSERT_TRUE(openSession(KILN_CUDA_MATMUL_SM90, &m, &s));
  setenv("KILN_MOCK_CUBLASLT_NO_ALGO", "1", 1);
  resetMock();
  ASSERT_EQ(kiln_session_run(s, in, 2, &out, 1), nullptr);
  unsetenv("KILN_MOCK_CUBLASLT_NO_ALGO");
  EXPECT_EQ(st->launches, 2);
  EXPECT_EQ(blas->matmuls, 0);
  kiln_tensor_destroy(out);
  kiln_tensor_destroy(in[0]);
  kiln_tensor_destroy(in[1]);
  kiln_session_destroy(s);
  kiln_model_destroy(m);
  EXPECT_EQ(st->live_allocations, 0);
  setenv("KILN_CUBLASLT", "none", 1);
}

TEST(CudaRuntime, FailedProductFailsTheRunOnly) {
  MockStats *st = nullptr;
  kiln_mock_cublaslt_stats_t *blas = nullptr;
  kiln_model *m = nullptr;
  kiln_session *s = nullptr;
  ASSERT_TRUE(openMatmulOnMockBlas(&st, &blas, &m, &s));
  setenv("KILN_MOCK_CUBLASLT_FAIL", "1", 1);
  std::string error;
  EXPECT_TRUE(runMatmul(s, &error).empty());
  EXPECT_NE(error.find("matrix product on the GPU: cublasLtMatmul failed (cuBLAS status 13)"), std::string::npos)
      << error;
  EXPECT_EQ(st->launches, 0) << "the fallback ran after a failed product";
  unsetenv("KILN_MOCK_CUBLASLT_FAIL");
  error.clear();
  EXPECT_EQ(runMatmul(s, &error).size(), 12u) << error;
  kiln_session_destroy(s);
  kiln_model_destroy(m);
  EXPECT_EQ(st->live_allocations, 0);
  setenv("KILN_CUBLASLT", "none", 1);
}

// --- Pointer checks, faults and broken contexts -------------------------------------------------

using kiln::runtime::CudaDevice;

// A CUDA device on the mock with one kernel, main_kernel_3 (a [rows, cols] f32 memref and an i64
// scalar, as the artifact's parameter table says), without an artifact.
std::unique_ptr<CudaDevice> fakeDevice(std::string &error, const char *params = "m2:4 s8") {
  kiln::artifact::CudaInfo info;
  info.present = true;
  info.arch = "sm_90";
  info.ptx = ".version 8.0\n.target sm_90\n.visible .entry main_kernel_3(\n)\n{ ret; }\n";
  info.kernelParams = {params};
  std::vector<kiln::artifact::KernelInfo> kernels = {{"main_kernel_3", {"/conv1/Conv", "/relu/Relu"}}};
  return CudaDevice::create(info, kernels, error);
}

// A memref descriptor as the generated code passes it, and the launch's array of pointers to its
// fields (then the scalar).
struct Memref2d {
  void *allocated = nullptr, *aligned = nullptr;
  int64_t offset = 0, sizes[2] = {4, 16}, strides[2] = {16, 1};
  int64_t scalar = 7;
  void *params[8];
  void **launchParams() {
    void *p[8] = {&allocated, &aligned, &offset, &sizes[0], &sizes[1], &strides[0], &strides[1], &scalar};
    std::copy(p, p + 8, params);
    return params;
  }
};

bool launchOnce(CudaDevice &d, void *stream, Memref2d &m, std::string &error) {
  const int64_t grid[3] = {1, 1, 1}, block[3] = {64, 1, 1};
  return d.launch(stream, 0, grid, block, 0, m.launchParams(), error);
}

TEST(CudaPointerCheck, HostPointerArgumentIsRefusedBeforeTheLaunch) {
  MockStats *st = useMock();
  ASSERT_NE(st, nullptr);
  setenv("KILN_CUDA_CHECK_POINTERS", "1", 1);
  std::string error;
  std::unique_ptr<CudaDevice> d = fakeDevice(error);
  ASSERT_TRUE(d) << error;
  void *stream = nullptr;
  ASSERT_TRUE(d->createStream(&stream, error)) << error;
  void *buffer = d->allocate(64 * 4, 256);
  ASSERT_NE(buffer, nullptr);

  Memref2d m; // [4, 16] f32 filling the buffer exactly
  m.allocated = m.aligned = buffer;
  EXPECT_TRUE(launchOnce(*d, stream, m, error)) << error;
  EXPECT_EQ(st->launches, 1);

  static float hostConstant[64]; // what the host program wrongly handed over: a global of its own
  m.allocated = m.aligned = hostConstant;
  error.clear();
  EXPECT_FALSE(launchOnce(*d, stream, m, error));
  EXPECT_NE(error.find("kernel main_kernel_3 (ONNX nodes: /conv1/Conv, /relu/Relu) argument 0 (memref rank 2, "
                       "4-byte elements) points at 0x"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("which is not inside a device allocation (host memory?)"), std::string::npos) << error;
  EXPECT_EQ(st->launches, 1) << "the bad launch reached the driver";

  // One element past the end (offset 1), and a view whose last row runs over.
  m.allocated = m.aligned = buffer;
  m.offset = 1;
  EXPECT_FALSE(launchOnce(*d, stream, m, error));
  EXPECT_NE(error.find("past the end of its device allocation"), std::string::npos) << error;
  m.offset = 0;
  m.sizes[1] = 17;
  EXPECT_FALSE(launchOnce(*d, stream, m, error));
  EXPECT_NE(error.find("past the end of its device allocation"), std::string::npos) << error;
  // A broadcast (stride 0) and a transposed view inside the buffer are fine; so is an empty memref
  // anywhere, which addresses nothing.
  m.sizes[0] = 1000;
  m.sizes[1] = 64;
  m.strides[0] = 0;
  m.strides[1] = 1;
  EXPECT_TRUE(launchOnce(*d, stream, m, error)) << error;
  m.sizes[0] = 16;
  m.sizes[1] = 4;
  m.strides[0] = 1;
  m.strides[1] = 16;
  EXPECT_TRUE(launchOnce(*d, stream, m, error)) << error;
  m.allocated = m.aligned = hostConstant;
  m.sizes[0] = 0;
  EXPECT_TRUE(launchOnce(*d, stream, m, error)) << error;
  // The aligned pointer in device memory but the allocated one on the host.
  m.aligned = buffer;
  m.sizes[0] = 4;
  EXPECT_FALSE(launchOnce(*d, stream, m, error));
  EXPECT_NE(error.find("its allocated pointer 0x"), std::string::npos) << error;
  EXPECT_EQ(st->launches, 4);

  // Without the variable nothing is checked (the mock runs nothing, so the launch goes through).
  unsetenv("KILN_CUDA_CHECK_POINTERS");
  std::unique_ptr<CudaDevice> unchecked = fakeDevice(error);
  ASSERT_TRUE(unchecked) << error;
  m.allocated = m.aligned = hostConstant;
  EXPECT_TRUE(launchOnce(*unchecked, stream, m, error)) << error;
  unchecked.reset();
  setenv("KILN_CUDA_CHECK_POINTERS", "1", 1);

  d->deallocate(buffer);
  d->destroyStream(stream);
  d.reset();
  EXPECT_EQ(st->live_allocations, 0);
  EXPECT_EQ(st->contexts, 0);
}

TEST(CudaPointerCheck, ParameterTableParses) {
  std::vector<kiln::runtime::KernelParam> p;
  ASSERT_TRUE(kiln::runtime::parseKernelParams("m2:4 s8 m0:2 s4", p));
  ASSERT_EQ(p.size(), 4u);
  EXPECT_TRUE(p[0].memref);
  EXPECT_EQ(p[0].rank, 2);
  EXPECT_EQ(p[0].bytes, 4);
  EXPECT_FALSE(p[1].memref);
  EXPECT_EQ(p[1].bytes, 8);
  EXPECT_EQ(p[2].rank, 0);
  EXPECT_TRUE(kiln::runtime::parseKernelParams("", p));
  EXPECT_TRUE(p.empty());
  for (const char *bad : {"m2", "m2:", "x4", "s", "m2:4s8", "m:4", "s0"})
    EXPECT_FALSE(kiln::runtime::parseKernelParams(bad, p)) << bad;
}

TEST(CudaPointerCheck, GemmOperandsMustBeDeviceMemory) {
  MockStats *st = useMock();
  ASSERT_NE(st, nullptr);
  setenv("KILN_CUDA_CHECK_POINTERS", "1", 1);
  std::string error;
  std::unique_ptr<CudaDevice> d = fakeDevice(error);
  ASSERT_TRUE(d) << error;
  // C[3, 4] = A[3, 5] B[5, 4], row-major f32.
  void *a = d->allocate(15 * 4, 256), *b = d->allocate(20 * 4, 256), *c = d->allocate(12 * 4, 256);
  ASSERT_TRUE(a && b && c);
  kiln_abi_gemm g{};
  g.a = a;
  g.b = b;
  g.c = c;
  g.a_type = g.b_type = g.c_type = 1;
  g.m = 3;
  g.n = 4;
  g.k = 5;
  g.a_stride_m = 5;
  g.a_stride_k = 1;
  g.b_stride_k = 4;
  g.b_stride_n = 1;
  g.c_stride_m = 4;
  g.c_stride_n = 1;
  g.alpha = 1;
  EXPECT_TRUE(d->checkGemmPointers(g, nullptr, error)) << error;
  // The epilogue's C source and bias are checked too: a bias in host memory, a source that runs
  // past its allocation.
  static float hostBias[4];
  void *source = d->allocate(11 * 4, 256);
  ASSERT_TRUE(source);
  kiln_abi_epilogue e{nullptr, hostBias, 1, 1, 0};
  EXPECT_FALSE(d->checkGemmPointers(g, &e, error));
  EXPECT_NE(error.find("operand bias (4-byte elements)"), std::string::npos) << error;
  e.bias = c; // any device memory holding n floats
  EXPECT_TRUE(d->checkGemmPointers(g, &e, error)) << error;
  e.c_source = source; // 11 floats, C needs 12
  EXPECT_FALSE(d->checkGemmPointers(g, &e, error));
  EXPECT_NE(error.find("operand C source"), std::string::npos) << error;
  EXPECT_NE(error.find("past the end"), std::string::npos) << error;
  d->deallocate(source);
  static float hostB[20];
  g.b = hostB;
  EXPECT_FALSE(d->checkGemmPointers(g, nullptr, error));
  EXPECT_NE(error.find("matrix product (3 x 5 times 5 x 4) operand B (4-byte elements) points at 0x"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("not inside a device allocation (host memory?)"), std::string::npos) << error;
  g.b = b;
  g.batch_rank = 1; // two batches of C would run past its 12 elements
  g.batch[0] = 2;
  g.c_stride_batch[0] = 12;
  EXPECT_FALSE(d->checkGemmPointers(g, nullptr, error));
  EXPECT_NE(error.find("operand C"), std::string::npos) << error;
  EXPECT_NE(error.find("past the end"), std::string::npos) << error;

  // Through gemm(): refused before cuBLASLt sees it. Without the check the mock cuBLASLt itself
  // refuses an operand outside the mock driver's allocations.
  kiln_mock_cublaslt_stats_t *blas = useMockBlas();
  ASSERT_NE(blas, nullptr);
  g.batch_rank = 0;
  g.b = hostB;
  void *stream = nullptr;
  ASSERT_TRUE(d->createStream(&stream, error)) << error;
  EXPECT_EQ(d->gemm(stream, g, nullptr, nullptr, 0, error), kiln::runtime::Device::GemmResult::Failed);
  EXPECT_NE(error.find("operand B"), std::string::npos) << error;
  EXPECT_EQ(blas->matmuls, 0);
  EXPECT_EQ(blas->bad_operands, 0);
  d->destroyStream(stream);
  d.reset();
  unsetenv("KILN_CUDA_CHECK_POINTERS");
  d = fakeDevice(error);
  ASSERT_TRUE(d) << error;
  ASSERT_TRUE(d->createStream(&stream, error)) << error;
  EXPECT_EQ(d->gemm(stream, g, nullptr, nullptr, 0, error), kiln::runtime::Device::GemmResult::Failed);
  EXPECT_EQ(blas->bad_operands, 1) << error;
  g.b = b;
  EXPECT_EQ(d->gemm(stream, g, nullptr, nullptr, 0, error), kiln::runtime::Device::GemmResult::Done) << error;
  EXPECT_EQ(blas->matmuls, 1);
  // The mock cuBLASLt also refuses an epilogue's bias in host memory.
  kiln_abi_epilogue hostEpilogue{nullptr, hostBias, 1, 1, 0};
  EXPECT_EQ(d->gemm(stream, g, &hostEpilogue, nullptr, 0, error), kiln::runtime::Device::GemmResult::Failed);
  EXPECT_EQ(blas->bad_operands, 2) << error;
  setenv("KILN_CUDA_CHECK_POINTERS", "1", 1);
  for (void *p : {a, b, c})
    d->deallocate(p);
  d->destroyStream(stream);
  d.reset();
  EXPECT_EQ(st->live_allocations, 0);
  setenv("KILN_CUBLASLT", "none", 1);
}

// The strict mock: copies, clears and frees outside its live allocations are refused, as the driver
// refuses them, and cuMemGetAddressRange_v2 answers CUDA_ERROR_NOT_FOUND for host memory.
TEST(CudaPointerCheck, StrictMockDriver) {
  MockStats *st = useMock();
  ASSERT_NE(st, nullptr);
  std::string error;
  std::unique_ptr<CudaDevice> d = fakeDevice(error);
  ASSERT_TRUE(d) << error;
  char *buffer = static_cast<char *>(d->allocate(256, 256));
  ASSERT_NE(buffer, nullptr);
  char host[512] = {};
  EXPECT_TRUE(d->upload(buffer, host, 256, error)) << error;
  EXPECT_FALSE(d->upload(buffer + 1, host, 256, error));
  EXPECT_NE(error.find("CUDA error 1"), std::string::npos) << error;
  EXPECT_FALSE(d->download(host, host + 256, 16, error));
  EXPECT_FALSE(d->zero(buffer + 128, 129, error));
  EXPECT_EQ(st->bad_copies, 3);
  static void *lib = dlopen(KILN_MOCK_CUDA_DRIVER, RTLD_NOW | RTLD_LOCAL);
  using RangeFn = int (*)(unsigned long long *, size_t *, unsigned long long);
  using FreeFn = int (*)(unsigned long long);
  auto range = reinterpret_cast<RangeFn>(dlsym(lib, "cuMemGetAddressRange_v2"));
  auto release = reinterpret_cast<FreeFn>(dlsym(lib, "cuMemFree_v2"));
  ASSERT_TRUE(range && release);
  unsigned long long base = 0;
  size_t size = 0;
  EXPECT_EQ(range(&base, &size, reinterpret_cast<uintptr_t>(buffer + 100)), 0);
  EXPECT_EQ(base, reinterpret_cast<uintptr_t>(buffer));
  EXPECT_EQ(size, 256u);
  EXPECT_EQ(range(&base, &size, reinterpret_cast<uintptr_t>(host)), 500); // CUDA_ERROR_NOT_FOUND
  EXPECT_EQ(release(reinterpret_cast<uintptr_t>(host)), 1);
  EXPECT_EQ(release(reinterpret_cast<uintptr_t>(buffer + 8)), 1);
  EXPECT_EQ(st->bad_frees, 2);
  d->deallocate(buffer);
  d.reset();
  EXPECT_EQ(st->live_allocations, 0);
}

// A kernel that faults (the mock's sticky CUDA error 700, as a GPU's illegal address): allocations
// in the broken context fail with that error and the kernel it follows, never as out of memory.
// A sticky fault breaks the device for the rest of the process (in the runtime, as on an H200):
// the tests that make one run in a child process of their own, so the others still get a healthy
// device. The child's failures print as usual; its exit status says whether there were any.
void inOwnProcess(void (*body)()) {
  std::fflush(stdout);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    body();
    std::fflush(stdout);
    _exit(::testing::Test::HasFailure() ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the test's own process failed (see above)";
}

void AllocationInABrokenContextIsNotOutOfMemoryBody() {
  MockStats *st = useMock();
  ASSERT_NE(st, nullptr);
  std::string error;
  std::unique_ptr<CudaDevice> d = fakeDevice(error);
  ASSERT_TRUE(d) << error;
  const int64_t resets = st->resets; // an earlier test's fault may have been reset by this load
  void *stream = nullptr;
  ASSERT_TRUE(d->createStream(&stream, error)) << error;
  void *buffer = d->allocate(256, 256);
  ASSERT_NE(buffer, nullptr);
  Memref2d m;
  m.allocated = m.aligned = buffer;
  m.sizes[0] = 1;
  setenv("KILN_MOCK_CUDA_FAULT_LAUNCH", "1", 1);
  EXPECT_TRUE(launchOnce(*d, stream, m, error)) << "a launch is accepted; its fault shows later";
  unsetenv("KILN_MOCK_CUDA_FAULT_LAUNCH");
  EXPECT_EQ(d->allocate(32, 256), nullptr);
  const std::string why = d->allocationFailure();
  EXPECT_NE(why.find("cuMemAlloc of 32 bytes failed: an illegal memory access was encountered (CUDA error 700), "
                     "after kernel main_kernel_3 (ONNX nodes: /conv1/Conv, /relu/Relu), the last launched; set "
                     "KILN_CUDA_SYNC=1"),
            std::string::npos)
      << why;
  EXPECT_EQ(why.find("out of memory"), std::string::npos) << why;
  // From then on every call says the context is broken, naming the first fault.
  EXPECT_FALSE(d->synchronize(stream, error));
  EXPECT_NE(error.find("the CUDA context was broken by an earlier fault (cuMemAlloc of 32 bytes failed"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("restart it to use this GPU again"), std::string::npos) << error;
  // A second device (model) on the same GPU cannot load while this one holds the broken context.
  std::string second;
  EXPECT_FALSE(fakeDevice(second));
  EXPECT_NE(second.find("was broken by an earlier fault"), std::string::npos) << second;
  d->deallocate(buffer);
  d->destroyStream(stream);
  d.reset();
  EXPECT_EQ(st->contexts, 0);
  // The last user is gone: the device stays unusable in this process, and says so.
  std::string again;
  EXPECT_FALSE(fakeDevice(again));
  EXPECT_NE(again.find("restart it to use this GPU again"), std::string::npos) << again;
  EXPECT_EQ(st->resets, resets);
}

TEST(CudaFault, AllocationInABrokenContextIsNotOutOfMemory) { inOwnProcess(AllocationInABrokenContextIsNotOutOfMemoryBody); }

// Out of memory stays out of memory: nothing else is reported for it.
TEST(CudaFault, OutOfMemoryIsReportedAsSuch) {
  MockStats *st = useMock();
  ASSERT_NE(st, nullptr);
  std::string error;
  std::unique_ptr<CudaDevice> d = fakeDevice(error);
  ASSERT_TRUE(d) << error;
  EXPECT_EQ(d->allocate(size_t(1) << 62, 256), nullptr);
  EXPECT_EQ(d->allocationFailure(), "");
}

// KILN_CUDA_SYNC=1 synchronizes after each launch, so the faulting kernel itself is named.
void SyncModeNamesTheFaultingKernelBody() {
  MockStats *st = useMock();
  ASSERT_NE(st, nullptr);
  setenv("KILN_CUDA_SYNC", "1", 1);
  std::string error;
  std::unique_ptr<CudaDevice> d = fakeDevice(error);
  unsetenv("KILN_CUDA_SYNC");
  ASSERT_TRUE(d) << error;
  void *stream = nullptr;
  ASSERT_TRUE(d->createStream(&stream, error)) << error;
  void *buffer = d->allocate(256, 256);
  Memref2d m;
  m.allocated = m.aligned = buffer;
  m.sizes[0] = 1;
  EXPECT_TRUE(launchOnce(*d, stream, m, error)) << error;
  setenv("KILN_MOCK_CUDA_FAULT_LAUNCH", "2", 1);
  EXPECT_FALSE(launchOnce(*d, stream, m, error));
  unsetenv("KILN_MOCK_CUDA_FAULT_LAUNCH");
  EXPECT_EQ(error.rfind("kernel main_kernel_3 (ONNX nodes: /conv1/Conv, /relu/Relu) failed: an illegal memory access "
                        "was encountered (CUDA error 700)",
                        0),
            0u)
      << error;
  EXPECT_EQ(error.find("KILN_CUDA_SYNC=1 to"), std::string::npos) << "no hint needed in sync mode: " << error;
  d->deallocate(buffer);
  d->destroyStream(stream);
  d.reset();
}

TEST(CudaFault, SyncModeNamesTheFaultingKernel) { inOwnProcess(SyncModeNamesTheFaultingKernelBody); }

// Runs the softmax artifact on `s`; the run's error, "" when it succeeded. `code` gets its code.
std::string runSoftmaxOn(kiln_session *s, kiln_error_code *code = nullptr) {
  std::vector<float> x(60, 1.0f);
  const int64_t shape[] = {3, 4, 5};
  kiln_tensor *in = nullptr, *out = nullptr;
  EXPECT_EQ(kiln_tensor_wrap(KILN_DTYPE_FLOAT32, shape, 3, x.data(), x.size() * 4, &in), nullptr);
  std::string msg;
  if (kiln_error *e = kiln_session_run(s, &in, 1, &out, 1)) {
    msg = kiln_error_message(e);
    if (code)
      *code = kiln_error_get_code(e);
    kiln_error_free(e);
  } else {
    kiln_tensor_destroy(out);
  }
  kiln_tensor_destroy(in);
  return msg;
}

// A model whose kernel faults mid-run: that run fails with the CUDA error and the kernel it came
// after, every later run and session on the device fails at once saying the context is broken
// (never "out of memory") and that only a restart helps, and so do loads, even once every model
// is unloaded: on an H200 a sticky fault outlived unloading and a primary-context reset.
void StickyFaultBreaksTheDeviceForTheProcessBody() {
  MockStats *st = useMock();
  ASSERT_NE(st, nullptr);
  kiln_model *m = nullptr;
  kiln_session *s = nullptr;
  ASSERT_TRUE(openSession(KILN_CUDA_SOFTMAX_SM90, &m, &s));
  const int64_t resets = st->resets; // an earlier test's fault may have been reset by this load
  kiln_model_metadata md{};
  kiln_model_get_metadata(m, &md);
  ASSERT_GE(md.kernel_count, 2u);
  const std::string first = kiln_model_kernel_name(m, 0);
  setenv("KILN_MOCK_CUDA_FAULT_LAUNCH", "1", 1);
  const std::string fault = runSoftmaxOn(s);
  unsetenv("KILN_MOCK_CUDA_FAULT_LAUNCH");
  EXPECT_NE(fault.find("an illegal memory access was encountered (CUDA error 700), after kernel " + first + " "),
            std::string::npos)
      << fault;
  EXPECT_NE(fault.find("the last launched; set KILN_CUDA_SYNC=1"), std::string::npos) << fault;
  EXPECT_EQ(st->launches, 1) << "launches went on in the broken context";

  kiln_error_code code = KILN_ERROR_INTERNAL;
  std::string again = runSoftmaxOn(s, &code);
  EXPECT_NE(again.find("the CUDA context was broken by an earlier fault ("), std::string::npos) << again;
  EXPECT_NE(again.find("CUDA error 700"), std::string::npos) << again;
  EXPECT_NE(again.find("restart it to use this GPU again"), std::string::npos) << again;
  EXPECT_EQ(again.find("out of GPU memory"), std::string::npos) << again;
  EXPECT_NE(code, KILN_ERROR_OUT_OF_MEMORY);
  // A fresh session must allocate its input: refused by the broken context, not "out of memory".
  kiln_session *s2 = nullptr;
  ASSERT_EQ(kiln_session_create(m, &s2), nullptr);
  code = KILN_ERROR_INTERNAL;
  again = runSoftmaxOn(s2, &code);
  EXPECT_NE(again.find("context was broken"), std::string::npos) << again;
  EXPECT_EQ(again.find("out of GPU memory"), std::string::npos) << again;
  EXPECT_NE(code, KILN_ERROR_OUT_OF_MEMORY);
  kiln_session_destroy(s2);
  // Another model cannot load on the broken device while this one is loaded.
  const std::string load = loadError(KILN_CUDA_SOFTMAX_SM90);
  EXPECT_NE(load.find("was broken by an earlier fault"), std::string::npos) << load;

  kiln_session_destroy(s);
  kiln_model_destroy(m);
  EXPECT_EQ(st->contexts, 0) << "the broken context was not released";
  // With nothing loaded, a load still fails, saying why, and resets nothing.
  const std::string reload = loadError(KILN_CUDA_SOFTMAX_SM90);
  EXPECT_NE(reload.find("was broken by an earlier fault"), std::string::npos) << reload;
  EXPECT_NE(reload.find("restart it to use this GPU again"), std::string::npos) << reload;
  EXPECT_EQ(st->resets, resets);
  EXPECT_EQ(st->contexts, 0);
}

TEST(CudaFault, StickyFaultBreaksTheDeviceForTheProcess) { inOwnProcess(StickyFaultBreaksTheDeviceForTheProcessBody); }

// --- CUDA graphs -------------------------------------------------------------------------------


// Runs a[m, k] x b[k, n] on `s` with values that depend on `seed`, and checks every element
// against the product computed here; false (with `error`) when the run failed.
bool runProduct(kiln_session *s, int64_t m, int64_t k, int64_t n, int seed, std::string *error) {
  std::vector<float> a(size_t(m * k)), b(size_t(k * n));
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = float((int(i) + seed) % 7) - 3;
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = float((int(i) * (seed + 1)) % 5) * 0.5f;
  const int64_t as[] = {m, k}, bs[] = {k, n};
  kiln_tensor *in[2] = {nullptr, nullptr}, *out = nullptr;
  EXPECT_EQ(kiln_tensor_wrap(KILN_DTYPE_FLOAT32, as, 2, a.data(), a.size() * 4, &in[0]), nullptr);
  EXPECT_EQ(kiln_tensor_wrap(KILN_DTYPE_FLOAT32, bs, 2, b.data(), b.size() * 4, &in[1]), nullptr);
  bool ok = false;
  if (kiln_error *e = kiln_session_run(s, in, 2, &out, 1)) {
    *error = kiln_error_message(e);
    kiln_error_free(e);
  } else {
    ok = true;
    EXPECT_EQ(kiln_tensor_rank(out), 2u);
    EXPECT_EQ(kiln_tensor_shape(out)[0], m);
    EXPECT_EQ(kiln_tensor_shape(out)[1], n);
    const float *y = static_cast<const float *>(kiln_tensor_data(out));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float want = 0;
        for (int64_t l = 0; l < k; ++l)
          want += a[size_t(i * k + l)] * b[size_t(l * n + j)];
        if (y[i * n + j] != want) {
          ADD_FAILURE() << "y[" << i << "][" << j << "] = " << y[i * n + j] << ", want " << want << " (seed " << seed
                        << ")";
          ok = false;
        }
      }
    kiln_tensor_destroy(out);
  }
  kiln_tensor_destroy(in[0]);
  kiln_tensor_destroy(in[1]);
  return ok;
}

// A model of kernels: the first run is eager, the second captured (its launches recorded, not
// run) and launched as one graph, and every later run is one cuGraphLaunch with no cuLaunchKernel
// and no allocation; the graph and its buffers go with the session.
TEST(CudaGraphs, LaterRunsAreOneGraphLaunch) {
  NoPointerChecks noChecks;
  MockStats *st = useMock();
  ASSERT_NE(st, nullptr);
  kiln_model *m = nullptr;
  kiln_session *s = nullptr;
  ASSERT_TRUE(openSession(KILN_CUDA_SOFTMAX_SM90, &m, &s));
  kiln_model_metadata md{};
  kiln_model_get_metadata(m, &md);
  const int64_t kernels = int64_t(md.kernel_count);
  ASSERT_GT(kernels, 0);
  const int64_t modelAllocations = st->live_allocations;
  EXPECT_EQ(runSoftmaxOn(s), "");
  EXPECT_EQ(st->launches, kernels);
  EXPECT_EQ(st->captures, 0) << "the first run of a signature is eager";
  EXPECT_EQ(runSoftmaxOn(s), "");
  EXPECT_EQ(st->captures, 1);
  EXPECT_EQ(st->captured_launches, kernels);
  EXPECT_EQ(st->graph_launches, 1);
  EXPECT_EQ(st->launches, kernels) << "the captured run launched kernels outside the graph";
  const int64_t allocations = st->allocations;
  const int64_t up = st->bytes_to_device, down = st->bytes_to_host;
  for (int run = 0; run < 3; ++run)
    EXPECT_EQ(runSoftmaxOn(s), "");
  EXPECT_EQ(st->launches, kernels) << "a replayed run called cuLaunchKernel";
  EXPECT_EQ(st->graph_launches, 4);
  EXPECT_EQ(st->replayed_launches, 4 * kernels);
  EXPECT_EQ(st->captures, 1);
  EXPECT_EQ(st->allocations, allocations) << "a replayed run allocated device memory";
  EXPECT_EQ(st->bytes_to_device - up, 3 * 60 * 4) << "a replay copies its input up, nothing else";
  EXPECT_EQ(st->bytes_to_host - down, 3 * 60 * 4) << "a replay copies its output down, nothing else";
  EXPECT_EQ(st->refused_in_capture, 0) << "the runtime copied or synchronized during a capture";
  EXPECT_EQ(st->bad_launches, 0);
  kiln_session_destroy(s);
  EXPECT_EQ(st->live_graphs, 0) << "the session's graph outlived it";
  EXPECT_EQ(st->live_allocations, modelAllocations) << "the graph's buffers outlived the session";
  kiln_model_destroy(m);
  EXPECT_EQ(st->live_allocations, 0);
  EXPECT_EQ(st->bad_frees, 0);
}

// Products through the mock cuBLASLt, which records its computation into the graph under capture
// and runs it on each replay: eager, captured and replayed runs with new inputs every time all give
// the exact product, so a replay reads the inputs uploaded for it and the outputs come from the
// graph's buffers.
TEST(CudaGraphs, ProductsAreRightEagerCapturedAndReplayed) {
  NoPointerChecks noChecks;
  MockStats *st = nullptr;
  kiln_mock_cublaslt_stats_t *blas = nullptr;
  kiln_model *m = nullptr;
  kiln_session *s = nullptr;
  ASSERT_TRUE(openMatmulOnMockBlas(&st, &blas, &m, &s));
  std::string error;
  for (int run = 0; run < 5; ++run)
    ASSERT_TRUE(runProduct(s, 3, 5, 4, run, &error)) << "run " << run << ": " << error;
  EXPECT_EQ(st->captures, 1);
  EXPECT_EQ(st->graph_launches, 4);
  EXPECT_EQ(blas->matmuls, 5) << "one product computed per run";
  EXPECT_EQ(blas->heuristics, 1);
  EXPECT_EQ(blas->live_descriptors, 0);
  EXPECT_EQ(st->launches, 0);
  kiln_session_destroy(s);
  kiln_model_destroy(m);
  EXPECT_EQ(st->live_graphs, 0);
  EXPECT_EQ(st->live_allocations, 0);
  setenv("KILN_CUBLASLT", "none", 1);
}

// Each shape signature gets its own graph (the second run of each is captured), a signature seen
// again replays its graph, and at most Queue::kMaxGraphs graphs are kept (least recently used go).
TEST(CudaGraphs, EachShapeSignatureHasItsGraph) {
  NoPointerChecks noChecks;
  MockStats *st = useMock();
  kiln_mock_cublaslt_stats_t *blas = useMockBlas();
  ASSERT_TRUE(st && blas);
  kiln_model *m = nullptr;
  kiln_session *s = nullptr;
  ASSERT_TRUE(openSession(KILN_CUDA_MATMUL_DYN_SM90, &m, &s));
  std::string error;
  int seed = 0;
  ASSERT_TRUE(runProduct(s, 3, 5, 4, seed++, &error)) << error;
  ASSERT_TRUE(runProduct(s, 3, 5, 4, seed++, &error)) << error;
  EXPECT_EQ(st->captures, 1);
  ASSERT_TRUE(runProduct(s, 2, 5, 4, seed++, &error)) << error; // new signature: eager
  EXPECT_EQ(st->captures, 1);
  ASSERT_TRUE(runProduct(s, 2, 5, 4, seed++, &error)) << error; // captured
  EXPECT_EQ(st->captures, 2);
  ASSERT_TRUE(runProduct(s, 3, 5, 4, seed++, &error)) << error; // the first graph again
  ASSERT_TRUE(runProduct(s, 2, 5, 4, seed++, &error)) << error;
  EXPECT_EQ(st->captures, 2);
  EXPECT_EQ(st->graph_launches, 4);
  // Six more signatures, each twice: never more than four graphs alive.
  for (int64_t rows = 4; rows < 10; ++rows)
    for (int twice = 0; twice < 2; ++twice) {
      ASSERT_TRUE(runProduct(s, rows, 3, 2, seed++, &error)) << error;
      EXPECT_LE(st->live_graphs, 4);
    }
  EXPECT_EQ(st->captures, 8);
  kiln_session_destroy(s);
  kiln_model_destroy(m);
  EXPECT_EQ(st->live_graphs, 0);
  EXPECT_EQ(st->live_allocations, 0);
  EXPECT_EQ(st->bad_frees, 0);
  setenv("KILN_CUBLASLT", "none", 1);
}

// A model whose host program reads sizes back from the device (NonZero, Compress) waits for the
// GPU mid-run: it cannot be a graph, and every run stays eager and right.
TEST(CudaGraphs, ModelsThatReadBackStayEager) {
  NoPointerChecks noChecks;
  MockStats *st = useMock();
  ASSERT_NE(st, nullptr);
  kiln_model *m = nullptr;
  kiln_session *s = nullptr;
  ASSERT_TRUE(openSession(KILN_CUDA_NONZERO_SM90, &m, &s));
  std::string error;
  ASSERT_EQ(runNonZero(s, &error).size(), 3u) << error;
  const int64_t perRun = st->launches;
  for (int run = 0; run < 3; ++run)
    EXPECT_EQ(runNonZero(s, &error), (std::vector<std::vector<int64_t>>{{2, 0}, {0, 3}, {0}})) << error;
  EXPECT_EQ(st->captures, 0);
  EXPECT_EQ(st->graph_launches, 0);
  // (How many launches a run makes depends on the sizes read back: garbage under the mock.)
  EXPECT_GT(st->launches, perRun) << "later runs launched no kernel";
  kiln_session_destroy(s);
  kiln_model_destroy(m);
  EXPECT_EQ(st->live_allocations, 0);
}

// KILN_CUDA_GRAPHS=0, KILN_CUDA_SYNC=1 (read at load) and profiling keep every run eager.
TEST(CudaGraphs, OffByEnvironmentDebugModesAndProfiling) {
  NoPointerChecks noChecks;
  MockStats *st = useMock();
  ASSERT_NE(st, nullptr);
  for (const char *env : {"KILN_CUDA_GRAPHS=0", "KILN_CUDA_SYNC=1", "KILN_CUDA_CHECK_POINTERS=addresses", "profile"}) {
    const std::string e = env;
    const size_t eq = e.find('=');
    if (eq != std::string::npos)
      setenv(e.substr(0, eq).c_str(), e.substr(eq + 1).c_str(), 1);
    kiln_model *m = nullptr;
    kiln_session *s = nullptr;
    ASSERT_TRUE(openSession(KILN_CUDA_SOFTMAX_SM90, &m, &s));
    if (eq != std::string::npos)
      unsetenv(e.substr(0, eq).c_str());
    kiln_session_set_profiling(s, e == "profile");
    kiln_model_metadata md{};
    kiln_model_get_metadata(m, &md);
    resetMock();
    for (int run = 0; run < 3; ++run)
      EXPECT_EQ(runSoftmaxOn(s), "") << env;
    EXPECT_EQ(st->captures, 0) << env;
    EXPECT_EQ(st->launches, 3 * int64_t(md.kernel_count)) << env;
    kiln_session_destroy(s);
    kiln_model_destroy(m);
  }
  EXPECT_EQ(st->live_allocations, 0);
}

// A capture the driver invalidates is discarded: that request runs eagerly (right), and the
// signature is never captured again; nothing leaks.
TEST(CudaGraphs, FailedCaptureRunsEagerly) {
  NoPointerChecks noChecks;
  MockStats *st = nullptr;
  kiln_mock_cublaslt_stats_t *blas = nullptr;
  kiln_model *m = nullptr;
  kiln_session *s = nullptr;
  ASSERT_TRUE(openMatmulOnMockBlas(&st, &blas, &m, &s));
  std::string error;
  ASSERT_TRUE(runProduct(s, 3, 5, 4, 1, &error)) << error;
  setenv("KILN_MOCK_CUDA_INVALIDATE_CAPTURE", "1", 1);
  const bool second = runProduct(s, 3, 5, 4, 2, &error);
  unsetenv("KILN_MOCK_CUDA_INVALIDATE_CAPTURE");
  ASSERT_TRUE(second) << error;
  EXPECT_EQ(st->captures, 1);
  EXPECT_EQ(st->graph_launches, 0);
  EXPECT_EQ(st->live_graphs, 0) << "the invalidated capture's graph was kept";
  EXPECT_EQ(blas->matmuls, 2) << "the recorded product ran, or the eager redo did not";
  for (int run = 3; run < 5; ++run)
    ASSERT_TRUE(runProduct(s, 3, 5, 4, run, &error)) << error;
  EXPECT_EQ(st->captures, 1) << "a signature whose capture failed was captured again";
  EXPECT_EQ(blas->matmuls, 4);
  kiln_session_destroy(s);
  kiln_model_destroy(m);
  EXPECT_EQ(st->live_allocations, 0);
  EXPECT_EQ(st->bad_frees, 0);
  setenv("KILN_CUBLASLT", "none", 1);
}

// Decodes `steps` tokens after a three-token prompt with `artifact` (the mock computes nothing, so
// the tokens mean nothing: the launches are what is looked at); "" or what failed.
std::string decodeSteps(const char *artifact, int steps) {
  kiln_model *m = nullptr;
  if (kiln_error *e = kiln_model_load(artifact, nullptr, &m)) {
    std::string why = kiln_error_message(e);
    kiln_error_free(e);
    return why;
  }
  kiln_generator *g = nullptr;
  std::string why;
  kiln_error *e = kiln_generator_create(m, nullptr, &g);
  const int32_t prompt[] = {5, 17, 42};
  const int32_t *prompts[] = {prompt};
  const size_t lengths[] = {3};
  if (!e)
    e = kiln_generator_start(g, prompts, lengths, 1, nullptr);
  for (int step = 0; !e && step < steps; ++step) {
    int32_t token = -1;
    e = kiln_generator_next(g, &token);
    if (e)
      why = "step " + std::to_string(step) + ": ";
  }
  if (e) {
    why += kiln_error_message(e);
    kiln_error_free(e);
  }
  kiln_generator_destroy(g);
  kiln_model_destroy(m);
  return why;
}

// A decoder's steps as one graph (step_graph.h): after a capture, a step runs the host program
// without launching, sets the graph's kernels whose sizes changed (the attention reads one more key
// each step) and launches the graph once. Products through the mock cuBLASLt are recorded into the
// graph; their operands sit at the same addresses step after step (the step region), so they
// need no new capture.
TEST(CudaStepGraphs, DecodeStepsAreOneGraphLaunchEach) {
  NoPointerChecks noChecks;
  for (const bool blas : {false, true}) {
    SCOPED_TRACE(blas ? "products through the mock cuBLASLt" : "products as kiln's kernels");
    MockStats *st = useMock();
    ASSERT_NE(st, nullptr);
    if (blas)
      ASSERT_NE(useMockBlas(), nullptr);
    kiln_model *m = nullptr;
    ASSERT_EQ(kiln_model_load(KILN_CUDA_GPT2_SM90, nullptr, &m), nullptr);
    kiln_generator *g = nullptr;
    ASSERT_EQ(kiln_generator_create(m, nullptr, &g), nullptr);
    const int32_t prompt[] = {5, 17, 42};
    const int32_t *prompts[] = {prompt};
    const size_t lengths[] = {3};
    ASSERT_EQ(kiln_generator_start(g, prompts, lengths, 1, nullptr), nullptr);
    int32_t token = -1;
    for (int step = 0; step < 4; ++step) // eager, captured, then compared and launched
      ASSERT_EQ(kiln_generator_next(g, &token), nullptr) << "step " << step;
    const MockStats before = *st;
    const int steps = 24;
    for (int step = 0; step < steps; ++step)
      ASSERT_EQ(kiln_generator_next(g, &token), nullptr) << "step " << step;
    EXPECT_EQ(st->launches, before.launches) << "a decode step launched kernels outside its graph";
    EXPECT_EQ(st->graph_launches - before.graph_launches, steps);
    // Captured again only where a buffer moved to a larger size class or the attention's work
    // changed shape: a few times, not every step.
    EXPECT_LE(st->captures - before.captures, 4);
    EXPECT_GT(st->kernel_nodes_set - before.kernel_nodes_set, steps) << "no kernel was set to its step's sizes";
    EXPECT_EQ(st->copies_to_host - before.copies_to_host, steps) << "a step waited for the GPU mid-step";
    EXPECT_EQ(st->refused_in_capture, 0);
    EXPECT_EQ(st->bad_launches, 0);
    kiln_generator_destroy(g);
    kiln_model_destroy(m);
    EXPECT_EQ(st->live_graphs, 0);
    EXPECT_EQ(st->live_allocations, 0) << "device memory leaked";
    EXPECT_EQ(st->bad_frees, 0);
    setenv("KILN_CUBLASLT", "none", 1);
  }
}

// What a step graph runs is what the same steps run eagerly: the mock writes every kernel it runs
// (launched, or replayed from a graph, with the parameters its nodes hold then) with its grid,
// block and parameters (pointers as allocation size and offset), and the two decodes of the same
// prompt must give the same lines. A node left with an earlier step's sizes, or set from another
// launch, shows as a difference. The mock reads parameter sizes from PTX, so it poses as an sm_100
// device (the sm_90 artifacts then load their PTX). The int8/int4 builds: their products are kiln's
// reduction kernels, whose nodes are set each step like the rest.
TEST(CudaStepGraphs, ReplayedStepsRunWhatEagerStepsRun) {
  NoPointerChecks noChecks;
  void *lib = MockDeviceMemory::library();
  ASSERT_NE(lib, nullptr);
  auto setTrace = reinterpret_cast<kiln_mock_cuda_set_trace_fn>(dlsym(lib, "kiln_mock_cuda_set_trace"));
  ASSERT_NE(setTrace, nullptr);
  for (const char *artifact :
       {KILN_CUDA_GPT2_SM90, KILN_CUDA_LLAMA_SM90, KILN_CUDA_GPT2_INT8_SM90, KILN_CUDA_LLAMA_INT4_SM90}) {
    SCOPED_TRACE(artifact);
    const std::string eagerTrace = testing::TempDir() + "kiln_step_eager.trace";
    const std::string graphTrace = testing::TempDir() + "kiln_step_graph.trace";
    MockStats *st = useMock();
    ASSERT_NE(st, nullptr);
    setenv("KILN_MOCK_CUDA_CC", "100", 1);
    setenv("KILN_CUDA_GRAPHS", "0", 1);
    ASSERT_EQ(setTrace(eagerTrace.c_str()), 0);
    EXPECT_EQ(decodeSteps(artifact, 20), "");
    setTrace(nullptr);
    EXPECT_EQ(st->graph_launches, 0);
    unsetenv("KILN_CUDA_GRAPHS");
    const MockStats before = *st;
    ASSERT_EQ(setTrace(graphTrace.c_str()), 0);
    EXPECT_EQ(decodeSteps(artifact, 20), "");
    setTrace(nullptr);
    EXPECT_GE(st->graph_launches - before.graph_launches, 15) << "the steps did not run as graphs";
    EXPECT_GT(st->kernel_nodes_set - before.kernel_nodes_set, 0);
    auto lines = [](const std::string &path) {
      std::ifstream in(path);
      std::vector<std::string> out;
      for (std::string line; std::getline(in, line);)
        out.push_back(line);
      return out;
    };
    const std::vector<std::string> eager = lines(eagerTrace), graph = lines(graphTrace);
    ASSERT_GT(eager.size(), 200u) << "the trace holds too few kernels to mean anything";
    for (const std::string &line : eager)
      ASSERT_EQ(line.find(" ?"), std::string::npos) << "a kernel's parameters were not read: " << line;
    ASSERT_EQ(eager.size(), graph.size());
    for (size_t i = 0; i < eager.size(); ++i)
      ASSERT_EQ(eager[i], graph[i]) << "kernel " << i << " of the decode";
    setenv("KILN_MOCK_CUDA_CC", "90", 1);
  }
}

} // namespace
