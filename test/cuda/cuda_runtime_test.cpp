// The runtime's CUDA device on machines without a GPU: a missing driver or device is a clear error,
// and with the mock driver (mock_cuda_driver.c) a --target=cuda artifact loads, picks its cubin or
// PTX, uploads weights and inputs, launches every kernel with its parameters and returns its
// outputs, leaking no device memory. The kernels' results need a GPU (bench/gpu-check.sh).
#include "kiln/kiln.h"
#include "mock_cublaslt.h"
#include "mock_cuda_driver.h"

#include <gtest/gtest.h>

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
  static void *lib = dlopen(KILN_MOCK_CUDA_DRIVER, RTLD_NOW | RTLD_LOCAL);
  using AllocFn = int (*)(unsigned long long *, size_t);
  using FreeFn = int (*)(unsigned long long);
  auto alloc = reinterpret_cast<AllocFn>(dlsym(lib, "cuMemAlloc_v2"));
  auto release = reinterpret_cast<FreeFn>(dlsym(lib, "cuMemFree_v2"));
  ASSERT_TRUE(alloc && release);
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
  EXPECT_NE(error.find("unspecified launch failure"), std::string::npos) << error;
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
  const int64_t upAfterPrefill = st->bytes_to_device;
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
  EXPECT_EQ(st->bad_launches, 0);
  // A second start reuses nothing stale: fresh, zeroed caches of the new batch.
  ASSERT_EQ(kiln_generator_start(g, prompts, lengths, 1, nullptr), nullptr);
  EXPECT_EQ(st->bytes_set, 2 * cacheBytes);
  kiln_generator_destroy(g);
  EXPECT_EQ(st->live_allocations, modelAllocations) << "the generator's caches or arena were not freed";
  kiln_model_destroy(m);
  EXPECT_EQ(st->live_allocations, 0) << "device memory leaked";
}

// Runs the matmul artifact (a[3, 5] x b[5, 4]); returns y, empty with `error` on failure.
std::vector<float> runMatmul(kiln_session *s, std::string *error) {
  std::vector<float> a(15), b(20);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = float(i % 7) - 3;
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = float(i % 5) * 0.5f;
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
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) {
        float want = 0;
        for (int l = 0; l < 5; ++l)
          want += a[size_t(i * 5 + l)] * b[size_t(l * 4 + j)];
        EXPECT_FLOAT_EQ(y[size_t(i * 4 + j)], want) << "y[" << i << "][" << j << "]";
      }
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

} // namespace

